"""Where things sit in luxar's viewer (headless Chromium): the scene opens with the tissue clear of the
dimension panel and the control rail, the hover text covers neither the scale bar nor the legend, and the
darkest colour of a colormap stays readable on the black background."""

from __future__ import annotations

import numpy as np
import pytest

import cellspec_sc as cs
from cellspec_sc.display import relative_luminance
from luxar_scenes import PROJECT, RAIL, colours_at, pixels, ramp_object, viewer_page

pytestmark = pytest.mark.browser

PANEL = ".luxar-dimension-sliders__scroll"
BOX_OF_TEXT = """(text, whole = false) => {
  const shown = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const hits = [...document.querySelectorAll('*')].filter(e => e.children.length === 0 && shown(e)
      && e.textContent && e.textContent.trim().startsWith(text));
  const hit = hits[hits.length - 1]; if (!hit) return null;
  const e = whole ? hit.parentElement : hit;  // whole: the scale bar's line with its label
  const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom];
}"""


def transposed(n_images: int) -> cs.CellSpec:
    """The example with x and y swapped: images taller than wide, the case the panel used to cover."""
    x = cs.example(n_cells=1000 * n_images, n_images=n_images)
    cells, images = x.cells.copy(), x.images.copy()
    cells["x"], cells["y"] = x.cells["y"], x.cells["x"]
    images["width_px"], images["height_px"] = x.images["height_px"], x.images["width_px"]
    return x.replace(cells=cells, images=images)


def corners(x: cs.CellSpec, image: str) -> np.ndarray:
    row = x.images.set_index("image_id").loc[image]
    return np.array([[0.0, 0.0], [row["width_px"] * row["pixel_size"], row["height_px"] * row["pixel_size"]]])


@pytest.mark.parametrize("n_images", [1, 2])
def test_the_scene_opens_with_every_image_above_the_panel_and_right_of_the_rail(tmp_path, n_images):
    x = transposed(n_images)
    path = cs.to_luxar(x, tmp_path / "tall.luxar.zarr", layers=["cells", "marker:CD3e"])
    with viewer_page(path, tmp_path / "profile") as (page, errors):
        panel = page.locator(PANEL).bounding_box()
        screen = {image: np.array(page.evaluate(PROJECT, [f"/{image}", corners(x, image).tolist()]))
                  for image in x.images["image_id"]}
        size = page.viewport_size
    assert errors == []
    for image, ((left, top), (right, bottom)) in screen.items():
        assert bottom < panel["y"], (image, bottom, panel)  # the panel covers none of the tissue
        assert left > RAIL and right < size["width"] and top > 0, (image, left, right, top)
        assert bottom - top > 0.25 * size["height"], (image, top, bottom)  # and the tissue is not tiny


def test_hover_text_covers_neither_the_scale_bar_nor_the_legend(tmp_path):
    x = transposed(1)
    path = cs.to_luxar(x, tmp_path / "hover.luxar.zarr", layers=["cells", "marker:CD3e"])
    cell = x.cells.iloc[5]
    hover_text = f"{cell['cell_id']} · {cell['image_id']} · "
    with viewer_page(path, tmp_path / "profile") as (page, errors):
        scale = page.evaluate(f"() => ({BOX_OF_TEXT})('200 um', true)")
        legend = page.evaluate(BOX_OF_TEXT, "classification")
        before = pixels(page)
        (sx, sy), = page.evaluate(PROJECT, ["/img1", [[cell["x"], cell["y"]]]])
        page.mouse.move(sx - 3, sy)
        page.wait_for_timeout(300)
        page.mouse.move(sx, sy)
        page.wait_for_timeout(2500)
        hover = page.evaluate(BOX_OF_TEXT, hover_text)
        after = pixels(page)
    assert errors == []
    assert scale is not None and legend is not None and hover is not None, (scale, legend, hover)
    for name, box in (("scale bar", scale), ("legend", legend)):
        apart = hover[2] <= box[0] or box[2] <= hover[0] or hover[3] <= box[1] or box[3] <= hover[1]
        assert apart, (name, hover, box)
        left, top, right, bottom = (int(round(v)) for v in box)
        np.testing.assert_array_equal(after[top:bottom, left:right], before[top:bottom, left:right],
                                      err_msg=f"the hover text drew on the {name}")
    assert hover[1] < 0.2 * after.shape[0]  # near the top, under the title


@pytest.mark.parametrize("colormap", ["viridis", "magma"])
def test_the_lowest_values_stay_readable_on_the_black_background(tmp_path, colormap):
    """The colormap's dark end is lifted: a cell at the bottom of the window keeps 3:1 contrast with the black
    background (relative luminance >= 0.1), where viridis' own start (0.02) or magma's (0.0) all but vanish."""
    values = [0.0, 500.0, 1000.0]
    x = ramp_object(values)
    path = cs.to_luxar(x, tmp_path / "dark.luxar.zarr", layers=["marker:CD3e"], window=(0.0, 1000.0),
                       colormap=colormap)
    centres = x.cells.groupby(x.measurements[:, 0])[["x", "y"]].first().to_numpy()
    with viewer_page(path, tmp_path / "profile") as (page, errors):
        seen = colours_at(page, "/ramp", centres)
        background = pixels(page)[5, -5]
    assert errors == []
    assert relative_luminance(background) < 0.005  # the viewer's background is black
    assert relative_luminance(seen[0]) >= 0.09, seen[0]  # 3:1 against it (0.1, less a rendering step)
    assert np.all(np.diff(relative_luminance(seen)) > 0)  # still darkest to brightest along the window
