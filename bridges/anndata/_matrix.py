"""Every value of a sample of cells, kept by ``to_anndata`` in ``uns["cellspec"]``, so that ``from_anndata`` can
check an ``X`` whose rows or columns were subset or reordered (``adata[mask]``, ``adata[order]``,
``adata[:, features]``): the fingerprint of :mod:`.anndata_fingerprint` covers the matrix as written, in its
order, and says nothing about a part of it.

A subset keeps the values of the cells and features it keeps: each sampled cell still there (found by its obs
name) must hold, for each feature still there (found by its id), the very bits it was written with. A subset
transformed in place (``sc.pp.log1p(adata[mask].copy())``) changes them; a reordering does not. The check is
as strong as the sample is large: a change confined to cells outside the sample goes unseen (up to
:data:`MOST_ROWS` cells, evenly spread, at most :data:`MOST_VALUES` values).

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
from typing import Any

import numpy as np
import pandas as pd

SAMPLE_KEY = "measurements_sample"
MOST_ROWS = 2048
MOST_VALUES = 1 << 19  # 4 MB of float64 in uns at most, whatever the number of features


@dataclass(frozen=True)
class SampleCheck:
    """How many sampled cells were compared (every feature still there), and how many of them differ."""

    cells: int
    differing: int


def sampled_rows(n_rows: int, n_features: int) -> np.ndarray:
    """Positions of the sampled rows: evenly spread, at most :data:`MOST_ROWS` and :data:`MOST_VALUES` values.

    >>> sampled_rows(10, 3).tolist(), len(sampled_rows(10**6, 200)), len(sampled_rows(10, 10**6))
    ([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 2048, 1)
    """
    k = min(n_rows, MOST_ROWS, max(1, MOST_VALUES // max(n_features, 1)))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.linspace(0, n_rows - 1, k).round().astype(np.int64))


def take_sample(matrix: np.ndarray, obs_names: pd.Index) -> dict[str, np.ndarray]:
    """The sampled rows of ``matrix`` (all columns, float64) and their obs names, for ``uns``."""
    rows = sampled_rows(matrix.shape[0], matrix.shape[1])
    return {"obs_names": np.asarray(obs_names[rows], dtype=str),
            "values": np.ascontiguousarray(matrix[rows], dtype=np.float64)}


def sample_check(matrix: np.ndarray, obs_names: pd.Index, var_names: pd.Index, sample: Mapping[str, Any],
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
    rows = names.get_indexer(pd.Index([str(n) for n in np.asarray(sample["obs_names"]).tolist()], dtype=object))
    cols = pd.Index(var_names.astype(str)).get_indexer(pd.Index(list(map(str, feature_ids))))
    kept_rows, kept_cols = np.flatnonzero(rows >= 0), np.flatnonzero(cols >= 0)
    if not len(kept_rows) or not len(kept_cols):
        return None
    now = np.asarray(matrix[rows[kept_rows]][:, cols[kept_cols]], dtype=np.float64)
    then = np.asarray(sample["values"], dtype=np.float64)[np.ix_(kept_rows, kept_cols)]
    same = (np.ascontiguousarray(now).view(np.uint64) == np.ascontiguousarray(then).view(np.uint64)).all(axis=1)
    return SampleCheck(cells=len(kept_rows), differing=int(np.count_nonzero(~same)))
