"""Validate an object once: its report is kept on it, keyed by a content token, and reused while the
object is unchanged.

``read`` validates what it returns, ``write`` must refuse an invalid object, ``cellspec validate DIR``
reads then reports: without a memory of the report each of these would walk the matrix again. The
token (:func:`content_token`) is an xxh3-128 digest of every component's values, at the speed of
memory (160 MB of matrix in about 20 ms), so an object edited in place (``x.measurements[0, 0] =
5``, ``x.cells.loc[3, "x"] = -1``) or given a new component gets a fresh validation.

>>> import cellspec_sc as cs
>>> x = cs.example()
>>> report = cs.validate(x)
>>> cs.validate(x) is report
True
>>> x.measurements[0, 0] = float("inf")
>>> cs.validate(x).status("measurements_finite")
'fail'
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import xxhash

from cellspec_sc.model.cellspec import COMPONENTS, CellSpec
from cellspec_sc.validation.report import ValidationReport


def content_token(x: Any) -> str | None:
    """A digest of every component of ``x`` (None when ``x`` cannot be fingerprinted cheaply: not a
    CellSpec, or a matrix that is not an in-memory numpy array, such as a lazy read's dask array).

    >>> import cellspec_sc as cs
    >>> x = cs.example()
    >>> content_token(x) == content_token(x.replace()) != content_token(x.replace(provenance={}))
    True
    """
    if not isinstance(x, CellSpec) or not isinstance(x.measurements, np.ndarray):
        return None
    digest = xxhash.xxh3_128()
    try:
        for name in COMPONENTS:
            digest.update(name.encode())
            _add_value(digest, getattr(x, name))
    except (TypeError, ValueError, pa.ArrowException):  # a malformed object: validate it every time
        return None
    return digest.hexdigest()


def _add_value(digest: Any, value: Any) -> None:
    if isinstance(value, np.ndarray):
        _add_array(digest, value)
    elif isinstance(value, pd.DataFrame):
        _add_frame(digest, value)
    else:  # spec_version, provenance, None
        digest.update(json.dumps(value, sort_keys=True, default=repr).encode())


def _add_array(digest: Any, values: np.ndarray) -> None:
    digest.update(repr((values.dtype.str, values.shape)).encode())
    if values.dtype.hasobject:
        raise TypeError("object arrays are not fingerprinted")
    if values.flags.f_contiguous and not values.flags.c_contiguous:  # read(layout="F"): hashed as stored
        digest.update(b"F")
        values = values.T
    contiguous = values if values.flags.c_contiguous else np.ascontiguousarray(values)
    digest.update(memoryview(contiguous.reshape(-1).view(np.uint8)))


def _add_frame(digest: Any, frame: pd.DataFrame) -> None:
    digest.update(repr((list(map(repr, frame.columns)), [str(t) for t in frame.dtypes], frame.shape)).encode())
    if not isinstance(frame.index, pd.RangeIndex):
        _add_arrow(digest, pa.array(frame.index))
    else:
        digest.update(repr(frame.index).encode())
    for i in range(frame.shape[1]):
        column = frame.iloc[:, i]
        values = column.array
        if isinstance(values, pd.arrays.NumpyExtensionArray) and not values.dtype.numpy_dtype.hasobject:
            _add_array(digest, values.to_numpy())
        else:  # Arrow-backed (zero copy), masked (a cheap conversion) or object columns
            _add_arrow(digest, pa.array(column))


def _add_arrow(digest: Any, array: pa.Array | pa.ChunkedArray) -> None:
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    for chunk in chunks:
        digest.update(repr((str(chunk.type), chunk.offset, len(chunk), chunk.null_count)).encode())
        for buffer in chunk.buffers():
            digest.update(b"-" if buffer is None else memoryview(buffer))


def remembered(x: Any, options: dict[str, Any], token: str) -> ValidationReport | None:
    """The report kept on ``x`` for these options, if ``x`` still has content ``token``."""
    memo = getattr(x, "validation_memo", None)
    return memo[2] if memo is not None and memo[0] == token and memo[1] == options else None


def remember(x: Any, options: dict[str, Any], report: ValidationReport, token: str | None) -> None:
    """Keep ``report`` on ``x`` (a CellSpec) with ``token``, the token of the content it describes."""
    if token is not None:
        x.validation_memo = (token, options, report)
