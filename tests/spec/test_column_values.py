"""A table's columns without a Series around each: ``column_values`` (from pandas' blocks) gives what pandas' public
API gives, for every dtype a table may hold, and the spec type and digest of those values are the column's."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cellspec_sc.model import column_digest
from cellspec_sc.spec import column_names, column_values, python_values, spec_type_of
from cellspec_sc.spec._types import public_column_values

ROWS = 3
MAKERS = {
    "float64": lambda v: np.array([v, -0.0, np.nan]),
    "int64": lambda v: np.array([int(v), -1, 0], dtype=np.int64),
    "Int32": lambda v: pd.array([int(v), None, 7], dtype="Int32"),
    "boolean": lambda v: pd.array([v > 0, None, False], dtype="boolean"),
    "bool": lambda v: np.array([v > 0, True, False]),
    "string": lambda v: pd.array([f"{v:g}", None, "001"], dtype="string[pyarrow]"),
    "str": lambda v: pd.array([f"é{v:g}", None, ""], dtype="str"),
    "python string": lambda v: pd.array([f"{v:g}", None, "a"], dtype="string[python]"),
    "object text": lambda v: np.array([f"{v:g}", None, "b"], dtype=object),
    "object mixed": lambda v: np.array([v, "a", None], dtype=object),
    "category": lambda v: pd.Categorical([f"{v:g}", "x", None]),
    "datetime": lambda v: pd.to_datetime(np.array([0, int(abs(v)), 5], dtype="datetime64[s]")),
}


def _frame(kinds: list[str], names: list[object], v: float) -> pd.DataFrame:
    return pd.DataFrame({i: MAKERS[kind](v) for i, kind in enumerate(kinds)}).set_axis(names, axis=1)


def _same(a: object, b: object) -> bool:
    """Equal values, NaN equal to NaN and NA to NA (each only to itself)."""
    if a is pd.NA or b is pd.NA or a is None or b is None:
        return a is b
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


@settings(max_examples=80, deadline=None)
@given(kinds=st.lists(st.sampled_from(sorted(MAKERS)), min_size=1, max_size=6),
       names=st.data(), v=st.floats(-1e6, 1e6, allow_nan=False))
def test_column_values_are_the_public_values_of_every_column(kinds: list[str], names: st.DataObject, v: float):
    chosen = names.draw(st.lists(st.sampled_from(["a", "b", "001", "é", 3]), min_size=len(kinds), max_size=len(kinds)))
    frame = _frame(kinds, chosen, v)
    fast, public = column_values(frame), public_column_values(frame)
    assert [name for name, _ in fast] == [name for name, _ in public] == frame.columns.tolist() == column_names(frame)
    for (name, got), (_, want), (_, series) in zip(fast, public, frame.items(), strict=True):
        assert type(got) is type(want) and got.dtype == want.dtype == series.dtype, name
        assert all(_same(a, b) for a, b in zip(list(got), list(want), strict=True))
        if isinstance(got, np.ndarray):
            assert np.shares_memory(got, series.to_numpy())  # the frame's own values, never a copy
        assert spec_type_of(got) == spec_type_of(series)
        assert column_digest(got) == column_digest(series)
        expected = [None if pd.isna(v) else v for v in series.tolist()]  # as Python objects, every missing one None
        assert all(_same(a, b) for a, b in zip(python_values(got), expected, strict=True)), name


@pytest.mark.parametrize("index", [pd.Index(["a", None], dtype="str"), pd.Index(["a", None], dtype="string"),
                                   pd.Index(["a", None], dtype=object), pd.Index([1, 2]), pd.Index(["x", "x"])])
def test_column_names_are_what_pandas_lists(index: pd.Index):
    frame = pd.DataFrame(np.zeros((1, len(index))), columns=index)
    assert all(_same(a, b) for a, b in zip(column_names(frame), index.tolist(), strict=True))
