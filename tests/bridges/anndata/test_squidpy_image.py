"""to_anndata(x, images=...) fills squidpy's uns["spatial"]: the hires image carries each cell's intensities under
its centroid in the scale of obsm["spatial"], and squidpy draws the cells on it."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
import squidpy as sq

import cellspec_sc as cs
from image_oracle import correlations

matplotlib.use("Agg")
CHANNELS = ["DAPI", "CD3e", "Pan-Cytokeratin", "FOXP3"]


@pytest.fixture(scope="module")
def imaged(tmp_path_factory):
    folder = tmp_path_factory.mktemp("images")
    x = cs.example(n_cells=400, image_dir=folder)
    return x, cs.to_anndata(x, images={"img1": folder / "img1.ome.tiff", "img2": folder / "img2.ome.tiff"})


def test_the_hires_image_carries_each_cells_intensities_where_obsm_spatial_says(imaged):
    x, adata = imaged
    for image_id in ("img1", "img2"):
        library = adata.uns["spatial"][image_id]
        hires = library["images"]["hires"]
        assert library["metadata"]["channel_names"] == CHANNELS and hires.shape[-1] == 4
        um_per_px = 1 / library["scalefactors"]["tissue_hires_scalef"]
        found = correlations(x, image_id, np.moveaxis(hires, -1, 0), CHANNELS, (um_per_px, um_per_px))
        assert min(found.values()) > 0.9, found
        swapped = correlations(x, image_id, np.moveaxis(hires, -1, 0), CHANNELS, (um_per_px, um_per_px), swap=True)
        assert max(swapped.values()) < 0.9, swapped


def test_the_hires_image_is_at_most_2000_pixels_on_its_longest_side(tmp_path):
    x = cs.example(n_cells=20_000, n_images=1, image_dir=tmp_path)
    adata = cs.to_anndata(x, images={"img1": tmp_path / "img1.ome.tiff"})
    library = adata.uns["spatial"]["img1"]
    hires = library["images"]["hires"]
    width_um = x.images["width_px"].iloc[0] * x.images["pixel_size"].iloc[0]
    assert max(hires.shape[:2]) <= 2000 and max(hires.shape[:2]) > 1000
    assert library["scalefactors"]["tissue_hires_scalef"] == pytest.approx(hires.shape[1] / width_um)


def test_squidpy_draws_the_cells_on_the_image_and_the_object_comes_back(imaged):
    import matplotlib.pyplot as plt

    x, adata = imaged
    one = adata[adata.obs["image_id"] == "img1"].copy()
    sq.pl.spatial_scatter(one, library_id="img1", library_key="image_id", img=True, img_channel=1,
                          color="cell:CD3e:mean")
    figure = plt.gcf()
    axes_images = [image for ax in figure.axes for image in ax.get_images()]
    assert axes_images and axes_images[0].get_array().shape[:2] == adata.uns["spatial"]["img1"]["images"][
        "hires"].shape[:2]
    plt.close(figure)
    assert cs.from_anndata(adata).equals(x)
