"""The one-pass matrix stats: what read gathers while decoding equals what validation computes alone.

The four matrix checks (measurements_finite, negative_intensity, feature_na_fraction,
feature_support) read MatrixStats. These tests compare the stats with plain numpy computed
per column and per image, and the report of a read (stats from decoding) with the report of
validate() on the same object (stats from a fresh pass), over generated objects.
"""

from __future__ import annotations

import importlib
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cellspec_sc as cs
from cellspec_sc.io import _parquet as parquet_io
from cellspec_sc.io import _parquet as parquet_matrix
from cellspec_sc.model import MatrixStats, arrow_first_seen_codes, first_seen_codes, matrix_stats
from cellspec_sc.spec import PANDAS_DTYPES
from cellspec_sc.validation import staged_validation
from dirhelpers import reseal
from strategies import cellspecs


def cells_types(path) -> list[dict[str, str]]:
    return json.loads((path / "cellspec.json").read_text())["column_types"]["cells"]


def expected_stats(m: np.ndarray, codes: np.ndarray, n_images: int) -> dict[str, np.ndarray]:
    """The stats by the definition, one column and one image at a time."""
    low = np.full((n_images, m.shape[1]), np.inf)
    high = np.full((n_images, m.shape[1]), -np.inf)
    for code in range(n_images):
        for j in range(m.shape[1]):
            values = m[codes == code, j]
            values = values[~np.isnan(values)]
            if values.size:
                low[code, j], high[code, j] = values.min(), values.max()
    first = [int(np.flatnonzero(np.isinf(m[:, j]))[0]) if np.isinf(m[:, j]).any() else -1 for j in range(m.shape[1])]
    return {"nan": np.isnan(m).sum(axis=0), "infinite": np.isinf(m).sum(axis=0), "negative": (m < 0).sum(axis=0),
            "first_infinite": np.array(first, dtype=np.int64), "low": low, "high": high}


def assert_stats_equal(stats: MatrixStats, want: dict[str, np.ndarray]) -> None:
    for name, value in want.items():
        np.testing.assert_array_equal(getattr(stats, name), value, err_msg=name)


matrices = st.integers(1, 300).flatmap(lambda n: st.tuples(
    st.lists(st.sampled_from([0.0, -0.0, 1.5, -2.0, np.nan, np.inf, -np.inf, 5e-324, 7.0]), min_size=n * 3,
             max_size=n * 3).map(lambda v: np.array(v).reshape(-1, 3)),
    st.lists(st.integers(-1, 2), min_size=n, max_size=n).map(np.array)))


@given(matrices, st.booleans())
@settings(max_examples=100, deadline=None)
def test_stats_match_their_definition(case, in_runs):
    m, codes = case
    if in_runs:  # cells grouped by image, as most files hold them (the ranges then come from runs of rows)
        codes = np.sort(codes)
    stats = matrix_stats(m, codes, 3)
    assert_stats_equal(stats, expected_stats(m, codes, 3))


def test_blocks_in_any_order_and_column_ranges_give_the_same_stats():
    rng = np.random.default_rng(3)
    m = rng.normal(size=(5000, 7))
    m[rng.random(m.shape) < 0.01] = np.nan
    m[17, 2] = m[4000, 2] = np.inf
    codes = np.repeat([0, 1, 2], [1000, 3000, 1000])
    stats = MatrixStats(7, codes, 3)
    for start in (4096, 0, 2048):  # out of order, and in two column ranges
        stats.add(start, m[start:start + 2048, :4], 0)
        stats.add(start, m[start:start + 2048, 4:], 4)
    assert_stats_equal(stats, expected_stats(m, codes, 3))
    assert stats.first_infinite[2] == 17


@pytest.mark.parametrize("early_rows", [1, 1 << 30], ids=["decoding before the cells table", "after it"])
@pytest.mark.parametrize("threads", [1, 3])
def test_reader_gathers_the_stats_of_what_it_decoded(tmp_path, monkeypatch, threads, early_rows):
    """One or several decoding threads and the caller (each gathers its own stats, merged at the end)
    give the stats of the whole matrix, and the matrix itself, whether decoding starts before the cells
    table is read or after."""
    monkeypatch.setattr(parquet_io, "_EARLY_ROWS", early_rows)
    monkeypatch.setattr(parquet_matrix, "DECODE_THREADS", threads)
    monkeypatch.setattr(parquet_io, "_ROW_GROUP_BYTES", 1 << 16)  # many row groups
    monkeypatch.setattr(parquet_matrix, "_DECODE_BYTES", 1 << 12)  # and several column batches per group
    x = cs.example(n_cells=3000, n_features=40, n_images=3)
    m = x.measurements.copy()
    m[::7, 5] = np.nan
    m[10, 6] = -1.0
    x = x.replace(measurements=m, provenance=x.provenance)
    path = cs.write(x, tmp_path / "x")
    decoded = parquet_io.read_parquet(path / "cells.parquet", cells_types(path), x.feature_ids, path)
    codes, names = first_seen_codes(x.cells["image_id"])
    assert decoded.stats.has_ranges and len(names) == 3
    assert_stats_equal(decoded.stats, expected_stats(x.measurements, codes, 3))
    assert decoded.stored_nan == {}
    np.testing.assert_array_equal(decoded.matrix, x.measurements)
    assert cs.read(path).equals(x)


@pytest.mark.parametrize("threaded_rows", [1, 1 << 30], ids=["column by column", "one Arrow conversion"])
@pytest.mark.parametrize("threads", [1, 2])
def test_both_decode_paths_give_the_matrix_nulls_and_stored_nan(tmp_path, monkeypatch, threaded_rows, threads):
    """Long row groups are copied column by column, short ones converted by Arrow in one go; both give
    the same matrix, stats and stored-NaN counts, also for a foreign file's NaN and null-typed column,
    whether one thread decodes or two share the row groups."""
    monkeypatch.setattr(parquet_matrix, "_THREADED_ROWS", threaded_rows)
    monkeypatch.setattr(parquet_matrix, "DECODE_THREADS", threads)
    monkeypatch.setattr(parquet_matrix, "_DECODE_BYTES", 1 << 14)  # several column batches
    x = cs.example(n_cells=3000, n_features=40, n_images=3)
    m = x.measurements.copy()
    m[::7, 5] = np.nan  # NA: stored as null
    x = x.replace(measurements=m, provenance=x.provenance)
    path = cs.write(x, tmp_path / "x")
    table = pq.read_table(path / "cells.parquet")
    stored = table.column(x.feature_ids[3]).to_numpy(zero_copy_only=False).copy()
    stored[[10, 2500]] = np.nan  # NaN stored as a number (another writer)
    table = table.set_column(table.schema.get_field_index(x.feature_ids[3]), x.feature_ids[3], pa.array(stored))
    table = table.set_column(table.schema.get_field_index(x.feature_ids[8]), x.feature_ids[8], pa.nulls(3000))
    pq.write_table(table, path / "cells.parquet", row_group_size=1000)
    decoded = parquet_io.read_parquet(path / "cells.parquet", cells_types(path), x.feature_ids, path)
    want = x.measurements.copy()
    want[[10, 2500], 3] = np.nan
    want[:, 8] = np.nan
    np.testing.assert_array_equal(decoded.matrix, want)
    assert decoded.matrix.flags.c_contiguous
    assert decoded.stored_nan == {x.feature_ids[3]: 2}
    codes, _ = first_seen_codes(x.cells["image_id"])
    assert_stats_equal(decoded.stats, expected_stats(want, codes, 3))
    assert decoded.stats.stored_nonfinite == {x.feature_ids[3]: 2}


@given(cellspecs(max_cells=12, max_features=4))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_read_reports_what_validate_reports(tmp_path_factory, x):
    """Stats from decoding equal a fresh pass over the read object, and give the same report."""
    path = cs.write(x, tmp_path_factory.mktemp("s") / "x")
    y = cs.read(path)
    decoded = parquet_io.read_parquet(path / "cells.parquet", cells_types(path), y.feature_ids, path)
    codes, names = first_seen_codes(y.cells["image_id"])
    assert_stats_equal(decoded.stats, expected_stats(y.measurements, codes, len(names)))
    with_decoded = cs.validate(y, stats=decoded.stats)
    fresh = cs.validate(y)
    assert [(r.name, r.status, r.message) for r in with_decoded.results] == \
        [(r.name, r.status, r.message) for r in fresh.results]


def test_matrix_checks_fail_on_what_the_stats_found():
    x = cs.example(n_cells=200, n_features=12)
    m = x.measurements.copy()
    m[5, 0] = np.inf
    m[:, 1] = -m[:, 1]  # negative intensities (cell:DAPI:median)
    m[(x.cells["image_id"] == "img1").to_numpy(), 2] = 42.0  # constant in one image (cell:CD3e:mean)
    m[:150, 3] = np.nan  # above na_max
    report = cs.validate(x.replace(measurements=m))
    assert report.status("measurements_finite") == "fail" and report.result("measurements_finite").rows == (5,)
    assert report.result("negative_intensity").column == x.feature_ids[1]
    assert report.result("feature_support").column == x.feature_ids[2] == "cell:CD3e:mean"
    assert report.result("feature_na_fraction").column == x.feature_ids[3]
    assert report.result("feature_support").count == 1  # one feature (in one image)


@pytest.mark.parametrize("n_features", [None, 50])
def test_lazy_example_equals_the_eager_one_to_the_bit(n_features, monkeypatch):
    example = importlib.import_module("cellspec_sc.model._example")  # the package exports the function under this name

    monkeypatch.setattr(example, "_CHUNK_BYTES", 1 << 18)  # several blocks
    eager = cs.example(seed=4, n_cells=70_000, n_features=n_features, n_images=3)
    lazy = cs.example(seed=4, n_cells=70_000, n_features=n_features, n_images=3, lazy=True)
    assert hasattr(lazy.measurements, "dask") and lazy.measurements.numblocks[0] > 1
    assert lazy.replace(measurements=np.asarray(lazy.measurements), provenance=lazy.provenance).equals(eager)



def test_checks_that_need_pending_stats_run_last_and_report_in_order():
    """A staged validation runs the checks that need the matrix stats after the others, when the caller hands
    the stats over (read checks the cells while the matrix decodes), and reports exactly what validate() reports
    with the stats at hand, in the vocabulary's order."""
    x = cs.example(n_cells=300, n_features=12)
    m = x.measurements.copy()
    m[5, 2] = np.inf
    m[:, 3] = -1.0
    x = x.replace(measurements=m, provenance=x.provenance)
    codes, names = first_seen_codes(x.cells["image_id"])
    with staged_validation(x) as staged:
        waiting = {chk.name for chk in staged._waiting}
        assert {"measurements_finite", "negative_intensity"} <= waiting
        pending = staged.finish(matrix_stats(x.measurements, codes, len(names)))
    now = cs.validate(x)
    assert [(c.name, c.status, c.message) for c in pending.results] == \
        [(c.name, c.status, c.message) for c in now.results]
    assert pending.status("measurements_finite") == "fail" and pending.status("negative_intensity") == "warn"


def test_stored_nan_found_by_the_reader_fails_measurements_finite(tmp_path):
    x = cs.example(n_cells=50, n_features=6)
    path = cs.write(x, tmp_path / "x")
    table = pq.read_table(path / "cells.parquet")
    stored = table.column(x.feature_ids[1]).to_numpy(zero_copy_only=False).copy()
    stored[7] = np.nan
    table = table.set_column(table.schema.get_field_index(x.feature_ids[1]), x.feature_ids[1], pa.array(stored))
    pq.write_table(table, path / "cells.parquet")
    decoded = parquet_io.read_parquet(path / "cells.parquet", cells_types(path), x.feature_ids, path, wait=False)
    report = cs.validate(x, stats=decoded.stats.result())
    assert report.status("measurements_finite") == "fail"
    assert (f"{x.feature_ids[1]}: 1 NaN/infinite value(s) stored as numbers"
            in report.result("measurements_finite").message)


@pytest.mark.parametrize("order", ["grouped", "a few runs", "interleaved"])
def test_column_stats_equal_block_stats_however_images_are_ordered(tmp_path, monkeypatch, order):
    """Decoded columns are reduced per run of one image (1-D, before the copy); when images are
    interleaved (more runs than worth it) the row blocks are reduced instead. Both give the stats by
    the definition, with NaN, infinities and negatives in the matrix."""
    monkeypatch.setattr(parquet_matrix, "_THREADED_ROWS", 1)  # every row group takes the column path
    monkeypatch.setattr(parquet_io, "_ROW_GROUP_BYTES", 1 << 16)
    x = cs.example(n_cells=3000, n_features=20, n_images=3)
    rows = np.arange(3000)
    if order == "a few runs":
        rows = np.concatenate([rows[::2], rows[1::2]])  # images come round twice
    elif order == "interleaved":
        rows = np.random.default_rng(0).permutation(3000)
    x = x.subset(cells=rows)
    m = x.measurements.copy()
    m[::11, 4] = np.nan
    m[100:140, 6] = -2.0
    x = x.replace(measurements=m, provenance=x.provenance)
    path = cs.write(x, tmp_path / "x")
    want = x.measurements.copy()
    want[[7, 2900], 5] = [np.inf, -np.inf]  # infinities cannot be written by cs.write: stored by pyarrow
    table = pq.read_table(path / "cells.parquet")
    at = table.schema.get_field_index(x.feature_ids[5])
    pq.write_table(table.set_column(at, x.feature_ids[5], pa.array(want[:, 5])), path / "cells.parquet",
                   row_group_size=700)
    decoded = parquet_io.read_parquet(path / "cells.parquet", cells_types(path), x.feature_ids, path)
    codes, names = first_seen_codes(x.cells["image_id"])
    assert_stats_equal(decoded.stats, expected_stats(want, codes, len(names)))
    np.testing.assert_array_equal(decoded.matrix, want)


@pytest.mark.parametrize("fmt", ["parquet", "tsv"])
def test_read_layout_f_gives_the_same_object_column_major(tmp_path, monkeypatch, fmt):
    """read(layout="F") fills a column-major matrix (a copy per column, no transposition): equal values,
    the same stats and report, and it writes back to the same directory content."""
    monkeypatch.setattr(parquet_io, "_ROW_GROUP_BYTES", 1 << 16)
    x = cs.example(n_cells=5000, n_features=30, n_images=3)
    m = x.measurements.copy()
    m[::13, 2] = np.nan
    m[40:60, 3] = -1.0
    x = x.replace(measurements=m, provenance=x.provenance)
    path = cs.write(x, tmp_path / "x", format=fmt)
    y, c_order = cs.read(path, layout="F"), cs.read(path)  # (the TSV variant rounds: compare with a C read)
    assert y.measurements.flags.f_contiguous and not y.measurements.flags.c_contiguous
    assert y.equals(c_order) and (fmt == "tsv" or y.equals(x))
    fresh = y.replace(measurements=np.ascontiguousarray(y.measurements), provenance=y.provenance)
    assert [(r.name, r.status, r.message) for r in cs.validate(y).results] == \
        [(r.name, r.status, r.message) for r in cs.validate(fresh).results]
    assert cs.read(cs.write(y, tmp_path / "again", format=fmt)).equals(c_order)
    with pytest.raises(cs.InputError, match="layout"):
        cs.read(path, layout="A")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.one_of(st.none(), st.sampled_from(["", "img1", "001", "1", "Bild ä", "区域", "a\x00b"])),
                         max_size=8), min_size=1, max_size=4))
def test_arrow_first_seen_codes_equal_pandas_factorize(chunks):
    """Codes of the image_id column taken from Arrow before the cells frame exists (so decoding can start
    early) are those validation takes from the pandas column: NA, empty text, non-ASCII, chunks."""
    column = pa.chunked_array([pa.array(c, pa.string()) for c in chunks], pa.string())
    codes, names = arrow_first_seen_codes(column)
    want_codes, want_names = first_seen_codes(pd.Series(column.to_pylist(), dtype=PANDAS_DTYPES["character"]))
    assert codes.dtype == want_codes.dtype and codes.tolist() == want_codes.tolist()
    assert names.dtype == want_names.dtype and names.tolist() == want_names.tolist()


def test_read_starts_decoding_with_the_image_codes_validation_uses(tmp_path, monkeypatch):
    """A foreign file whose image_id is dictionary-encoded, in several row groups, with NA: the reader's
    stats carry the image codes of the cells table, and validation of the object uses them (same report
    as validating a copy that shares nothing with the read)."""
    monkeypatch.setattr(parquet_matrix, "_DECODE_BYTES", 1 << 12)
    monkeypatch.setattr(parquet_io, "_EARLY_ROWS", 1)  # decoding starts before the cells table is read
    x = cs.example(n_cells=2000, n_features=10, n_images=3)
    path = cs.write(x, tmp_path / "x")
    table = pq.read_table(path / "cells.parquet")
    i = table.schema.get_field_index("image_id")
    table = table.set_column(i, "image_id", table.column("image_id").dictionary_encode())
    pq.write_table(table, path / "cells.parquet", row_group_size=300)
    decoded = parquet_io.read_parquet(path / "cells.parquet", cells_types(path), x.feature_ids, path, wait=False)
    codes, names = decoded.stats.image_codes
    want_codes, want_names = first_seen_codes(decoded.frame["image_id"])
    assert codes.tolist() == want_codes.tolist() and names.tolist() == want_names.tolist() == ["img1", "img2", "img3"]
    decoded.stats.result()
    x.cells.loc[5, "image_id"] = None  # NA image: code -1, and a failing check that names the row
    table = table.set_column(i, "image_id", pa.array(x.cells["image_id"], pa.string()).dictionary_encode())
    pq.write_table(table, path / "cells.parquet", row_group_size=300)
    reseal(path)
    with pytest.raises(cs.ValidationError) as info:
        cs.read(path)
    fresh = cs.validate(x.replace(measurements=x.measurements.copy()))
    assert [(c.name, c.status, c.message) for c in info.value.report.results] == \
        [(c.name, c.status, c.message) for c in fresh.results]
    assert info.value.report.status("cells_ids_present") == "fail"


_ID_PIECES = st.sampled_from(["0", "1", "01", "001", "7", "10", "+2", "-3", "", "x", "٣", " 4", "9" * 18, "9" * 19,
                              "1" + "0" * 18])


@given(st.lists(st.lists(_ID_PIECES, min_size=1, max_size=3).map("".join), min_size=0, max_size=30),
       st.booleans())
@settings(max_examples=200, deadline=None)
def test_cell_id_codes_are_first_seen_codes_of_the_text(ids, increasing):
    """The integer fast path of arrow_code_array (ids that read as increasing integers get their positions) never
    merges ids that differ as text ("1" and "01"), nor refuses ids beyond int64, signs, blanks or non-ASCII digits."""
    from cellspec_sc.model import arrow_code_array

    if increasing:  # the fast path's own input: increasing decimal ids, some with leading zeros or many digits
        ids = [("0" * (i % 3)) + str(10 ** (i % 20) + i) for i in range(len(ids))]
    seen: dict[str, int] = {}
    expected = [seen.setdefault(i, len(seen)) for i in ids]
    got = arrow_code_array(pa.array(ids, type=pa.large_string())).tolist()
    assert got == expected, (ids, got)


@given(st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "", "é", "a\x00"]), st.text(max_size=3)),
                max_size=30))
@settings(max_examples=100, deadline=None)
def test_first_seen_codes_of_arrow_text_are_pandas_factorize(values):
    series = pd.Series(values, dtype="string[pyarrow]")
    codes, names = first_seen_codes(series)
    want_codes, want_names = pd.factorize(series, use_na_sentinel=True)
    assert codes.dtype == np.int64 and names.dtype == object
    np.testing.assert_array_equal(codes, want_codes)
    assert list(names) == list(want_names) and all(type(n) is str for n in names)
