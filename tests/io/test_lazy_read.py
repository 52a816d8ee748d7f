"""cellspec_sc.read(path, lazy=True): measurements as a dask array over the Parquet row groups."""

from __future__ import annotations

import os

import anndata
import dask.array as da
import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cellspec_sc as cs
from cellspec_sc.io import _refusals as r
from dirhelpers import reseal
from strategies import cellspecs


@pytest.fixture
def x():
    return cs.example(n_cells=60, n_features=30, adjacency=True, region_layers=("tissue",))


@pytest.fixture
def grouped(tmp_path, x):
    """x written, then its cells file rewritten with row groups of 7 rows (as another writer might)."""
    path = cs.write(x, tmp_path / "obj")
    pq.write_table(pq.read_table(path / "cells.parquet"), path / "cells.parquet", row_group_size=7)
    reseal(path)
    return path


def test_lazy_measurements_follow_the_row_groups(grouped, x):
    y = cs.read(grouped, lazy=True)
    assert isinstance(y.measurements, da.Array)
    assert y.measurements.chunks[0] == (7,) * 8 + (4,)
    assert y.measurements.shape == x.measurements.shape and y.measurements.dtype == np.float64
    assert y.equals(x)
    assert cs.read(grouped).equals(y)


def test_row_blocks_walk_dask_chunks_once(grouped):
    from cellspec_sc.model import row_blocks

    y = cs.read(grouped, lazy=True)
    starts = [(start, len(block)) for start, block in row_blocks(y.measurements)]
    assert starts == [(7 * i, 7) for i in range(8)] + [(56, 4)]


def test_lazy_object_validates_and_writes(grouped, x, tmp_path):
    y = cs.read(grouped, lazy=True)
    assert cs.validate(y).ok
    out = cs.write(y, tmp_path / "copy")
    assert cs.read(out).equals(x)


def test_lazy_object_to_anndata_is_dask_backed_and_round_trips(grouped, x, tmp_path):
    adata = cs.to_anndata(cs.read(grouped, lazy=True))
    assert isinstance(adata.X, da.Array)
    assert adata.uns["cellspec"]["meta"] == cs.to_anndata(x).uns["cellspec"]["meta"]  # same fingerprint
    adata.write_h5ad(tmp_path / "a.h5ad")
    assert cs.from_anndata(anndata.read_h5ad(tmp_path / "a.h5ad")).equals(x)
    assert cs.from_anndata(adata).equals(x)


def test_lazy_read_refuses_nan_stored_as_number(grouped):
    table = pq.read_table(grouped / "cells.parquet")
    values = table.column("cell:CD3e:mean").to_pylist()
    values[9] = float("nan")
    index = table.schema.get_field_index("cell:CD3e:mean")
    import pyarrow as pa

    table = table.set_column(index, "cell:CD3e:mean", pa.array(values, pa.float64()))
    pq.write_table(table, grouped / "cells.parquet", row_group_size=7)
    reseal(grouped)
    with pytest.raises(cs.ValidationError) as info:
        cs.read(grouped, lazy=True)
    report = info.value.report
    assert [f.name for f in report.failures] == ["measurements_finite"]
    assert "row group 1" in report.result("measurements_finite").message
    assert "'cell:CD3e:mean' stores 1 NaN" in report.result("measurements_finite").message


def test_lazy_blocks_refuse_a_changed_file(grouped):
    y = cs.read(grouped, lazy=True)
    stat = os.stat(grouped / "cells.parquet")
    os.utime(grouped / "cells.parquet", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    with pytest.raises(r.ChangedSinceRead, match="changed after read"):
        np.asarray(y.measurements)


def test_lazy_blocks_refuse_a_removed_file(grouped):
    y = cs.read(grouped, lazy=True)
    (grouped / "cells.parquet").unlink()
    with pytest.raises(r.ChangedSinceRead, match="removed"):
        np.asarray(y.measurements)


def test_lazy_needs_parquet(tmp_path, x):
    path = cs.write(x, tmp_path / "tsv", format="tsv")
    with pytest.raises(cs.InputError, match="Parquet variant"):
        cs.read(path, lazy=True)


def test_lazy_matrix_of_a_file_without_row_groups_or_features(tmp_path):
    x = cs.example(n_cells=0, n_features=3)
    y = cs.read(cs.write(x, tmp_path / "empty"), lazy=True)
    assert y.measurements.shape == (0, 3) and y.equals(x)


@settings(max_examples=15)
@given(obj=cellspecs(), rows=st.integers(1, 5))
def test_lazy_read_equals_eager_read(tmp_path_factory, obj, rows):
    path = cs.write(obj, tmp_path_factory.mktemp("lazy") / "obj")
    pq.write_table(pq.read_table(path / "cells.parquet"), path / "cells.parquet", row_group_size=rows)
    reseal(path)
    lazy = cs.read(path, lazy=True)
    assert lazy.equals(obj), lazy.differences(obj)
