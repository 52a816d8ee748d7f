"""Scenes of an AnnData after a real scanpy run: clusters in scanpy's colours, the UMAP as a view, features,
markers and contacts; an AnnData without the cellspec record."""

from __future__ import annotations

import anndata as ad
import luxar
import numpy as np
import pandas as pd
import pytest

import cellspec_sc as cs
from cellspec_sc.bridges.luxar._colour import linear_rgb
from luxar_scenes import cells_of, points_node, points_total, quantum


def test_anndata_cluster_and_embedding_layers(tmp_path, scanpy_adata):
    x, adata = scanpy_adata
    path = cs.to_luxar(adata, tmp_path / "s.luxar.zarr", layers=["category:cluster", "embedding:X_umap"])
    palette = dict(zip(adata.obs["cluster"].cat.categories, adata.uns["cluster_colors"], strict=True))
    umap = pd.DataFrame(adata.obsm["X_umap"], index=(adata.obs["image_id"].astype(str) + "/"
                                                        + adata.obs["cell_id"].astype(str)).to_numpy())
    cluster = pd.Series(adata.obs["cluster"].to_numpy(), index=umap.index)
    lo, hi = umap.min(), umap.max()
    size = float((x.images["height_px"] * x.images["pixel_size"]).max())  # the tallest image in micrometres
    span = (hi - lo).max()
    for image in ("img1", "img2"):
        slide = points_node(path, f"{image}/{image}.category_cluster")
        ids = [f"{image}/{k}" for k in slide["keys"]]
        from matplotlib.colors import to_rgb
        np.testing.assert_allclose(slide["colors"], linear_rgb([to_rgb(palette[c]) for c in cluster[ids]]),
                                   atol=2 / 255)
        view = points_node(path, f"embedding_X_umap/{image}.category_cluster")
        ids = [f"{image}/{k}" for k in view["keys"]]
        assert len(ids) == 2 * (adata.obs["image_id"] == image).sum()  # at 'all' and at its own cluster
        want = np.column_stack([(umap.loc[ids, 0] - lo[0]) / span * size, (hi[1] - umap.loc[ids, 1]) / span * size])
        np.testing.assert_allclose(view["positions"][:, :2], want, atol=size / 65535 * 2)
        np.testing.assert_allclose(view["colors"], linear_rgb([to_rgb(palette[c]) for c in cluster[ids]]), atol=2 / 255)
    assert points_total(path) == 4 * adata.n_obs


def test_anndata_features_markers_and_contacts(tmp_path, scanpy_adata):
    x, adata = scanpy_adata
    path = cs.to_luxar(adata, tmp_path / "s.luxar.zarr", layers=["marker:CD3e", "adjacency"])
    node = points_node(path, "img2/img2.marker_CD3e/cells")
    all_values = x.measurement_frame(["cell:CD3e:mean"])["cell:CD3e:mean"].to_numpy()
    want = all_values[cells_of(x, "img2").index.get_indexer(node["keys"]) + (x.cells["image_id"] == "img1").sum()]
    lo, hi = np.percentile(all_values, [1, 99])
    np.testing.assert_allclose(node["scalars"], np.clip(want, lo, hi), atol=quantum(node["group"]["scalars"]))
    scene = luxar.LuxarScene.load(path)
    n_segments = sum(len(scene.get_lines(f"adjacency/{im}/contacts").segments) for im in ("img1", "img2"))
    assert n_segments == len(x.adjacency)  # from obsp['spatial_connectivities']
    assert scene.root_attrs["citation"]["short"].startswith("Cells measured by simulate 2.0.0")


def test_anndata_without_cellspec_record_uses_cell_extents(tmp_path, x):
    obs = x.cells.astype(object).set_axis([f"c{i}" for i in range(x.n_cells)])
    adata = ad.AnnData(X=x.measurements.copy(), obs=obs, var=x.dictionary.set_index("feature_id"))
    adata.obsm["spatial"] = x.cells[["x", "y"]].to_numpy()
    path = cs.to_luxar(adata, tmp_path / "s.luxar.zarr")
    scene = luxar.LuxarScene.load(path)
    img1_width = x.cells.loc[(x.cells["image_id"] == "img1").to_numpy(dtype=bool), "x"].max()
    assert scene.get_group("img2")["transform"][0, 3] == pytest.approx(img1_width * 1.08)
    assert "citation" not in scene.root_attrs
    with pytest.raises(cs.InputError, match="obs has no 'cell_id'"):
        cs.to_luxar(adata[:, :].copy().obs.drop(columns="cell_id").pipe(lambda o: ad.AnnData(obs=o)), tmp_path / "t")
