"""Fixtures of the Luxar bridge tests."""

from __future__ import annotations

import pandas as pd
import pytest

import cellspec_sc as cs


@pytest.fixture(scope="session")
def scanpy_adata():
    """The example through to_anndata after scanpy's PCA, neighbours and UMAP, with k-means clusters (leiden
    needs igraph, which is not a dependency) and scanpy's own plot colours in uns."""
    import matplotlib

    matplotlib.use("Agg")
    import scanpy as sc
    from sklearn.cluster import KMeans

    x = cs.example(n_cells=300, adjacency=True)
    adata = cs.to_anndata(x)
    sc.pp.pca(adata, n_comps=5)
    sc.pp.neighbors(adata, n_neighbors=10)
    sc.tl.umap(adata, random_state=0)
    labels = KMeans(n_clusters=4, n_init=3, random_state=0).fit_predict(adata.obsm["X_pca"])
    adata.obs["cluster"] = pd.Categorical(labels.astype(str))
    sc.pl.umap(adata, color="cluster", show=False)  # stores uns['cluster_colors']
    return x, adata
