"""Fixtures of the AnnData bridge's tests: an object with awkward values in every table, and a round trip of an
AnnData through an ``.h5ad`` file or a ``.zarr`` store written by anndata itself."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anndata as ad
import numpy as np
import pandas as pd
import pytest

import cellspec_sc as cs


def _write_and_read(adata: ad.AnnData, path: Path, fmt: str) -> ad.AnnData:
    path.mkdir(parents=True, exist_ok=True)
    if fmt == "h5ad":
        adata.write_h5ad(path / "x.h5ad")
        return ad.read_h5ad(path / "x.h5ad")
    adata.write_zarr(path / "x.zarr")
    return ad.read_zarr(path / "x.zarr")


@pytest.fixture
def write_and_read() -> Callable[[ad.AnnData, Path, str], ad.AnnData]:
    """``write_and_read(adata, folder, "h5ad" or "zarr")``: the AnnData as anndata reads it back."""
    return _write_and_read


@pytest.fixture
def rich():
    """Example with adjacency and a region layer, plus awkward values in every table."""
    x = cs.example(adjacency=True, region_layers=("tissue",))
    cells = x.cells.copy()
    cells.loc[0, "classification"] = pd.NA
    cells.loc[1, "area"] = np.nan
    cells["note"] = pd.array(["ü", None] + ["001"] * (len(cells) - 2), dtype="string")
    cells["count"] = pd.array([None] + list(range(1, len(cells))), dtype="Int32")
    cells["flag"] = pd.array([True, None] + [False] * (len(cells) - 2), dtype="boolean")
    m = x.measurements.copy()
    m[0, 0], m[1, 0], m[2, 0], m[3, 0] = -0.0, np.nan, 5e-324, 1.797e308
    images = x.images.copy()
    images["subject_id"] = pd.array([None, "p:1"], dtype="string")
    provenance = {**x.provenance, "parameters": {"none": None, "nested": [1, -0.0, "µ"], "nan": float("nan")}}
    return x.replace(cells=cells, measurements=m, images=images, provenance=provenance)
