"""squidpy on the AnnData of ``to_anndata``: per-image graphs, enrichment, co-occurrence, autocorrelation and
plots give the values the layout of the cells implies (tests/scverse_cells.py)."""

from __future__ import annotations

import anndata as ad
import matplotlib
import numpy as np
import pytest
import squidpy as sq
from scipy import sparse

import cellspec_sc as cs
from cellspec_sc.bridges.anndata import AnnDataBridgeWarning
from scverse_cells import layout_cellspec, red_pixels_in_top_left

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def layout():
    return layout_cellspec()


def cross_image_edges(adata, key: str) -> int:
    rows, cols = adata.obsp[key].nonzero()
    image = adata.obs["image_id"].to_numpy()
    return int((image[rows] != image[cols]).sum())


def test_grouping_columns_are_categorical_and_the_round_trip_stays_exact(layout, tmp_path):
    adata = cs.to_anndata(layout)
    for name in ("image_id", "sample_id", "classification", "marked"):  # marked: low-cardinality text
        assert adata.obs[name].dtype.name == "category"
    assert adata.obs["cell_id"].dtype.name == "string"  # the instance key stays text
    assert adata.obs["classification"].cat.categories.tolist() == ["T cell", "Tumor"]
    adata.write_h5ad(tmp_path / "a.h5ad")
    back = cs.from_anndata(ad.read_h5ad(tmp_path / "a.h5ad"))
    assert back.equals(layout)
    assert back.cells["classification"].dtype == layout.cells["classification"].dtype


def test_spatial_neighbors_per_image_and_the_shared_frame(layout):
    adata = cs.to_anndata(layout)
    sq.gr.spatial_neighbors_delaunay(adata, library_key="image_id", key_added="per_image")
    assert cross_image_edges(adata, "per_image_connectivities") == 0
    # both images share one micrometre frame: without library_key the graph joins them
    sq.gr.spatial_neighbors_delaunay(adata, key_added="one_frame")
    assert cross_image_edges(adata, "one_frame_connectivities") > adata.obsp["one_frame_connectivities"].nnz / 4
    # the bridge's own contacts never join images
    assert cross_image_edges(adata, "spatial_connectivities") == 0


def test_nhood_enrichment_sees_the_segregated_classes(layout):
    adata = cs.to_anndata(layout)
    sq.gr.nhood_enrichment(adata, cluster_key="classification", connectivity_key="spatial", n_perms=100, seed=0,
                           show_progress_bar=False)
    z = adata.uns["classification_nhood_enrichment"]["zscore"]
    assert z[0, 0] > 5 and z[1, 1] > 5 and z[0, 1] < -5  # T-T and Tumor-Tumor together, T-Tumor apart


def test_co_occurrence_per_image(layout):
    adata = cs.to_anndata(layout)
    ratios = {}
    for image in ("left", "top"):
        part = adata[adata.obs["image_id"] == image].copy()
        sq.gr.co_occurrence(part, cluster_key="classification", interval=np.array([5.0, 15.0, 60.0, 250.0]))
        ratios[image] = part.uns["classification_co_occurrence"]["occ"]
    for occ in ratios.values():
        # p(T cell | T cell within 15 um) / p(T cell): half the cells are T cells, neighbours mostly the same class
        assert occ[0, 0, 0] > 1.5 and occ[0, 1, 0] < 0.5
        assert abs(occ[0, 0, -1] - 1.0) < 0.1  # at the scale of the whole image the classes mix


def test_spatial_autocorr_equals_morans_i_on_the_contacts(layout):
    adata = cs.to_anndata(layout)
    sq.gr.spatial_autocorr(adata, connectivity_key="spatial_connectivities", mode="moran", n_perms=None,
                           show_progress_bar=False)
    result = adata.uns["moranI"]
    weights = sparse.csr_matrix(adata.obsp["spatial_connectivities"])
    weights = sparse.diags(1.0 / np.asarray(weights.sum(axis=1)).ravel()) @ weights  # squidpy row-normalises
    for feature in ("cell:CD3:mean", "cell:noise:mean"):
        z = adata[:, feature].X.ravel() - adata[:, feature].X.mean()
        expected = float(z @ (weights @ z) / (z @ z))
        assert result.loc[feature, "I"] == pytest.approx(expected, rel=1e-6)
    assert result.loc["cell:CD3:mean", "I"] > 0.7 and abs(result.loc["cell:noise:mean", "I"]) < 0.15


def test_spatial_scatter_draws_y_downward(layout):
    import matplotlib.pyplot as plt

    adata = cs.to_anndata(layout)
    adata.uns["marked_colors"] = ["#d3d3d3", "#ff0000"]  # categories no, yes
    ax = sq.pl.spatial_scatter(adata, shape=None, color="marked", library_key="image_id", library_id=["left"],
                               size=60, return_ax=True, legend_loc=None, figsize=(4, 4), dpi=80)
    count, col, row = red_pixels_in_top_left(ax.figure, ax)
    plt.close(ax.figure)
    assert count > 20
    assert col < 0.2 and row < 0.2  # the cell at the smallest x and y is drawn top-left


def test_a_replaced_spatial_graph_is_named_in_the_warning(layout):
    adata = cs.to_anndata(layout)
    sq.gr.spatial_neighbors_knn(adata, library_key="image_id", n_neighs=4)  # writes obsp["spatial_connectivities"]
    with pytest.warns(AnnDataBridgeWarning, match=r"obsp\['spatial_connectivities'\] is not the cellspec adjacency"):
        y = cs.from_anndata(adata)
    assert y.adjacency.equals(layout.adjacency)  # the stored contacts stay
