"""X's fingerprint in ``uns["cellspec"]``: what ``to_anndata`` records, how ``from_anndata`` notices an X edited
in place (in any row part, first half or second, whatever X's layout), and that records written by earlier versions
still verify.

The expected digests are built here from xxhash directly, the way the format is documented, not by the code
under test.
"""

from __future__ import annotations

import json

import anndata as ad
import numpy as np
import pytest
import scipy.sparse
import xxhash

import cellspec_sc as cs


def shape_bytes(m: np.ndarray) -> bytes:
    return np.asarray(m.shape, dtype=np.int64).tobytes()


def c_bytes(m: np.ndarray) -> bytes:
    return np.ascontiguousarray(m, dtype=np.float64).tobytes()


def split_record(m: np.ndarray, parts: int) -> str:
    """``xxh3_128x<N>``: the digest of the shape and of each row part's own digest."""
    bounds = [i * m.shape[0] // parts for i in range(parts + 1)]
    digests = b"".join(xxhash.xxh3_128(c_bytes(m[a:b])).digest() for a, b in zip(bounds, bounds[1:]))
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
    return adata


@pytest.fixture(scope="module")
def big():
    """Large enough (20 MB of X) that its row parts are shared out between two threads."""
    return cs.example(n_cells=20_000, n_features=130)


def own_copy(x):
    """The object as the tests had it before to_anndata copied X: now to_anndata's own copy suffices."""
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
    from cellspec_sc.bridges.anndata_fingerprint import measurement_fingerprint

    assert measurement_fingerprint(big.measurements) == split_record(big.measurements, 4)
    assert measurement_fingerprint(big.measurements, "xxh3_128x2") == split_record(big.measurements, 2)


def edge_rows(n: int, parts: int = 4) -> list[int]:
    """The first and last row of every part."""
    bounds = [i * n // parts for i in range(parts + 1)]
    return sorted({row for a, b in zip(bounds, bounds[1:]) for row in (a, b - 1)})


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
