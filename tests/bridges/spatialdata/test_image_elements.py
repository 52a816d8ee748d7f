"""to_spatialdata(x, images=...) adds a multiscale image element per image, in the pixel and micrometre coordinate
systems, so that the cells sit on their discs: read back after write/read_zarr, and drawn by spatialdata-plot."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
import spatialdata as sd
import spatialdata_plot  # noqa: F401 - registers sdata.pl
from spatialdata.transformations import get_transformation

import cellspec_sc as cs
from cellspec_sc.errors import ImageError
from image_oracle import correlations

matplotlib.use("Agg")
CHANNELS = ["DAPI", "CD3e", "Pan-Cytokeratin", "FOXP3"]


@pytest.fixture(scope="module")
def imaged(tmp_path_factory):
    folder = tmp_path_factory.mktemp("images")
    return cs.example(n_cells=400, image_dir=folder), folder


@pytest.fixture(scope="module")
def written(imaged, tmp_path_factory):
    x, folder = imaged
    sdata = cs.to_spatialdata(x, images={"img1": folder / "img1.ome.tiff", "img2": folder / "img2.ome.tiff"})
    path = tmp_path_factory.mktemp("store") / "x.spatialdata.zarr"
    sdata.write(str(path))
    return sd.read_zarr(str(path))


def test_each_image_is_a_lazy_multiscale_element_in_pixel_and_micrometre_systems(imaged):
    x, folder = imaged
    sdata = cs.to_spatialdata(x, images={"img1": folder / "img1.ome.tiff"})
    element = sdata.images["img1_image"]
    scale0 = element["scale0"]["image"]
    assert list(scale0.coords["c"].values) == CHANNELS and scale0.dims == ("c", "y", "x")
    assert type(scale0.data).__module__.startswith("dask")
    transforms = get_transformation(element, get_all=True)
    assert set(transforms) == {"img1", "img1_px"}
    assert transforms["img1"].to_affine_matrix(("x", "y"), ("x", "y"))[:2, :2].tolist() == [[0.5, 0], [0, 0.5]]
    assert "img2_image" not in sdata.images


def test_the_written_image_element_carries_each_cells_intensity_at_its_centroid(imaged, written):
    x, _ = imaged
    for image_id in ("img1", "img2"):
        element = written.images[f"{image_id}_image"]
        for scale, um in (("scale0", 0.5), ("scale1", 1.0)):
            planes = element[scale]["image"].values
            found = correlations(x, image_id, planes, CHANNELS, (um, um))
            assert min(found.values()) > 0.9, (image_id, scale, found)
        swapped = correlations(x, image_id, element["scale0"]["image"].values, CHANNELS, (0.5, 0.5), swap=True)
        assert max(swapped.values()) < 0.9, swapped


def test_from_spatialdata_ignores_the_image_elements(imaged, written):
    x, _ = imaged
    assert cs.from_spatialdata(written).equals(x)


def _render(sdata, extent_um: tuple[float, float], *, shapes: bool) -> np.ndarray:
    """The axes' pixels (RGB) of a plot of the DAPI channel (and the cells as red discs) over ``extent_um``."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    plot = sdata.pl.render_images("img1_image", channel="DAPI", cmap="gray")
    if shapes:
        plot = plot.pl.render_shapes("img1", color="#ff0000", fill_alpha=1.0, outline_alpha=0.0)
    plot.pl.show(coordinate_systems="img1", ax=ax, legend_loc=None, colorbar=False, title="")
    ax.set_xlim(0, extent_um[0])
    ax.set_ylim(extent_um[1], 0)
    fig.canvas.draw()
    pixels = np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(int)
    box = ax.get_window_extent()
    height = pixels.shape[0]
    plt.close(fig)
    return pixels[int(height - box.y1) + 2:int(height - box.y0) - 2, int(box.x0) + 2:int(box.x1) - 2]


def test_spatialdata_plot_draws_the_circles_on_the_discs(imaged):
    x, folder = imaged
    sdata = cs.to_spatialdata(x, images={"img1": folder / "img1.ome.tiff"})
    row = x.images.set_index("image_id").loc["img1"]
    extent = (row["width_px"] * row["pixel_size"], row["height_px"] * row["pixel_size"])
    image_only = _render(sdata, extent, shapes=False)
    both = _render(sdata, extent, shapes=True)
    red = (both[..., 0] > 200) & (both[..., 1] < 60) & (both[..., 2] < 60)
    disc = image_only.mean(axis=2) > 60  # every cell's DAPI disc is bright, the background black
    assert red.sum() > 2000 and disc.sum() > 2000
    assert (red & disc).sum() / red.sum() > 0.95  # the circles lie on the discs...
    assert (red & disc).sum() / disc.sum() > 0.9  # ...and cover them
    shifted = np.roll(red, 8, axis=1)  # a few screen pixels off: far less overlap
    assert (shifted & disc).sum() / red.sum() < 0.8


def test_an_image_that_does_not_fit_is_refused_before_anything_is_built(imaged):
    x, folder = imaged
    with pytest.raises(ImageError, match="image 'img2'.*img1.ome.tiff.*source_image_sha256"):
        cs.to_spatialdata(x, images={"img2": folder / "img1.ome.tiff"})


def test_a_pyramidal_file_gives_its_own_levels_as_the_scales(tmp_path):
    x = cs.example(n_cells=2_000, n_images=1, image_dir=tmp_path)
    image = cs.open_image(tmp_path / "img1.ome.tiff")
    sdata = cs.to_spatialdata(x, images={"img1": tmp_path / "img1.ome.tiff"})
    sdata.write(str(tmp_path / "x.spatialdata.zarr"))
    element = sd.read_zarr(str(tmp_path / "x.spatialdata.zarr")).images["img1_image"]
    assert list(element) == [f"scale{k}" for k in range(len(image.levels))] and len(image.levels) == 4
    for k, level in enumerate(image.levels):
        stored = element[f"scale{k}"]["image"]
        assert stored.dtype == np.uint16  # the file's 2 x 2 means as stored, not means computed again
        np.testing.assert_array_equal(stored.values, level.compute())
    scale = get_transformation(element["scale3"]["image"], "img1").to_affine_matrix(("x", "y"), ("x", "y"))
    assert scale[0, 0] == pytest.approx(0.5 * image.width / image.levels[3].shape[2])
    found = correlations(x, "img1", element["scale1"]["image"].values, CHANNELS,
                         (0.5 * image.height / image.levels[1].shape[1], 0.5 * image.width / image.levels[1].shape[2]))
    assert min(found.values()) > 0.9, found
