"""The preview's Channels tab with images: thumbnails of every channel, a composite with the cells on top, a region
to zoom into, in save_png and save_html; pixels read back from the PNGs."""

from __future__ import annotations

import io

import matplotlib.image as mpimg
import numpy as np
import pytest

import cellspec_sc as cs
from cellspec_sc.errors import ImageError


@pytest.fixture(scope="module")
def imaged(tmp_path_factory):
    folder = tmp_path_factory.mktemp("images")
    return cs.example(n_cells=400, image_dir=folder), folder


def _pixels(png: bytes) -> np.ndarray:
    return mpimg.imread(io.BytesIO(png), format="png")[..., :3]


def _at(pixels: np.ndarray, box, x_um: float, y_um: float) -> np.ndarray:
    """The PNG pixel showing micrometre (x, y) of a composite covering ``box`` (the axes fill the figure)."""
    x0, y0, x1, y1 = box
    u = int((x_um - x0) / (x1 - x0) * pixels.shape[1])
    v = int((y_um - y0) / (y1 - y0) * pixels.shape[0])
    return pixels[v, u]


def _cd3(x, image_id):
    cells = x.cells[x.cells["image_id"] == image_id]
    rows = np.flatnonzero((x.cells["image_id"] == image_id).to_numpy())
    column = list(x.dictionary["feature_id"]).index("cell:CD3e:mean")
    return cells, np.asarray(x.measurements[rows, column])


def test_under_a_bright_cell_the_composite_is_brighter_than_under_a_dim_one(imaged):
    x, folder = imaged
    w = cs.preview(x, images={"img1": folder / "img1.ome.tiff"}, channels=["CD3e"])
    view = w.channel_images.view("img1", w.colour_by.value, w.feature)
    pixels = _pixels(w.image_pngs(cells=False)[1])
    cells, cd3 = _cd3(x, "img1")
    bright, dim = cells.iloc[int(np.argmax(cd3))], cells.iloc[int(np.argmin(cd3))]
    at_bright = _at(pixels, view.box_um, bright["x"], bright["y"])
    at_dim = _at(pixels, view.box_um, dim["x"], dim["y"])
    # CD3e is the first composite colour, cyan: green and blue follow the cell's level, red stays dark
    assert at_bright[1] > 0.8 and at_bright[2] > 0.8 and at_bright[0] < 0.1
    assert at_dim[1] < 0.2 and at_bright.sum() > at_dim.sum() + 1.0


def test_cells_are_drawn_as_rings_of_their_size_in_their_feature_colour(imaged):
    x, folder = imaged
    w = cs.preview(x, images={"img1": folder / "img1.ome.tiff"}, channels=["DAPI"], feature="cell:CD3e:mean")
    view = w.channel_images.view("img1", w.colour_by.value, w.feature)
    with_cells, without = (_pixels(p) for p in (w.image_pngs()[1], w.image_pngs(cells=False)[1]))
    changed = np.abs(with_cells - without).sum(axis=2) > 0.1
    cells, _ = _cd3(x, "img1")
    radius = np.sqrt(cells["area"].to_numpy() / np.pi)
    cell = cells.iloc[int(np.argmax(radius))]
    r = radius.max()
    ring = [_at(changed, view.box_um, cell["x"] + dx, cell["y"] + dy) or
            _at(changed, view.box_um, cell["x"] + dx * 0.97, cell["y"] + dy * 0.97)
            for dx, dy in ((r, 0), (-r, 0), (0, r), (0, -r))]
    assert all(ring)  # the ring passes through the disc's edge...
    assert not _at(changed, view.box_um, cell["x"], cell["y"])  # ...and leaves its centre showing the image


def test_a_region_zooms_into_those_micrometres_from_a_coarser_level_when_it_can(imaged):
    x, folder = imaged
    w = cs.preview(x, images={"img1": folder / "img1.ome.tiff"}, channels=["CD3e"], region=(40, 20, 100, 60))
    view = w.channel_images.view("img1", w.colour_by.value, w.feature)
    assert view.box_um == pytest.approx((40, 20, 100, 60), abs=0.5)
    pixels = _pixels(w.image_pngs(cells=False)[1])
    cells, cd3 = _cd3(x, "img1")
    inside = cells["x"].between(45, 95) & cells["y"].between(25, 55)
    values = [_at(pixels, view.box_um, c["x"], c["y"]).sum() for _, c in cells[inside].iterrows()]
    assert np.corrcoef(values, cd3[inside.to_numpy()])[0, 1] > 0.9


def test_save_png_and_save_html_include_the_image_panels(imaged, tmp_path):
    x, folder = imaged
    w = cs.preview(x, images={"img1": folder / "img1.ome.tiff"}, channels=["CD3e", "FOXP3"])
    w.save_png(tmp_path / "view.png")
    saved = mpimg.imread(tmp_path / "view.png")[..., :3]
    composite = _pixels(w.image_pngs()[1])
    np.testing.assert_allclose(saved[-composite.shape[0]:, :composite.shape[1]], composite, atol=1 / 255)
    w.save_html(tmp_path / "view.html")
    text = (tmp_path / "view.html").read_text()
    assert "alt='composite of channels with cells' src='data:image/png;base64," in text and "http" not in text


def test_thumbnails_show_every_channel_in_its_window(imaged):
    x, folder = imaged
    w = cs.preview(x, images={"img2": folder / "img2.ome.tiff"}, image="img2")
    view = w.channel_images.view("img2", w.colour_by.value, w.feature)
    assert [name for name, _ in view.thumbnails] == ["DAPI", "CD3e", "Pan-Cytokeratin", "FOXP3"]
    assert view.channels == ("DAPI", "CD3e", "Pan-Cytokeratin")  # the first three by default
    assert all(plane.min() == 0 and plane.max() == 1 for _, plane in view.thumbnails)
    assert max(view.thumbnails[0][1].shape) <= 160


def test_images_that_do_not_fit_are_refused_by_the_preview(imaged):
    x, folder = imaged
    with pytest.raises(ImageError, match="no such image_id; its images are img1, img2"):
        cs.preview(x, images={"img3": folder / "img1.ome.tiff"})


def test_on_a_whole_slide_each_cell_is_the_pixel_under_its_centroid_in_its_colour(tmp_path):
    # 20,000 cells at 2 um a pixel: about 3 screen pixels across in the composite, too small for rings
    x = cs.example(n_cells=20_000, n_images=1, pixel_size=2.0, image_dir=tmp_path)
    w = cs.preview(x, images={"img1": tmp_path / "img1.ome.tiff"}, channels=["DAPI"], feature="cell:CD3e:mean")
    view = w.channel_images.view("img1", w.colour_by.value, w.feature)
    assert len(view.cell_xy) == 20_000
    with_cells, without = (_pixels(p) for p in (w.image_pngs()[1], w.image_pngs(cells=False)[1]))
    assert with_cells.shape[:2] == view.composite.shape[:2]  # one PNG pixel per composite pixel
    x0, y0, x1, y1 = view.box_um
    u = np.floor((view.cell_xy[:, 0] - x0) / (x1 - x0) * with_cells.shape[1]).astype(int)
    v = np.floor((view.cell_xy[:, 1] - y0) / (y1 - y0) * with_cells.shape[0]).astype(int)
    alone = np.bincount(v * with_cells.shape[1] + u)[v * with_cells.shape[1] + u] == 1
    found = with_cells[v[alone], u[alone]]
    assert np.abs(found - view.cell_rgba[alone, :3]).max() < 1 / 255 + 1e-6  # the cell's viridis colour
    under_no_cell = np.ones(with_cells.shape[:2], bool)
    under_no_cell[v, u] = False
    np.testing.assert_array_equal(with_cells[under_no_cell], without[under_no_cell])  # the image elsewhere
