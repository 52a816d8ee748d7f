"""X as the measurement matrix: a dense view of it, the sample of cells ``to_anndata`` keeps, and whether ``X``
still holds the values written (raw measurements, spec section 3).

``from_anndata`` takes ``X`` when it holds what ``to_anndata`` wrote: all of it, in its order, is compared with
the fingerprint of the record (:mod:`._record`); a subset or reordering (``adata[mask]``, ``adata[order]``,
``adata[:, features]``), of which the fingerprint says nothing, is compared with every value of a sample of cells
kept in ``uns["cellspec"]``. A subset keeps the values of the cells and features it keeps: each sampled cell still
there (found by its obs name) must hold, for each feature still there (found by its id), the very bits it was
written with. A subset transformed in place (``sc.pp.log1p(adata[mask].copy())``) changes them; a reordering does
not. The check is as strong as the sample is large: a change confined to cells outside the sample goes unseen (up
to :data:`MOST_ROWS` cells, evenly spread, at most :data:`MOST_VALUES` values).

>>> m = np.arange(12.0).reshape(6, 2)
>>> names = pd.Index([f"c{i}" for i in range(6)])
>>> sample = take_sample(m, names)
>>> sample_check(m[::-1], names[::-1], pd.Index(["a", "b"]), sample, ["a", "b"])  # reordered: the same values
SampleCheck(cells=6, differing=0)
>>> sample_check(np.log1p(m[:3]), names[:3], pd.Index(["a", "b"]), sample, ["a", "b"]).differing
3
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cellspec_sc.bridges.anndata._keys import warn
from cellspec_sc.bridges.anndata._record import Fingerprinting, Sample, StoredRecord
from cellspec_sc.errors import InputError

if TYPE_CHECKING:
    import anndata

MOST_ROWS = 2048
MOST_VALUES = 1 << 19  # 4 MB of float64 in uns at most, whatever the number of features
MODIFIED = "X no longer holds the values written by to_anndata"


def dense(matrix: Any) -> np.ndarray:
    """A sparse or array-like matrix as a numpy array (no copy when it is one already).

    >>> dense(np.eye(2)).sum()
    np.float64(2.0)
    """
    if hasattr(matrix, "toarray"):
        return matrix.toarray()
    return np.asarray(matrix)


def is_dask(matrix: Any) -> bool:
    """Whether ``matrix`` is a dask array (``cellspec_sc.read(path, lazy=True)``)."""
    return type(matrix).__module__.startswith("dask.")


# -- the sample of cells -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SampleCheck:
    """How many sampled cells were compared (every feature still there), and how many of them differ."""

    cells: int
    differing: int
    rows: tuple[str, ...] = ()  # obs names of the first differing cells
    columns: tuple[str, ...] = ()  # var names of the features in which they differ

    def __repr__(self) -> str:
        return f"SampleCheck(cells={self.cells}, differing={self.differing})"

    def where(self) -> str:
        """The differing cells and features, for a message (the first few of each)."""
        return (f"cells {_first(self.rows, self.differing)} differ in features "
                f"{_first(self.columns, len(self.columns))}")


def _first(names: Sequence[str], count: int) -> str:
    return ", ".join(names[:5]) + (f" and {count - 5} more" if count > 5 else "")


def sampled_rows(n_rows: int, n_features: int) -> np.ndarray:
    """Positions of the sampled rows: evenly spread, at most :data:`MOST_ROWS` and :data:`MOST_VALUES` values.

    >>> sampled_rows(10, 3).tolist(), len(sampled_rows(10**6, 200)), len(sampled_rows(10, 10**6))
    ([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 2048, 1)
    """
    k = min(n_rows, MOST_ROWS, max(1, MOST_VALUES // max(n_features, 1)))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.linspace(0, n_rows - 1, k).round().astype(np.int64))


def take_sample(matrix: np.ndarray, obs_names: pd.Index) -> Sample:
    """The sampled rows of ``matrix`` (all columns, float64) and their obs names, for ``uns``."""
    rows = sampled_rows(matrix.shape[0], matrix.shape[1])
    return Sample(obs_names=np.asarray(obs_names[rows], dtype=str),
                  values=np.ascontiguousarray(matrix[rows], dtype=np.float64))


def sample_check(matrix: np.ndarray, obs_names: pd.Index, var_names: pd.Index, sample: Sample,
                 feature_ids: Sequence[str]) -> SampleCheck | None:
    """Compare ``matrix`` (rows named ``obs_names``, columns ``var_names``) with ``sample`` (written for the
    features ``feature_ids``) bit for bit, at the sampled cells and the features still there; None when
    values are left but none can be compared (no sampled cell or no written feature left, or obs names that
    repeat).

    >>> sample_check(np.zeros((0, 2)), pd.Index([]), pd.Index(["a", "b"]), take_sample(np.ones((4, 2)),
    ...              pd.Index(list("wxyz"))), ["a", "b"])  # no values left: nothing to check
    SampleCheck(cells=0, differing=0)
    """
    if 0 in matrix.shape:
        return SampleCheck(cells=0, differing=0)
    names = pd.Index(obs_names.astype(str))
    if not names.is_unique:
        return None
    rows = names.get_indexer(pd.Index([str(n) for n in sample.obs_names.tolist()], dtype=object))
    cols = pd.Index(var_names.astype(str)).get_indexer(pd.Index(list(map(str, feature_ids))))
    kept_rows, kept_cols = np.flatnonzero(rows >= 0), np.flatnonzero(cols >= 0)
    if not len(kept_rows) or not len(kept_cols):
        return None
    now = np.asarray(matrix[rows[kept_rows]][:, cols[kept_cols]], dtype=np.float64)
    then = np.asarray(sample.values, dtype=np.float64)[np.ix_(kept_rows, kept_cols)]
    equal = np.ascontiguousarray(now).view(np.uint64) == np.ascontiguousarray(then).view(np.uint64)
    same = equal.all(axis=1)
    differing_rows = np.flatnonzero(~same)
    differing_cols = np.flatnonzero(~equal.all(axis=0))
    return SampleCheck(cells=len(kept_rows), differing=int(len(differing_rows)),
                       rows=tuple(str(sample.obs_names[kept_rows[i]]) for i in differing_rows[:5]),
                       columns=tuple(str(feature_ids[kept_cols[j]]) for j in differing_cols))


# -- X back as the measurements ----------------------------------------------------------------------------------
def measurements_from_x(adata: anndata.AnnData, matrix: np.ndarray, stored: StoredRecord, allow_modified: bool,
                        changes: dict[str, Any], written: Fingerprinting | None) -> np.ndarray:
    """The measurements: ``adata.raw`` when it holds the values written, else ``X`` (``matrix``, dense) when it
    still holds them or ``allow_modified`` (noted in ``changes``); ``written``: X's fingerprint, under way."""
    raw = raw_measurements(adata, stored)
    if raw is not None:
        return raw
    problem = None
    if np.asarray(matrix).dtype != np.float64:
        problem = f"X has dtype {np.asarray(matrix).dtype}, not the float64 measurements written by to_anndata"
    elif _as_written(matrix, var_feature_ids(adata.var), stored, changes):  # the fingerprint covers every value
        if not stored.fingerprint.matches(matrix, written):
            problem = _described(adata, matrix, stored)
    else:  # rows or columns subset or reordered: the sample of cells in uns
        problem = _sample_problem(adata, matrix, stored)
    if problem is not None:
        if not allow_modified:
            raise InputError(f"{problem}. cellspec measurements are raw values (spec section 3): keep raw values "
                             "in X and put transforms in adata.layers, or pass allow_modified=True to store X "
                             "as it is now (recorded in provenance history)")
        changes["measurements_modified"] = problem
    if matrix.shape[0] != stored.shape[0]:
        changes["cells_before"], changes["cells_after"] = stored.shape[0], int(matrix.shape[0])
    out = np.asarray(matrix, dtype=np.float64)
    return out if out.flags.c_contiguous or out.flags.f_contiguous else np.ascontiguousarray(out)


def var_feature_ids(var: pd.DataFrame) -> pd.Index:
    """The feature ids of ``var``'s rows: its ``feature_id`` column, which :func:`to_anndata` always writes (the
    index holds marker names with ``var_names="marker"``), else the index.

    >>> var_feature_ids(pd.DataFrame({"feature_id": ["cell:CD3e:mean"]}, index=["CD3e"])).tolist()
    ['cell:CD3e:mean']
    """
    if "feature_id" in var.columns:
        return pd.Index(var["feature_id"].astype(object).map(str), dtype=object)
    return pd.Index(var.index.map(str), dtype=object)


def x_fingerprint(matrix: np.ndarray, stored: StoredRecord) -> Fingerprinting | None:
    """X's fingerprint by the algorithm of the record, under way in the background while obs and var are
    restored; None when X cannot hold the written values (another dtype or shape)."""
    if matrix.dtype != np.float64 or tuple(matrix.shape) != stored.shape:
        return None
    return stored.fingerprint.start(matrix)


def _as_written(matrix: np.ndarray, var_names: pd.Index, stored: StoredRecord, changes: Mapping[str, Any]) -> bool:
    """Whether X has the rows and columns written, in their order (cell and image ids unchanged)."""
    reordered = {"cell_id", "image_id"} & set(changes.get("cells_columns_changed", ()))
    return tuple(matrix.shape) == stored.shape and not reordered and \
        list(map(str, var_names)) == stored.feature_ids


def _sample_problem(adata: anndata.AnnData, matrix: np.ndarray, stored: StoredRecord) -> str | None:
    """What is wrong with a subset or reordered X at the sampled cells (None: nothing), warning when it cannot be
    checked."""
    if stored.sample is None:
        return None  # written before samples were kept (or from a lazy X): as before, not checked
    found = sample_check(matrix, adata.obs.index, var_feature_ids(adata.var), stored.sample, stored.feature_ids)
    if found is None:
        warn("X could not be checked against the values to_anndata wrote: none of the cells it sampled is left "
             "(or obs names repeat); make sure X still holds raw measurements")
        return None
    if found.differing:
        return (f"X no longer holds the values written by to_anndata: {found.differing} of the {found.cells} "
                f"sampled cells still there differ ({found.where()})")
    return None


def _described(adata: anndata.AnnData, matrix: np.ndarray, stored: StoredRecord) -> str:
    """What changed in an X of the shape written whose fingerprint differs: the sampled cells and features that
    differ, or that the change lies outside the sampled cells."""
    found = None if stored.sample is None else \
        sample_check(matrix, adata.obs.index, adata.var_names, stored.sample, stored.feature_ids)
    if found is None:
        return f"{MODIFIED} (its fingerprint differs; no sample of cells was recorded to say where)"
    if found.differing:
        return f"{MODIFIED}: {found.differing} of the {found.cells} sampled cells differ ({found.where()})"
    return (f"{MODIFIED}: its fingerprint differs, in cells other than the {found.cells} cells to_anndata "
            "sampled (every sampled cell holds its values as written)")


def raw_measurements(adata: anndata.AnnData, stored: StoredRecord) -> np.ndarray | None:
    """The measurements from ``adata.raw`` (scanpy's ``adata.raw = adata`` before ``log1p``), when
    ``raw.X`` still holds exactly what ``to_anndata`` wrote; columns follow ``adata.var``."""
    raw = adata.raw
    if raw is None or raw.X is None or tuple(raw.shape) != stored.shape:
        return None
    matrix = dense(raw.X)
    if matrix.dtype != np.float64 or not stored.fingerprint.matches(matrix):
        return None
    positions = pd.Index(list(map(str, var_feature_ids(raw.var)))).get_indexer(
        list(map(str, var_feature_ids(adata.var))))
    if (positions < 0).any():
        return None
    return (matrix if np.array_equal(positions, np.arange(matrix.shape[1]))
            else np.ascontiguousarray(matrix[:, positions]))
