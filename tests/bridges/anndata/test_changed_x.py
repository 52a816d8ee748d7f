"""X changed since ``to_anndata``: refused unless ``allow_modified=True``, or taken from ``adata.raw`` when that still
holds the values written. As written, X is compared with its fingerprint in ``uns["cellspec"]`` (what
``to_anndata`` records, an X edited in place in any row part, first half or second, whatever X's layout, and records
of earlier versions); subset or reordered, with the sample of cells kept there.

The expected digests are built here from xxhash directly, the way the format is documented, not by the code
under test.
"""

from __future__ import annotations

import json
import warnings

import anndata as ad
import numpy as np
import pytest
import scipy.sparse
import xxhash

import cellspec_sc as cs
from cellspec_sc.bridges.anndata import AnnDataBridgeWarning
from cellspec_sc.bridges.anndata._record import text_fingerprint


def shape_bytes(m: np.ndarray) -> bytes:
    return np.asarray(m.shape, dtype=np.int64).tobytes()


def c_bytes(m: np.ndarray) -> bytes:
    return np.ascontiguousarray(m, dtype=np.float64).tobytes()


def split_record(m: np.ndarray, parts: int) -> str:
    """``xxh3_128x<N>``: the digest of the shape and of each row part's own digest."""
    bounds = [i * m.shape[0] // parts for i in range(parts + 1)]
    digests = b"".join(xxhash.xxh3_128(c_bytes(m[a:b])).digest() for a, b in zip(bounds, bounds[1:], strict=False))
    return f"xxh3_128x{parts}:" + xxhash.xxh3_128(shape_bytes(m) + digests).hexdigest()


def old_record(m: np.ndarray) -> str:
    """What versions before the split recorded: one xxh3-128 over the shape and every value in C order."""
    return "xxh3_128:" + xxhash.xxh3_128(shape_bytes(m) + c_bytes(m)).hexdigest()


def recorded(adata: ad.AnnData) -> str:
    return json.loads(adata.uns["cellspec"]["meta"])["measurements_fingerprint"]


def with_record(adata: ad.AnnData, fingerprint: str) -> ad.AnnData:
    meta = json.loads(adata.uns["cellspec"]["meta"])
    meta["measurements_fingerprint"] = fingerprint
    adata.uns["cellspec"]["meta"] = json.dumps(meta)
    adata.uns["cellspec"]["meta_fingerprint"] = text_fingerprint(adata.uns["cellspec"]["meta"])  # as a crafted record
    return adata


@pytest.fixture(scope="module")
def big():
    """Large enough (20 MB of X) that its row parts are shared out between two threads."""
    return cs.example(n_cells=20_000, n_features=130)


def own_copy(x):
    """The object as the AnnData gets it: to_anndata gives X as the AnnData's own copy."""
    return x


def nudged(adata: ad.AnnData, row: int) -> ad.AnnData:
    """One value of X made the next larger double, in place."""
    adata.X[row, 3] = np.nextafter(adata.X[row, 3], np.inf)
    return adata


@pytest.mark.parametrize("size", ["small", "big"])
def test_to_anndata_records_the_digest_of_four_row_parts(size, x, big):
    y = x if size == "small" else big
    adata = cs.to_anndata(y)
    assert recorded(adata) == split_record(y.measurements, 4)
    assert recorded(adata) != split_record(y.measurements[::-1], 4)


def test_computed_at_once_by_the_caller_and_a_thread_it_is_the_same(big):
    from cellspec_sc.bridges.anndata._record import measurement_fingerprint

    assert measurement_fingerprint(big.measurements) == split_record(big.measurements, 4)
    assert measurement_fingerprint(big.measurements, "xxh3_128x2") == split_record(big.measurements, 2)


def edge_rows(n: int, parts: int = 4) -> list[int]:
    """The first and last row of every part."""
    bounds = [i * n // parts for i in range(parts + 1)]
    return sorted({row for a, b in zip(bounds, bounds[1:], strict=False) for row in (a, b - 1)})


@pytest.mark.parametrize("size", ["small", "big"])
@pytest.mark.parametrize("half", ["first", "second"])
def test_one_value_edited_in_either_half_is_noticed(size, half, x, big):
    y = x if size == "small" else big
    adata = cs.to_anndata(own_copy(y))
    assert cs.from_anndata(adata).equals(y)
    rows = [r for r in edge_rows(y.n_cells) if (r < y.n_cells // 2) == (half == "first")]
    assert len(rows) == 4
    for row in rows:
        edited = nudged(cs.to_anndata(own_copy(y)), row)
        with pytest.raises(cs.CellspecError, match="allow_modified=True"):
            cs.from_anndata(edited)


@pytest.mark.parametrize("parts", [2, 3])
def test_a_record_split_in_other_parts_verifies(parts, big):
    """``xxh3_128x2`` was recorded by the version before this one; any N is computed by its definition."""
    adata = with_record(cs.to_anndata(own_copy(big)), split_record(big.measurements, parts))
    assert cs.from_anndata(adata).equals(big)
    for row in (0, big.n_cells - 1):
        with pytest.raises(cs.CellspecError, match="allow_modified=True"):
            cs.from_anndata(nudged(with_record(cs.to_anndata(own_copy(big)), split_record(big.measurements, parts)),
                                   row))


def test_a_record_of_the_earlier_single_digest_still_verifies(big):
    adata = with_record(cs.to_anndata(own_copy(big)), old_record(big.measurements))
    assert cs.from_anndata(adata).equals(big)
    edited = nudged(with_record(cs.to_anndata(own_copy(big)), old_record(big.measurements)), big.n_cells - 1)
    with pytest.raises(cs.CellspecError, match="X no longer holds the values written"):
        cs.from_anndata(edited)


def test_a_record_survives_h5ad(x, tmp_path):
    adata = cs.to_anndata(own_copy(x))
    adata.write_h5ad(tmp_path / "a.h5ad")
    back = ad.read_h5ad(tmp_path / "a.h5ad")
    assert recorded(back) == split_record(x.measurements, 4)
    assert cs.from_anndata(back).equals(x)
    with pytest.raises(cs.CellspecError, match="allow_modified=True"):
        cs.from_anndata(nudged(back, 50))


def test_a_record_of_another_split_does_not_match(x):
    """The tag is part of the record: the same values under the other definition are not taken as the same."""
    wrong = "xxh3_128x3:" + split_record(x.measurements, 4).partition(":")[2]
    with pytest.raises(cs.CellspecError, match="allow_modified=True"):
        cs.from_anndata(with_record(cs.to_anndata(x), wrong))


def test_an_unknown_algorithm_is_named(x):
    with pytest.raises(cs.CellspecError, match="'blake9'"):
        cs.from_anndata(with_record(cs.to_anndata(x), "blake9:00"))


@pytest.mark.parametrize("layout", ["fortran", "strided view"])
def test_x_in_another_layout_with_the_same_values_verifies(layout, big):
    """Digested a row block at a time in C order, by two threads: the same values give the same record."""
    adata = cs.to_anndata(big)
    m = big.measurements
    if layout == "fortran":
        adata.X = np.asfortranarray(m)
        assert adata.X.flags.f_contiguous and not adata.X.flags.c_contiguous
    else:
        wide = np.zeros((m.shape[0], m.shape[1] * 2))
        wide[:, ::2] = m
        adata.X = wide[:, ::2]
        assert not adata.X.flags.c_contiguous and not adata.X.flags.f_contiguous
    assert cs.from_anndata(adata).equals(big)
    for row in (1, big.n_cells - 2):
        value = adata.X[row, 0]
        adata.X[row, 0] = np.nextafter(value, np.inf)
        with pytest.raises(cs.CellspecError, match="allow_modified=True"):
            cs.from_anndata(adata)
        adata.X[row, 0] = value
        assert cs.from_anndata(adata).equals(big)


def test_a_sparse_x_with_the_written_values_verifies():
    x = cs.example()
    x = x.replace(measurements=np.nan_to_num(x.measurements))
    adata = cs.to_anndata(x)
    adata.X = scipy.sparse.csr_matrix(adata.X)
    assert cs.from_anndata(adata).equals(x)


# -- changed in place, or kept in adata.raw ------------------------------------------------------------------------
def test_x_changed_in_place_is_refused(x):
    import scanpy as sc

    adata = cs.to_anndata(x)
    sc.pp.log1p(adata)
    with pytest.raises(cs.CellspecError, match="allow_modified=True"):
        cs.from_anndata(adata)
    back = cs.from_anndata(adata, allow_modified=True)
    np.testing.assert_array_equal(back.measurements, np.log1p(x.measurements))
    assert "measurements_modified" in back.provenance["history"][-1]["details"]


def test_records_with_the_earlier_sha256_fingerprint_still_read(x):
    """AnnData files written before the xxh3 fingerprint carry ``measurements_sha256``."""
    import hashlib
    import json

    import scanpy as sc

    def as_before(adata):  # the SHA-256 of X's shape (int64) and values (float64, C order), as it was written
        meta = json.loads(adata.uns["cellspec"]["meta"])
        shape = np.asarray(adata.X.shape, dtype=np.int64).tobytes()
        meta["measurements_sha256"] = hashlib.sha256(shape + np.ascontiguousarray(adata.X).tobytes()).hexdigest()
        del meta["measurements_fingerprint"]
        adata.uns["cellspec"]["meta"] = json.dumps(meta)
        del adata.uns["cellspec"]["format_version"]  # those records are of version 1.0, written without one
        return adata

    assert cs.from_anndata(as_before(cs.to_anndata(x))).equals(x)
    changed = as_before(cs.to_anndata(x))
    sc.pp.log1p(changed)
    with pytest.raises(cs.CellspecError, match="allow_modified=True"):
        cs.from_anndata(changed)


def test_one_changed_value_of_x_is_noticed(x):
    adata = cs.to_anndata(x)
    adata.X[40, 3] = np.nextafter(adata.X[40, 3], np.inf)
    with pytest.raises(cs.CellspecError, match="allow_modified=True"):
        cs.from_anndata(adata)


def test_raw_values_kept_in_adata_raw_are_used(x):
    import scanpy as sc

    adata = cs.to_anndata(x)
    adata.raw = adata.copy()  # `adata.raw = adata` would share X's memory, and log1p would change both
    sc.pp.log1p(adata)
    sc.pp.scale(adata)
    with pytest.warns(AnnDataBridgeWarning, match="'mean', 'std'"):
        back = cs.from_anndata(adata)
    assert back.equals(x)
    shape_only = adata[:, adata.var["kind"] == "shape"]
    back_shapes = cs.from_anndata(shape_only)  # once: each call stamps its history step with the time
    assert back_shapes.equals(x.subset(features=x.features(kind="shape")).replace(provenance=back_shapes.provenance))
    np.testing.assert_array_equal(cs.from_anndata(shape_only).measurements,
                                  x.measurements[:, [x.feature_ids.index(f) for f in x.features(kind="shape")]])


# -- subsets and reorderings of X are checked at the cells to_anndata sampled --------------------------------------
def test_a_subset_changed_in_place_is_refused_also_after_disk(x, tmp_path, write_and_read):
    """``sc.pp.log1p`` after ``adata[mask]``: the fingerprint of the whole X cannot see it, the sample can."""
    import scanpy as sc

    mask = np.arange(x.n_cells) % 3 != 0
    for fmt in ("h5ad", "zarr"):
        sub = write_and_read(cs.to_anndata(x)[mask].copy(), tmp_path / fmt, fmt)
        sc.pp.log1p(sub)
        with pytest.raises(cs.CellspecError, match=r"sampled cells still there differ.*allow_modified=True"):
            cs.from_anndata(sub)
        back = cs.from_anndata(sub, allow_modified=True)
        np.testing.assert_array_equal(back.measurements, np.log1p(x.measurements[mask]))
        assert "sampled cells" in back.provenance["history"][-1]["details"]["measurements_modified"]


def test_one_changed_value_of_a_sampled_cell_in_a_subset_is_noticed(x):
    adata = cs.to_anndata(x)[10:30].copy()  # 80 cells: every one is sampled
    adata.X[5, 2] = -0.0 if adata.X[5, 2] == 0 else 0.0  # one bit is enough
    with pytest.raises(cs.CellspecError, match="1 of the 20 sampled cells"):
        cs.from_anndata(adata)


def test_reordered_rows_and_columns_come_back_with_their_values(rich, tmp_path, write_and_read):
    """Sorting cells (by cluster, say) and features keeps every value: not an in-place change."""
    rows = np.random.default_rng(3).permutation(rich.n_cells)
    cols = np.random.default_rng(4).permutation(len(rich.feature_ids))
    adata = cs.to_anndata(rich)
    for fmt in ("h5ad", "zarr"):
        moved = write_and_read(adata[rows, cols].copy(), tmp_path / fmt, fmt)
        with warnings.catch_warnings():
            warnings.simplefilter("error", AnnDataBridgeWarning)
            back = cs.from_anndata(moved)
        assert back.cells["cell_id"].tolist() == rich.cells["cell_id"].to_numpy()[rows].tolist()
        assert back.feature_ids == [rich.feature_ids[j] for j in cols]
        expected = rich.measurements[rows][:, cols]
        assert back.measurements.view(np.uint64).tolist() == expected.view(np.uint64).tolist()  # -0.0, NaN too
        assert "measurements_modified" not in back.provenance["history"][-1]["details"]


def test_a_subset_without_any_sampled_cell_is_read_with_a_warning(x, monkeypatch):
    import cellspec_sc.bridges.anndata._matrix as sample

    monkeypatch.setattr(sample, "MOST_ROWS", 4)  # cells 0, 26, 53 and 79 are sampled
    adata = cs.to_anndata(x)
    assert adata.uns["cellspec"]["measurements_sample"]["obs_names"].tolist() == \
        adata.obs_names[[0, 26, 53, 79]].tolist()
    with pytest.warns(AnnDataBridgeWarning, match="none of the cells it sampled is left"):
        back = cs.from_anndata(adata[1:20].copy())
    np.testing.assert_array_equal(back.measurements, x.measurements[1:20])
    with warnings.catch_warnings():
        warnings.simplefilter("error", AnnDataBridgeWarning)
        assert cs.from_anndata(adata[20:30, []].copy()).measurements.shape == (10, 0)  # no values: nothing to check


def test_records_without_a_sample_read_subsets_as_before(x):
    import scanpy as sc

    adata = cs.to_anndata(x)
    del adata.uns["cellspec"]["measurements_sample"]  # written by an earlier version
    sub = adata[::2].copy()
    sc.pp.log1p(sub)
    np.testing.assert_array_equal(cs.from_anndata(sub).measurements, np.log1p(x.measurements[::2]))
