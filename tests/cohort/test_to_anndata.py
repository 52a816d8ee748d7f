"""Cohort.to_anndata without a cluster: X computes to the concatenated measurements, and scanpy's dask PCA runs
on it."""

from __future__ import annotations

import numpy as np

import cellspec_sc as cs


def test_to_anndata_without_a_cluster_and_pca_through_scanpys_dask_path(slides):
    import scanpy as sc

    adata = cs.open_cohort(slides).to_anndata()
    expected = np.concatenate([cs.read(p).measurements for p in slides])
    assert np.array_equal(adata.X.compute(), expected, equal_nan=True)
    finite = adata[:, ~np.isnan(expected).any(axis=0)].copy()
    sc.pp.pca(finite, n_comps=3, svd_solver="covariance_eigh")  # scanpy's own dask PCA (no dask-ml)
    assert finite.obsm["X_pca"].shape == (180, 3)
    assert type(finite.obsm["X_pca"]).__module__.startswith("dask")
