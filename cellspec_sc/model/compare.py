"""Exact comparison of cellspec objects: bit-exact doubles, NA-aware, type-aware.

Two doubles are equal when their 64 bits are equal, except that any NaN equals
any NaN (NaN is how NA is held). So ``-0.0`` differs from ``0.0``.

>>> import numpy as np
>>> bits_equal(np.array([0.0, np.nan]), np.array([-0.0, np.nan]))
array([False,  True])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from cellspec_sc.spec.types import spec_type_of

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
