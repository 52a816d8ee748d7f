"""The image:<channel> layer puts the image under the cells, aligned with them: checked in the scene's arrays and
on screen in Debian's headless Chromium (the pixel under a bright cell is brighter than under a dim one)."""

from __future__ import annotations

import io

import matplotlib.image as mpimg
import numpy as np
import pytest
import zarr

import cellspec_sc as cs
from browser import browser_page
from cellspec_sc.bridges.luxar import LuxarViewer
from cellspec_sc.errors import CellspecError, ImageError
from luxar_scenes import DECODER, HINT, PROJECT, READY

CD3 = "cell:CD3e:mean"


@pytest.fixture(scope="module")
def imaged(tmp_path_factory):
    folder = tmp_path_factory.mktemp("images")
    return cs.example(n_cells=400, image_dir=folder), folder


def _cd3(x, image_id):
    rows = np.flatnonzero((x.cells["image_id"] == image_id).to_numpy())
    column = list(x.dictionary["feature_id"]).index(CD3)
    return x.cells.iloc[rows], np.asarray(x.measurements[rows, column])


def test_the_texture_holds_each_cells_intensity_where_the_rectangle_puts_the_cell(imaged, tmp_path):
    x, folder = imaged
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", layers=["cells", "image:CD3e"],
                       images={"img1": folder / "img1.ome.tiff"})
    root = zarr.open_group(str(path), mode="r")
    node = root["img1.image/pixels"]
    attrs = dict(node.attrs)
    assert attrs["has_texture"] and attrs["texture_encoding"] == "raw"
    width, height = attrs["texture_width"], attrs["texture_height"]
    texture = np.asarray(node["texture"][:]).reshape(height, width, 3)
    positions = np.asarray(DECODER.decode(node["vertices"], root))[:, :2].astype(float)
    uvs = np.asarray(DECODER.decode(node["uvs"], root)).astype(float)
    # the rectangle's corner at the smallest x and y, and its uv: where texel rows start
    (x0, y0), (x1, y1) = positions.min(axis=0), positions.max(axis=0)
    cells, cd3 = _cd3(x, "img1")
    u = (cells["x"].to_numpy() - x0) / (x1 - x0)
    top = uvs[np.argmin(positions[:, 1] + positions[:, 0])]  # uv of (x0, y0)
    v = np.abs(top[1] - (cells["y"].to_numpy() - y0) / (y1 - y0))
    texels = texture[np.minimum((v * height).astype(int), height - 1), np.minimum((u * width).astype(int), width - 1)]
    assert np.corrcoef(texels[:, 1], cd3)[0, 1] > 0.9  # CD3e is cyan: green follows it
    assert (x1, y1) == pytest.approx((x.images["width_px"][0] * 0.5, x.images["height_px"][0] * 0.5))


def test_image_layers_are_refused_without_images_or_with_unknown_channels(imaged, tmp_path):
    x, folder = imaged
    with pytest.raises(CellspecError, match="no image handed over"):
        cs.to_luxar(x, tmp_path / "a.luxar.zarr", layers=["image:CD3e"])
    with pytest.raises(ImageError, match="no channel 'CD8'; its channels are DAPI, CD3e"):
        cs.to_luxar(x, tmp_path / "b.luxar.zarr", layers=["image:CD8"], images={"img1": folder / "img1.ome.tiff"})
    with pytest.raises(ImageError, match="its images are img1, img2"):
        cs.to_luxar(x, tmp_path / "c.luxar.zarr", layers=["image:CD3e"], images={"x": folder / "img1.ome.tiff"})


@pytest.mark.browser
def test_on_screen_the_image_layer_is_bright_under_a_bright_cell(imaged, tmp_path):
    x, folder = imaged
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", layers=["image:CD3e"],
                       images={"img1": folder / "img1.ome.tiff"})
    cells, cd3 = _cd3(x, "img1")
    order = np.argsort(cd3)
    picked = cells.iloc[np.r_[order[-3:], order[:3]]][["x", "y"]].to_numpy()
    with LuxarViewer(path) as viewer, browser_page(tmp_path / "profile", init_script=HINT) as (page, errors):
        page.goto(viewer.url + "&debug&dpr=1&renderer=webgl&noOpfs")
        page.wait_for_function(READY, timeout=120_000)
        page.wait_for_timeout(1500)
        screen = np.round(page.evaluate(PROJECT, ["/img1.image", picked.tolist()])).astype(int)
        png = page.screenshot()
        shot = mpimg.imread(io.BytesIO(png), format="png")[:, :, :3]
    seen = np.array([shot[v, u] for u, v in screen]) @ np.array([0.2126, 0.7152, 0.0722])
    assert not errors
    assert seen[:3].min() > seen[3:].max() + 0.2, seen
