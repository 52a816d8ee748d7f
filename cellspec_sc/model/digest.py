"""Digests of values by content (xxh3-128, at the speed of memory): one column, or one array.

Equal values give equal digests however they are stored: a text column split into several Arrow
chunks or sliced from a longer one digests like the same text in one piece; NA is NA whatever a
null slot or a NaN holds. Used to notice edits: which columns of an AnnData's ``obs`` changed since
``to_anndata`` (:mod:`cellspec_sc.bridges.anndata._matrix`), and whether an object changed since it
was validated (:mod:`cellspec_sc.validation.memo`).

>>> import pandas as pd
>>> a = pd.Series(["x", None, "yz"], dtype="string")
>>> b = pd.concat([a[:1], a[1:]], ignore_index=True)  # the same values in two Arrow chunks
>>> column_digest(a) == column_digest(b) != column_digest(pd.Series(["x", None, "y"], dtype="string"))
True
>>> column_digest(pd.Series([1.0, float("nan")])) == column_digest(pd.Series([1.0, None], dtype="float64"))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import xxhash


def column_digest(column: pd.Series) -> str:
    """Hex xxh3-128 of a column's dtype and values (see the module docstring)."""
    head = f"{column.dtype}|{len(column)}|".encode()
    dtype = column.dtype
    if isinstance(dtype, pd.StringDtype):
        return _text_digest(head, pa.chunked_array(pa.array(column.array)))
    if isinstance(dtype, np.dtype) and dtype.kind in "fiub":
        return array_digest(np.asarray(column), head)
    if isinstance(dtype, (pd.Int32Dtype, pd.BooleanDtype)) or pd.api.types.is_extension_array_dtype(dtype) \
            and dtype.kind in "iub":
        missing = column.isna().to_numpy()
        values = column.to_numpy(dtype=np.int64, na_value=0)
        return _join(head, array_digest(values), array_digest(np.flatnonzero(missing)))
    hashes = pd.util.hash_pandas_object(column, index=False).to_numpy(dtype=np.uint64)  # anything else
    return array_digest(hashes, head)


def array_digest(values: np.ndarray, head: bytes = b"", *, same_nan: bool = True) -> str:
    """Hex xxh3-128 of a numeric array's shape, dtype and values (NaN canonical), in the order they are
    stored: C order, or column by column for a column-major matrix (``read(layout="F")``, never copied
    to be digested; it digests differently from the same values in C order). ``same_nan=False`` skips
    making every NaN the same bits first (a pass less over a slide-sized matrix; NaN of other bits then
    digest differently).

    >>> array_digest(np.zeros((2, 2))) != array_digest(np.zeros(4))
    True
    """
    column_major = values.ndim == 2 and values.flags.f_contiguous and not values.flags.c_contiguous
    digest = xxhash.xxh3_128(head + repr((values.dtype.str, values.shape, column_major)).encode())
    if same_nan and values.dtype.kind == "f":
        nan = np.isnan(values)
        if nan.any():
            values = np.where(nan, np.nan, values)
    stored = values.T if column_major and values.flags.f_contiguous else np.ascontiguousarray(values)
    digest.update(memoryview(stored.reshape(-1).view(np.uint8)))
    return digest.hexdigest()


def _text_digest(head: bytes, chunks: pa.ChunkedArray) -> str:
    """Text by content: lengths, bytes and NA positions, each streamed over the chunks."""
    lengths, data, missing = xxhash.xxh3_128(), xxhash.xxh3_128(), xxhash.xxh3_128()
    start = 0
    for chunk in chunks.chunks:
        chunk = chunk.cast(pa.large_string()) if not pa.types.is_large_string(chunk.type) else chunk
        if chunk.null_count:
            missing.update(memoryview(np.flatnonzero(chunk.is_null().to_numpy(zero_copy_only=False)) + start))
            chunk = pc.fill_null(chunk, "")
        offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int64)[chunk.offset:chunk.offset + len(chunk) + 1]
        lengths.update(memoryview(offsets[1:] - offsets[:-1]))  # np.diff, without its Python overhead
        if len(chunk):
            data.update(memoryview(chunk.buffers()[2])[offsets[0]:offsets[-1]])
        start += len(chunk)
    return _join(head, lengths.hexdigest(), data.hexdigest(), missing.hexdigest())


def _join(head: bytes, *parts: str) -> str:
    return xxhash.xxh3_128(head + "|".join(parts).encode()).hexdigest()


def frame_digest(frame: pd.DataFrame, items: list[tuple[Any, pd.Series]] | None = None) -> str:
    """Hex digest of a frame's column names, index and every column's :func:`column_digest`; ``items`` are
    ``list(frame.items())`` when the caller made them already.

    >>> frame_digest(pd.DataFrame({"a": [1.0]})) != frame_digest(pd.DataFrame({"b": [1.0]}))
    True
    """
    index: Any = repr(frame.index) if isinstance(frame.index, pd.RangeIndex) else column_digest(frame.index.to_series())
    parts = [repr(list(map(repr, frame.columns))), str(index)]
    parts += [column_digest(column) for _, column in (frame.items() if items is None else items)]
    return _join(b"frame", *parts)
