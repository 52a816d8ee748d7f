"""Exact comparison of cellspec objects: bit-exact doubles, NA-aware, type-aware.

Two doubles are equal when their 64 bits are equal, except that any NaN equals
any NaN (NaN is how NA is held). So ``-0.0`` differs from ``0.0``.

>>> import numpy as np
>>> bits_equal(np.array([0.0, np.nan]), np.array([-0.0, np.nan]))
array([False,  True])

Digests of values by content, for noticing edits cheaply (xxh3-128, at the speed of memory): one column, or one array.

Equal values give equal digests however they are stored: a text column split into several Arrow
chunks or sliced from a longer one digests like the same text in one piece; NA is NA whatever a
null slot or a NaN holds. Used to notice edits: which columns of an AnnData's ``obs`` changed since
``to_anndata`` (:mod:`cellspec_sc.bridges.anndata._matrix`), and whether an object changed since it
was validated (:mod:`cellspec_sc.validation._runner`).

>>> import pandas as pd
>>> a = pd.Series(["x", None, "yz"], dtype="string")
>>> b = pd.concat([a[:1], a[1:]], ignore_index=True)  # the same values in two Arrow chunks
>>> column_digest(a) == column_digest(b) != column_digest(pd.Series(["x", None, "y"], dtype="string"))
True
>>> column_digest(pd.Series([1.0, float("nan")])) == column_digest(pd.Series([1.0, None], dtype="float64"))
True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from cellspec_sc.spec import column_values, spec_type_of

_MAX_SHOWN = 5


def bits_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: same 64 bits, or both NaN."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    return (a.view(np.uint64) == b.view(np.uint64)) | (np.isnan(a) & np.isnan(b))


def matrix_differences(a: Any, b: Any, name: str = "measurements") -> list[str]:
    """Differences between two measurement matrices (shape, dtype, bits)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return [f"{name}: shape {a.shape} != {b.shape}"]
    if a.dtype != b.dtype:
        return [f"{name}: dtype {a.dtype} != {b.dtype}"]
    if a.dtype != np.float64:
        return [] if np.array_equal(a, b) else [f"{name}: values differ"]
    diff = _first_false_in_chunks(a, b)
    if diff is None:
        return []
    row, col = diff
    return [f"{name}: first difference at row {row}, column {col}: {a[row, col]!r} != {b[row, col]!r}"]


def _first_false_in_chunks(a: np.ndarray, b: np.ndarray, rows: int = 65536) -> tuple[int, int] | None:
    # chunked so that comparing a 16 GB matrix does not allocate a second one
    for start in range(0, a.shape[0], rows):
        same = bits_equal(a[start:start + rows], b[start:start + rows])
        if not same.all():
            r, c = np.argwhere(~same)[0]
            return int(start + r), int(c)
    return None


def column_differences(name: str, a: pd.Series, b: pd.Series) -> list[str]:
    """Differences between two columns: spec type, NA positions, values (doubles bit-exact)."""
    ta, tb = spec_type_of(a), spec_type_of(b)
    if ta != tb:
        return [f"column {name!r}: type {ta} != {tb}"]
    if len(a) != len(b):
        return [f"column {name!r}: length {len(a)} != {len(b)}"]
    na_a, na_b = a.isna().to_numpy(), b.isna().to_numpy()
    if ta == "double":
        same = bits_equal(a.to_numpy(dtype=np.float64, na_value=np.nan), b.to_numpy(dtype=np.float64, na_value=np.nan))
    else:
        va, vb = a.astype(object).to_numpy(), b.astype(object).to_numpy()
        same = (na_a & na_b) | (~na_a & ~na_b & _object_equal(va, vb, na_a | na_b))
    if same.all():
        return []
    rows = np.flatnonzero(~same)
    shown = ", ".join(f"row {r}: {a.iloc[r]!r} != {b.iloc[r]!r}" for r in rows[:_MAX_SHOWN])
    return [f"column {name!r}: {rows.size} value(s) differ ({shown})"]


def _object_equal(va: np.ndarray, vb: np.ndarray, any_na: np.ndarray) -> np.ndarray:
    out = np.zeros(len(va), dtype=bool)
    idx = np.flatnonzero(~any_na)
    out[idx] = [x == y and type(x) is type(y) or (isinstance(x, (int, np.integer)) and x == y)
                for x, y in zip(va[idx], vb[idx], strict=True)]
    return out


def frame_differences(name: str, a: Any, b: Any) -> list[str]:
    """Differences between two tables: container, column order, types and values."""
    if a is None or b is None:
        return [] if a is None and b is None else [f"{name}: {'missing' if a is None else 'present'} vs " +
                                                    f"{'missing' if b is None else 'present'}"]
    if not isinstance(a, pd.DataFrame) or not isinstance(b, pd.DataFrame):
        return [f"{name}: not both DataFrames ({type(a).__name__}, {type(b).__name__})"]
    if list(a.columns) != list(b.columns):
        return [f"{name}: columns {list(a.columns)} != {list(b.columns)}"]
    if len(a) != len(b):
        return [f"{name}: {len(a)} rows != {len(b)} rows"]
    out: list[str] = []
    for col in a.columns:
        out += [f"{name}: {d}" for d in column_differences(col, a[col], b[col])]
    return out


def value_differences(name: str, a: Any, b: Any) -> list[str]:
    """Differences between two JSON-like values (dicts, lists, scalars); NaN equals NaN."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [] if list(a) == list(b) else ([f"{name}: keys {list(a)} != {list(b)}"]
                                             if set(a) != set(b) else [])
        for key in a:
            if key in b:
                out += value_differences(f"{name}[{key!r}]", a[key], b[key])
        return out
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{name}: length {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in value_differences(f"{name}[{i}]", x, y)]
    if isinstance(a, float) and isinstance(b, float):
        same = (math.isnan(a) and math.isnan(b)) or np.float64(a).view(np.uint64) == np.float64(b).view(np.uint64)
        return [] if same else [f"{name}: {a!r} != {b!r}"]
    if type(a) is not type(b) and not (isinstance(a, int) and isinstance(b, int) and
                                       not isinstance(a, bool) and not isinstance(b, bool)):
        return [f"{name}: {a!r} ({type(a).__name__}) != {b!r} ({type(b).__name__})"]
    return [] if a == b else [f"{name}: {a!r} != {b!r}"]


_DTYPE_TEXT: dict[int, tuple[Any, str]] = {}


def _dtype_text(dtype: Any) -> str:
    """``str(dtype)``, kept per dtype object (pandas' text of an extension dtype costs about 20 us, once per column
    of every digest)."""
    known = _DTYPE_TEXT.get(id(dtype))
    if known is not None and known[0] is dtype:
        return known[1]
    if len(_DTYPE_TEXT) > 256:
        _DTYPE_TEXT.clear()
    text = str(dtype)
    _DTYPE_TEXT[id(dtype)] = (dtype, text)
    return text


def column_digest(column: pd.Series | np.ndarray | pd.api.extensions.ExtensionArray) -> str:
    """Hex xxh3-128 of a column's dtype and values (see the module docstring), given as a Series or as its values
    (:func:`~cellspec_sc.spec.column_values`: the same digest). Stored: an AnnData's record keeps the digest of each
    ``obs`` column (:mod:`cellspec_sc.bridges.anndata._record`), so it never changes for given values.

    >>> column_digest(pd.Series([1.0, None])) == column_digest(np.array([1.0, np.nan]))
    True
    """
    values = _values_of(column)
    dtype = values.dtype
    head = f"{_dtype_text(dtype)}|{len(values)}|".encode()
    if isinstance(dtype, pd.StringDtype):
        return _text_digest(head, pa.chunked_array(pa.array(values)))
    if isinstance(dtype, np.dtype) and dtype.kind in "fiub":
        return array_digest(np.asarray(values), head)
    if isinstance(dtype, (pd.Int32Dtype, pd.BooleanDtype)) or pd.api.types.is_extension_array_dtype(dtype) \
            and dtype.kind in "iub":
        missing = np.asarray(values.isna(), dtype=bool)
        numbers = values.to_numpy(dtype=np.int64, na_value=0)
        return _join(head, array_digest(numbers), array_digest(np.flatnonzero(missing)))
    series = column if isinstance(column, pd.Series) else pd.Series(values, copy=False)
    hashes = pd.util.hash_pandas_object(series, index=False).to_numpy(dtype=np.uint64)  # anything else
    return array_digest(hashes, head)


def _values_of(column: pd.Series | np.ndarray | pd.api.extensions.ExtensionArray
               ) -> np.ndarray | pd.api.extensions.ExtensionArray:
    """A column's values as :func:`~cellspec_sc.spec.column_values` gives them (np.asarray of a Series costs five
    times as much as ``to_numpy``)."""
    if not isinstance(column, pd.Series):
        return column
    return column.to_numpy() if isinstance(column.dtype, np.dtype) else column.array


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
            nulls = pc.indices_nonzero(chunk.is_null()).to_numpy().astype(np.int64)  # np.flatnonzero's int64
            missing.update(memoryview(nulls + start))
            chunk = pc.fill_null(chunk, "")
        offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int64)[chunk.offset:chunk.offset + len(chunk) + 1]
        lengths.update(memoryview(offsets[1:] - offsets[:-1]))  # np.diff, without its Python overhead
        if len(chunk):
            data.update(memoryview(chunk.buffers()[2])[offsets[0]:offsets[-1]])
        start += len(chunk)
    return _join(head, lengths.hexdigest(), data.hexdigest(), missing.hexdigest())


def _small_text_digest(column: pd.api.extensions.ExtensionArray) -> str:
    """A short text column's dtype and the repr of its values (str, or None for NA: unambiguous)."""
    values = pa.array(column).to_pylist()
    head = f"{_dtype_text(column.dtype)}|{len(values)}|small|".encode()
    return _join(head, xxhash.xxh3_128(repr(values).encode("utf-8", "surrogatepass")).hexdigest())


def _join(head: bytes, *parts: str) -> str:
    return xxhash.xxh3_128(head + "|".join(parts).encode()).hexdigest()


# A text column of at most this many rows is digested by :func:`frame_digest` from its values as Python strings: for
# the few rows of the dictionary, images and channels tables a fifth of the time of the Arrow buffers' three hashes.
SMALL_TEXT_ROWS = 256


def frame_digest(frame: pd.DataFrame, items: list[tuple[Any, Any]] | None = None) -> str:
    """Hex digest of a frame's column names, index and every column's values (:func:`column_digest`, but a text
    column of up to :data:`SMALL_TEXT_ROWS` rows by its values as Python strings); ``items`` are
    ``column_values(frame)`` when the caller made them already. Kept in memory only (the validation memo's token).

    >>> frame_digest(pd.DataFrame({"a": [1.0]})) != frame_digest(pd.DataFrame({"b": [1.0]}))
    True
    >>> short = pd.DataFrame({"t": pd.Series(["a", None, "b"], dtype="string")})
    >>> frame_digest(short) == frame_digest(pd.concat([short[:1], short[1:]], ignore_index=True))
    True
    >>> frame_digest(short) != frame_digest(short.assign(t=short["t"].fillna("None")))
    True
    """
    index = frame.index
    kept = f"range({index.start}, {index.stop}, {index.step})" if isinstance(index, pd.RangeIndex) else \
        column_digest(index.to_series())
    items = column_values(frame) if items is None else items
    parts = [repr([repr(name) for name, _ in items]), kept]
    parts += [_small_text_digest(values) if isinstance(values.dtype, pd.StringDtype) and len(values) <= SMALL_TEXT_ROWS
              else column_digest(values) for _, values in items]
    return _join(b"frame", *parts)
