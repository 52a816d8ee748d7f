"""Compiled scenes served by ``luxar viewer`` and looked at in Debian's headless Chromium.

Colours are sampled from screenshots at the screen position of each cell,
projected through the viewer's own camera; legends, hover text and the
right-click menu are read from the page.
"""

from __future__ import annotations

import re

import luxar
import numpy as np
import pandas as pd
import pytest

import cellspec_sc as cs
from browser import browser_page, screenshot_is_blank
from cellspec_sc.bridges.luxar import show_luxar
from cellspec_sc.bridges.luxar._colour import colormap_rgb
from luxar_scenes import FEATURE, HINT, PROJECT, RAIL, cells_object, colours_at, pixels, ramp, ramp_object, viewer_page

pytestmark = pytest.mark.browser

SET_DIMENSION = """async ([index, value]) => {
  const m = window.__luxarDebug.sceneDimsManager; m.setDimensionValue(index, value); await m.waitForUpdate();
}"""
VISIBLE_TEXT = """() => [...document.querySelectorAll('div')]
  .filter(e => e.children.length === 0 || e.querySelector('b'))
  .filter(e => e.offsetParent !== null && getComputedStyle(e).opacity !== '0'
               && getComputedStyle(e).visibility !== 'hidden')
  .map(e => e.innerText).join('\\n')"""


def luminance(rgb: np.ndarray) -> np.ndarray:
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


def set_dimension(page, path, name: str, value: int) -> None:
    """Move the viewer's dimension ``name`` (as the slider would) and let the frame settle."""
    names = [d["name"] for d in luxar.LuxarScene.load(path).root_attrs["scene_dimensions"]["dimensions"]]
    page.evaluate(SET_DIMENSION, [names.index(name), value])
    page.wait_for_timeout(2000)


def test_a_value_ramp_shows_viridis_in_order(tmp_path):
    values = [0.0, 200.0, 400.0, 600.0, 800.0, 1000.0]
    x = ramp_object(values)
    path = cs.to_luxar(x, tmp_path / "ramp.luxar.zarr", layers=["marker:CD3e"], window=(0.0, 1000.0))
    centres = x.cells.groupby(x.measurements[:, 0])[["x", "y"]].first().to_numpy()
    with viewer_page(path, tmp_path / "profile") as (page, errors):
        seen = colours_at(page, "/ramp", centres)
    assert errors == []
    assert np.all(np.diff(luminance(seen)) > 0), seen  # strictly brighter from left to right
    want = colormap_rgb("viridis", np.array(values) / 1000.0)
    assert np.abs(seen[[0, -1]] - want[[0, -1]]).max() < 10 / 255, (seen, want)  # the colormap's ends
    assert np.abs(seen - want).max() < 12 / 255, (seen, want)


def test_two_images_with_different_ranges_share_one_window_and_each_has_a_waypoint(tmp_path):
    low, low_values = ramp([0.0, 150.0, 300.0], image="low")
    high, high_values = ramp([600.0, 800.0, 1000.0], image="high")
    x = cells_object({"low": (300.0, 300.0), "high": (300.0, 300.0)}, pd.concat([low, high]),
                     np.concatenate([low_values, high_values]))
    path = cs.to_luxar(x, tmp_path / "two.luxar.zarr", layers=["marker:CD3e"])
    lo, hi = np.percentile(x.measurements[:, 0], [1, 99])
    with viewer_page(path, tmp_path / "profile") as (page, errors):
        seen = {image: colours_at(page, f"/{image}", frame.groupby("x")[["x", "y"]].first().to_numpy())
                for image, frame in (("low", low), ("high", high))}
        # 'go to' high: the camera flies to that image and it fills most of the view
        set_dimension(page, path, "go to", 2)
        corners = np.array(page.evaluate(PROJECT, ["/high", [[0, 0], [300, 300]]]))
        size = page.viewport_size
    assert errors == []
    for image, v in (("low", [0.0, 150.0, 300.0]), ("high", [600.0, 800.0, 1000.0])):
        want = colormap_rgb("viridis", (np.array(v) - lo) / (hi - lo))
        assert np.abs(seen[image] - want).max() < 12 / 255, (image, seen[image], want)
    assert corners[:, 0].min() >= 0 and corners[:, 0].max() <= size["width"]
    assert corners[:, 1].min() >= 0 and corners[:, 1].max() <= size["height"]
    assert corners[1, 1] - corners[0, 1] > 0.5 * size["height"]  # in view and large
    assert abs(corners.mean(axis=0)[0] - size["width"] / 2) < 0.1 * size["width"]


def test_legend_follows_the_colour_layer_and_hover_and_copy_name_the_cell(tmp_path):
    values = [0.0, 250.0, 500.0, 750.0, 1000.0]
    x = ramp_object(values, classes=("T cell",))
    path = cs.to_luxar(x, tmp_path / "legend.luxar.zarr", layers=["cells", "marker:CD3e"],
                       link="https://images.example/{image_id}/{cell_id}")
    cell = x.cells.iloc[7]
    with viewer_page(path, tmp_path / "profile") as (page, errors):
        first = page.evaluate(VISIBLE_TEXT)
        set_dimension(page, path, "colour by", 1)
        second = page.evaluate(VISIBLE_TEXT)
        bar = page.locator(".colour-bar").first.bounding_box()
        shot = pixels(page)
        ends = [shot[int(bar["y"] + bar["height"] / 2), int(bar["x"] + dx)] for dx in (2, bar["width"] - 3)]
        (sx, sy), = page.evaluate(PROJECT, ["/ramp", [[cell["x"], cell["y"]]]])
        page.mouse.move(sx, sy)
        page.wait_for_timeout(2500)
        hover = page.evaluate("() => document.body.innerText")
        page.mouse.down(button="right")
        page.wait_for_timeout(150)
        page.mouse.up(button="right")
        page.wait_for_timeout(1500)
        menu = page.evaluate("() => document.body.innerText")
    assert errors == []
    assert "classification" in first and f"T cell ({x.n_cells})" in first and "CD3e" not in first
    assert f"CD3e ({FEATURE})" in second and "T cell (" not in second
    assert re.search(r"\b0\b", second) and "1,000" in second  # the colour bar's tick values, one number format
    assert "a.u." in second  # and its unit
    np.testing.assert_allclose(ends, colormap_rgb("viridis", np.array([0.0, 1.0])), atol=12 / 255)
    value = x.measurements[7, 0]
    assert f"{cell['cell_id']} · ramp · T cell · CD3e ({FEATURE}) = {value:.6g}" in hover
    assert f'Copy "{cell["cell_id"]}"' in menu, menu[-400:]
    assert "Open link" in menu


def test_slide_is_drawn_with_y_downward_and_not_mirrored(tmp_path):
    """Cells along the top edge (small y) and down the left edge (small x) of an image must show as a
    'Γ': a full-width bar at the top of the drawing and the vertical bar on its left."""
    rng = np.random.default_rng(1)
    top = np.column_stack([rng.uniform(0, 900, 300), rng.uniform(0, 40, 300)])
    left = np.column_stack([rng.uniform(0, 40, 300), rng.uniform(0, 700, 300)])
    xy = np.vstack([top, left])
    frame = pd.DataFrame({"cell_id": [str(i) for i in range(600)], "image_id": "g", "x": xy[:, 0], "y": xy[:, 1],
                          "area": 20.0, "classification": "Tumor"})
    x = cells_object({"g": (900.0, 700.0)}, frame)
    path = cs.to_luxar(x, tmp_path / "g.luxar.zarr")
    with viewer_page(path, tmp_path / "profile") as (page, errors):
        corners = np.array(page.evaluate(PROJECT, ["/g", [[0, 0], [900, 0], [0, 700]]]))
    assert errors == []
    origin, right, down = corners
    assert right[0] > origin[0] + 100 and abs(right[1] - origin[1]) < 2  # x grows to the right
    assert down[1] > origin[1] + 100 and abs(down[0] - origin[0]) < 2  # y grows downward, not mirrored


def test_scene_with_every_layer_kind_loads_without_errors(tmp_path):
    x = cs.example(n_cells=300, adjacency=True)
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", layers=["cells", "marker:CD3e", "adjacency"])
    with viewer_page(path, tmp_path / "profile") as (page, errors):
        shot = page.screenshot()
    assert errors == []
    assert not screenshot_is_blank(shot, crop_left=RAIL)
    assert sum(n["n_points"] for n in luxar.LuxarScene.load(path).nodes if n["type"] == "points") == 2 * x.n_cells


def test_notebook_helper_serves_an_iframe_and_stops(tmp_path):
    path = cs.to_luxar(ramp_object([1.0, 2.0]), tmp_path / "s.luxar.zarr")
    view = show_luxar(path, height=400)
    try:
        html = view._repr_html_()
        assert f'src="{view.url}"' in html and 'height="400"' in html
        with browser_page(tmp_path / "profile", init_script=HINT) as (page, errors):
            page.set_content(html)
            frame = page.frame_locator("iframe")
            frame.locator("canvas").first.wait_for(timeout=60_000)
    finally:
        view.stop()
    assert not view.running
    assert "stopped" in view._repr_html_()


def test_stacked_by_sample_the_viewer_shows_one_samples_images_at_a_time(tmp_path):
    """Images a1 and a2 (sample A) and b1 (sample B) stacked by sample: at sample A the viewer draws the cells of
    a1 and a2 and nothing where b1's cells are; at sample B the reverse."""
    columns = {"a1": 50.0, "a2": 250.0, "b1": 150.0}  # each image's cells in one column of its own
    frame = pd.DataFrame([{"cell_id": f"{image}-{r}", "image_id": image, "x": cx, "y": y,
                           "area": np.pi * 15.0 ** 2, "classification": "T cell"}
                          for image, cx in columns.items() for r, y in enumerate((30.0, 80.0, 270.0))])
    x = cells_object({image: (300.0, 300.0) for image in columns}, frame)
    sample_of = {"a1": "A", "a2": "A", "b1": "B"}
    x = x.replace(cells=x.cells.assign(sample_id=x.cells["image_id"].map(sample_of).astype("string")),
                  images=x.images.assign(sample_id=x.images["image_id"].map(sample_of).astype("string")))
    path = cs.to_luxar(x, tmp_path / "samples.luxar.zarr", layout="stack", stack_by="sample_id")
    # looked at in the top third only: the dimension panel covers the bottom of the view (y = 270 sets the extent)
    top = frame[frame["y"] < 100]
    cells = {image: top.loc[top["image_id"] == image, ["x", "y"]].to_numpy() for image in columns}
    empty = np.array([[100.0, 55.0], [200.0, 55.0]])  # between the columns: background
    seen = {}
    with viewer_page(path, tmp_path / "profile") as (page, errors):
        for k, sample in enumerate(("A", "B")):
            set_dimension(page, path, "sample", k)
            seen[sample] = {name: colours_at(page, f"/{sample}", xy)
                            for name, xy in [*cells.items(), ("empty", empty)]}
    assert errors == []
    for sample, colours in seen.items():
        background = colours["empty"].mean(axis=0)
        assert np.abs(colours["empty"] - background).max() < 3 / 255, colours["empty"]
        for image in columns:
            difference = np.abs(colours[image] - background).max(axis=1)
            if sample_of[image] == sample:
                assert np.all(difference > 0.1), (sample, image, colours[image], background)
            else:
                assert np.all(difference < 3 / 255), (sample, image, colours[image], background)
