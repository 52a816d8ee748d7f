"""A real scanpy workflow on a cellspec, and its results back in a valid, writable cellspec."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scanpy as sc

import cellspec_sc as cs
from cellspec_sc.bridges.anndata import AnnDataBridgeWarning


def scanpy_workflow(adata):
    """Mean intensities selected through var, arcsinh into a layer, PCA, neighbours, Leiden, UMAP."""
    mean = adata.var.eval('kind == "intensity" and statistic == "mean"').to_numpy()
    adata.layers["arcsinh"] = np.arcsinh(adata.X / 5.0)
    sc.pp.pca(adata, layer="arcsinh", mask_var=mean, n_comps=5)
    # exact kNN with Gaussian weights: same graph API, no numba compilation of pynndescent in the test
    sc.pp.neighbors(adata, n_neighbors=15, transformer="sklearn", method="gauss")
    sc.tl.leiden(adata, flavor="igraph", n_iterations=2, random_state=0)
    sc.tl.umap(adata, random_state=0)
    return mean


def test_scanpy_results_come_back_into_a_valid_cellspec(tmp_path):
    x = cs.example(n_cells=400, adjacency=True)
    adata = cs.to_anndata(x)
    mean = scanpy_workflow(adata)
    assert adata.varm["PCs"][~mean].sum() == 0  # only the mean intensity features entered the PCA
    assert adata.X is not None and not np.shares_memory(adata.X, x.measurements)  # the AnnData's own copy
    assert x.equals(cs.example(n_cells=400, adjacency=True))  # the object's raw values untouched
    adata.obs["UMAP 1"] = adata.obsm["X_umap"][:, 0]
    with pytest.warns(AnnDataBridgeWarning, match="X_umap"):
        y = cs.from_anndata(adata)
    assert list(y.cells.columns) == [*x.cells.columns, "leiden", "umap_1"]
    assert y.cells["leiden"].tolist() == adata.obs["leiden"].astype(str).tolist()
    assert y.cells["leiden"].nunique() > 1
    np.testing.assert_array_equal(y.cells["umap_1"].to_numpy(), adata.obsm["X_umap"][:, 0].astype(np.float64))
    assert y.measurements is not None and y.measurements.tobytes() == x.measurements.tobytes()
    assert y.adjacency.equals(x.adjacency)
    assert y.validate().ok
    # the clusters recover the simulated classes: each big cluster is dominated by one class
    table = pd.crosstab(y.cells["leiden"], y.cells["classification"])
    big = table[table.sum(axis=1) >= 20]
    assert ((big.max(axis=1) / big.sum(axis=1)) > 0.8).all()
    back = cs.read(y.write(tmp_path / "clustered"))
    assert back.equals(y)
    assert back.provenance["history"][-1]["details"]["cells_columns_added"] == ["leiden", "umap_1"]


def test_squidpy_conventions():
    """What squidpy.gr reads: obsm['spatial'] (n, 2) float and a symmetric (n, n) CSR graph in obsp."""
    from scipy import sparse

    x = cs.example(n_cells=200, adjacency=True)
    adata = cs.to_anndata(x)
    spatial = adata.obsm["spatial"]
    assert spatial.shape == (adata.n_obs, 2) and spatial.dtype == np.float64
    graph = adata.obsp["spatial_connectivities"]
    assert sparse.issparse(graph) and graph.format == "csr" and graph.shape == (adata.n_obs, adata.n_obs)
    assert (graph != graph.T).nnz == 0 and graph.diagonal().sum() == 0
    # contacts join cells of one image only
    rows, cols = graph.nonzero()
    assert (adata.obs["image_id"].to_numpy()[rows] == adata.obs["image_id"].to_numpy()[cols]).all()
    assert "spatial" not in adata.uns  # squidpy would take uns['spatial'] for a Visium library
    try:
        import squidpy as sq
    except ImportError:
        return
    sq.gr.nhood_enrichment(adata, cluster_key="classification", connectivity_key="spatial")


def test_readme_workflow_runs_as_written_at_20000_cells(tmp_path, monkeypatch):
    """The README's scanpy block with scanpy's defaults (pynndescent kNN above 4,096 cells): it failed in
    sc.pp.neighbors with pynndescent 0.7.0 ('csr_array' object has no attribute 'getnnz'), hence pynndescent<0.7."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### AnnData and scanpy", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    assert "sc.pp.neighbors(adata)" in block  # the default neighbours, not the test's sklearn transformer
    monkeypatch.chdir(tmp_path)  # the block writes its result
    namespace = {"cs": cs, "slide": cs.example(n_cells=20_000)}
    with pytest.warns(AnnDataBridgeWarning):
        exec(compile(block, "README.md (AnnData and scanpy)", "exec"), namespace)  # noqa: S102 - the README's code
    y = namespace["clustered"]
    assert y.n_cells == 20_000 and y.cells["leiden"].nunique() > 1
    assert namespace["adata"].obsp["connectivities"].shape == (20_000, 20_000)
    assert y.validate().ok
