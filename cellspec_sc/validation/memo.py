"""Validate an object once: its report is kept on it, keyed by a content token, and reused while the
object is unchanged.

``read`` validates what it returns, ``write`` must refuse an invalid object, ``cellspec validate DIR``
reads then reports: without a memory of the report each of these would walk the matrix again. The
token (:func:`content_token`) is an xxh3-128 digest of every component's values, at the speed of
memory (160 MB of matrix in about 20 ms), so an object whose table was edited in place
(``x.cells.loc[3, "x"] = -1``) or given a new component gets a fresh validation (the matrix itself is
read-only).

>>> import cellspec_sc as cs
>>> x = cs.example()
>>> report = cs.validate(x)
>>> cs.validate(x) is report
True
>>> x.cells.loc[3, "x"] = -1.0e9
>>> cs.validate(x).status("centroids_within_image")
'warn'
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import xxhash

from cellspec_sc.model.cellspec import COMPONENTS, CellSpec
from cellspec_sc.model.digest import array_digest, frame_digest
from cellspec_sc.validation.report import ValidationReport

SPLIT_BYTES = 1 << 26  # matrices at least this big are digested in two halves at once


def content_token(x: Any, items: Callable[[str, pd.DataFrame], list[tuple[Any, pd.Series]]] | None = None
                  ) -> str | None:
    """A digest of every component of ``x`` (None when ``x`` cannot be fingerprinted cheaply: not a
    CellSpec, or a matrix that is not an in-memory numpy array, such as a lazy read's dask array).
    ``items(name, frame)`` gives ``list(frame.items())`` of a table when the caller made its columns already.

    >>> import cellspec_sc as cs
    >>> x = cs.example()
    >>> content_token(x) == content_token(x.replace()) != content_token(x.replace(provenance={}))
    True
    """
    if not isinstance(x, CellSpec) or not isinstance(x.measurements, np.ndarray) or x.measurements.dtype.hasobject:
        return None
    parts = []
    later = _second_half(x.measurements)
    try:
        for name in COMPONENTS:
            value = getattr(x, name)
            parts.append(_matrix_digest(value, later) if value is x.measurements else
                         array_digest(value, same_nan=False) if isinstance(value, np.ndarray) else
                         frame_digest(value, items and items(name, value)) if isinstance(value, pd.DataFrame) else
                         json.dumps(value, sort_keys=True, default=repr))
    except (TypeError, ValueError, pa.ArrowException):  # a malformed object: validate it every time
        return None
    return xxhash.xxh3_128("|".join(parts).encode()).hexdigest()


def _second_half(m: np.ndarray) -> Future[str] | None:
    """The digest of the second half of the rows of a matrix of at least ``SPLIT_BYTES`` (C order), started
    in a thread: xxhash lets go of the GIL, so the two halves take half the time on two cores."""
    if m.nbytes < SPLIT_BYTES or m.ndim != 2 or not m.flags.c_contiguous:
        return None
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cellspec-token")
    try:
        return pool.submit(array_digest, m[m.shape[0] // 2:], same_nan=False)
    finally:
        pool.shutdown(wait=False)


def _matrix_digest(m: np.ndarray, later: Future[str] | None) -> str:
    if later is None:
        return array_digest(m, same_nan=False)
    return "+".join([array_digest(m[:m.shape[0] // 2], same_nan=False), later.result()])


def remembered(x: Any, options: dict[str, Any], token: str) -> ValidationReport | None:
    """The report kept on ``x`` for these options, if ``x`` still has content ``token``."""
    memo = getattr(x, "validation_memo", None)
    return memo[2] if memo is not None and memo[0] == token and memo[1] == options else None


def remember(x: Any, options: dict[str, Any], report: ValidationReport, token: str | None) -> None:
    """Keep ``report`` on ``x`` (a CellSpec) with ``token``, the token of the content it describes."""
    if token is not None:
        x.validation_memo = (token, options, report)
