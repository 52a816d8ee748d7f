"""Empty tables (no cells, no features, no contacts) through every writer and bridge, and zero-row files another
writer made."""

from __future__ import annotations

import gzip
import warnings

import numpy as np
import pyarrow.parquet as pq
import pytest

import cellspec_sc as cs
from cellspec_sc.bridges.anndata import read_anndata_zarr, read_h5ad, write_anndata_zarr, write_h5ad
from cellspec_sc.bridges.spatialdata import read_spatialdata, write_spatialdata
from dirhelpers import reseal


def tsv_exact(x):
    """``x`` with doubles that 15 significant digits hold exactly (so the TSV variant reads back equal)."""
    cells = x.cells.copy()
    for column in ("x", "y", "area"):
        cells[column] = cells[column].round(3)
    return x.replace(cells=cells, measurements=np.round(x.measurements, 3))


def empty_variants():
    x = tsv_exact(cs.example(adjacency=True))
    return {"0 cells": x.subset(cells=np.zeros(x.n_cells, dtype=bool)),
            "0 features": x.subset(features=[]),
            "0 contacts": x.replace(adjacency=x.adjacency.iloc[:0])}


WRITERS = {
    "parquet": (lambda x, p: cs.write(x, p), cs.read),
    "tsv": (lambda x, p: cs.write(x, p, format="tsv"), cs.read),
    "h5ad": (lambda x, p: write_h5ad(x, p.with_suffix(".h5ad")), read_h5ad),
    "anndata zarr": (lambda x, p: write_anndata_zarr(x, p.with_suffix(".zarr")), read_anndata_zarr),
    "spatialdata": (lambda x, p: write_spatialdata(x, p.with_suffix(".spatialdata.zarr")), read_spatialdata),
}


@pytest.mark.parametrize("variant", sorted(empty_variants()))
def test_empty_tables_round_trip_through_every_writer(tmp_path, variant):
    x = empty_variants()[variant]
    for name, (write, read) in WRITERS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            back = read(write(x, tmp_path / name.replace(" ", "-")))
        assert back.differences(x) == [], (variant, name)
    scene = cs.to_luxar(x, tmp_path / "scene.luxar.zarr")
    assert (scene / "zarr.json").is_file()


def test_zero_row_files_of_another_writer_can_be_written_again(tmp_path):
    x = cs.example(adjacency=True)
    parquet = cs.write(x, tmp_path / "p")
    pq.write_table(pq.read_table(parquet / "cells.parquet").slice(0, 0), parquet / "cells.parquet")  # plain pyarrow
    pq.write_table(pq.read_table(parquet / "adjacency.parquet").slice(0, 0), parquet / "adjacency.parquet")
    reseal(parquet)
    tsv = cs.write(x, tmp_path / "t", format="tsv")
    for name in ("cells.tsv.gz", "adjacency.tsv.gz"):
        with gzip.open(tsv / name, "rb") as f:
            header = f.readline()
        with gzip.open(tsv / name, "wb") as f:  # header only
            f.write(header)
    reseal(tsv)
    for source in (parquet, tsv):
        y = cs.read(source)
        assert y.n_cells == 0 and len(y.adjacency) == 0
        for fmt in ("parquet", "tsv"):
            assert cs.read(cs.write(y, tmp_path / f"{source.name}-{fmt}", format=fmt)).equals(y)
