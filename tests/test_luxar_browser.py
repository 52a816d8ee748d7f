"""Compiled scenes served by ``luxar viewer`` and loaded in Debian's headless Chromium."""

from __future__ import annotations

import io
import re

import luxar
import numpy as np
import pytest
from browser import browser_page, screenshot_is_blank

import cellspec_sc as cs
from cellspec_sc.bridges.luxar_viewer import LuxarViewer, show_luxar

pytestmark = pytest.mark.browser

RAIL = 80  # the viewer's control rail on the left; compare pixels right of it
HINT = "localStorage.setItem('luxar.controlRail.hintDismissed', '1')"
READY = "() => window.__luxarDebug && window.__luxarDebug.getPerf().timeline.milestones.initUpdateDone"


def compiled_points(path) -> int:
    return sum(n["n_points"] for n in luxar.LuxarScene.load(path).nodes if n["type"] == "points")


def load_scene(path, profile):
    """Serve ``path`` with luxar's viewer, load it in Chromium; return (screenshot, errors, console lines)."""
    console: list[str] = []
    with LuxarViewer(path) as viewer, browser_page(profile, init_script=HINT) as (page, errors):
        page.on("console", lambda msg: console.append(msg.text))
        page.goto(viewer.url + "&debug&dpr=1&renderer=webgl&noOpfs")
        page.wait_for_function(READY, timeout=90_000)
        page.wait_for_timeout(1000)
        png = page.screenshot()
    return png, errors, console


def total_points_loaded(console: list[str]) -> int:
    found = [re.search(r"Total points loaded: ([\d,]+)", line) for line in console]
    counts = [int(m.group(1).replace(",", "")) for m in found if m]
    assert counts, "the viewer never reported 'Total points loaded'"
    return counts[-1]


def bright_mask(png: bytes) -> np.ndarray:
    from matplotlib import image as mpimg

    pixels = mpimg.imread(io.BytesIO(png), format="png")[:, RAIL:, :3]
    return pixels.max(axis=2) > 0.35


def test_scene_with_every_layer_kind_loads_without_errors(tmp_path):
    x = cs.example(n_cells=2000, adjacency=True, region_layers=("tissue",))
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr",
                       layers=["cells", "marker:CD3e", "category:region__tissue", "adjacency"])
    png, errors, console = load_scene(path, tmp_path / "profile")
    assert errors == []
    assert total_points_loaded(console) == compiled_points(path) == 3 * x.n_cells
    assert not screenshot_is_blank(png, crop_left=RAIL)


def test_slide_is_drawn_with_y_downward_and_not_mirrored(tmp_path):
    """Cells along the top edge (small y) and down the left edge (small x) of an image must show as a
    'Γ': a full-width bar at the top of the drawing and the vertical bar on its left."""
    x = cs.example(n_cells=600, n_images=1)
    rng = np.random.default_rng(1)
    top = np.column_stack([rng.uniform(0, 900, 300), rng.uniform(0, 40, 300)])
    left = np.column_stack([rng.uniform(0, 40, 300), rng.uniform(0, 700, 300)])
    xy = np.vstack([top, left])
    cells = x.cells.assign(x=xy[:, 0], y=xy[:, 1])
    path = cs.to_luxar(x.replace(cells=cells), tmp_path / "g.luxar.zarr")
    png, errors, _ = load_scene(path, tmp_path / "profile")
    assert errors == []
    mask = bright_mask(png)
    rows, cols = np.nonzero(mask)
    top_band = mask[rows.min():rows.min() + (rows.max() - rows.min()) // 10]
    bottom_band = mask[rows.max() - (rows.max() - rows.min()) // 10:rows.max() + 1]
    top_cols, bottom_cols = np.nonzero(top_band.any(axis=0))[0], np.nonzero(bottom_band.any(axis=0))[0]
    width = cols.max() - cols.min()
    assert top_cols.max() - top_cols.min() > 0.8 * width  # the horizontal bar is at the top: y grows downward
    assert bottom_cols.max() - bottom_cols.min() < 0.25 * width  # the bottom holds only the vertical bar ...
    assert bottom_cols.max() < cols.min() + 0.3 * width  # ... on the left: not mirrored


def test_notebook_helper_serves_an_iframe_and_stops(tmp_path):
    path = cs.to_luxar(cs.example(), tmp_path / "s.luxar.zarr")
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
