"""canonical_frame builds its frame from the converted columns without naming them a second time: the frame is
the one pandas builds when the names are given (same column Index, dtypes, blocks and values)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from cellspec_sc.spec import PANDAS_DTYPES, canonical_frame
from cellspec_sc.spec._types import frame_of_arrays

NAMES = st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=6, unique=True)


def _reference(columns: dict[str, object], n: int) -> pd.DataFrame:
    """The frame with its names given explicitly, each column converted as the spec says, one by one."""
    out = {name: canonical_frame({name: values}, "cells")[name].array for name, values in columns.items()}
    return pd.DataFrame(out, index=pd.RangeIndex(n), columns=list(columns))


@settings(max_examples=60, deadline=None)
@given(names=NAMES, rows=st.integers(0, 5), data=st.data())
def test_frame_is_the_one_built_with_its_names(names: list[str], rows: int, data: st.DataObject) -> None:
    columns: dict[str, object] = {}
    for name in names:
        kind = data.draw(st.sampled_from(["text", "float", "int"]))
        if kind == "text":
            columns[name] = data.draw(st.lists(st.none() | st.text(max_size=3), min_size=rows, max_size=rows))
        elif kind == "float":
            columns[name] = np.array(data.draw(st.lists(st.floats(allow_nan=True), min_size=rows, max_size=rows)),
                                     dtype=np.float64)
        else:
            columns[name] = np.array(data.draw(st.lists(st.integers(-5, 5), min_size=rows, max_size=rows)),
                                     dtype=np.int64)
    got, want = canonical_frame(columns, "cells"), _reference(columns, rows)
    assert got.columns.equals(want.columns) and got.columns.dtype == want.columns.dtype
    assert list(got.columns) == names
    assert got.dtypes.tolist() == want.dtypes.tolist()
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_declared_columns_take_the_spec_dtypes_in_the_given_order() -> None:
    got = canonical_frame({"y": np.array([2.0]), "cell_id": ["c1"], "x": np.array([1])}, "cells")
    assert list(got.columns) == ["y", "cell_id", "x"]
    assert got["cell_id"].dtype == PANDAS_DTYPES["character"] and got["x"].dtype == np.float64
    assert got["x"].tolist() == [1.0] and got["cell_id"].tolist() == ["c1"]


def test_no_columns_give_an_empty_index_of_names() -> None:
    got = canonical_frame({}, "cells")
    want = pd.DataFrame({}, index=pd.RangeIndex(0), columns=[])
    assert got.shape == (0, 0) and got.columns.equals(want.columns) and got.columns.dtype == want.columns.dtype
    assert type(got.columns) is type(want.columns)


KINDS = {
    "float": lambda v, n: np.array([v] * n, dtype=np.float64),
    "text": lambda v, n: pd.array([f"{v:g}", None, "001"][:n] + ["é"] * max(0, n - 3), dtype="string[pyarrow]"),
    "int": lambda v, n: pd.array([None] + [int(v) % 1000 if math.isfinite(v) else 7] * (n - 1) if n else [],
                                 dtype="Int32"),
    "flag": lambda v, n: pd.array([v > 0] * n, dtype="boolean"),
    "object": lambda v, n: np.array([v] * n, dtype=object),
}


def _blocks(frame: pd.DataFrame) -> list[tuple[str, list[int]]]:
    return sorted((str(block.dtype), list(block.mgr_locs.as_array)) for block in frame._mgr.blocks)


@settings(max_examples=80, deadline=None)
@given(kinds=st.lists(st.sampled_from(sorted(KINDS)), max_size=7), names=st.data(), rows=st.integers(0, 4),
       v=st.floats(allow_nan=True, allow_infinity=True))
def test_frame_of_arrays_is_the_frame_pandas_builds_and_owns_its_values(kinds, names, rows, v) -> None:
    labels = names.draw(st.lists(st.text(min_size=1, max_size=4) | st.integers(0, 9), min_size=len(kinds),
                                 max_size=len(kinds), unique=True))
    columns = {label: KINDS[kind](v, rows) for label, kind in zip(labels, kinds, strict=True)}
    got, want = frame_of_arrays(columns, rows), pd.DataFrame(columns, index=pd.RangeIndex(rows))
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert got.columns.dtype == want.columns.dtype and type(got.index) is type(want.index)
    assert _blocks(got) == _blocks(want)  # the same block layout: numbers in one block, each pandas array in its own
    for label, values in columns.items():  # copies, as pandas' constructor makes: nothing shared with the caller
        kept = got[label].array
        if isinstance(values, np.ndarray):
            assert not np.shares_memory(got[label].to_numpy(), values)
        elif hasattr(values, "_data") and isinstance(values._data, np.ndarray):
            assert not np.shares_memory(kept._data, values._data)


def test_a_name_given_to_one_frames_columns_stays_with_that_frame() -> None:
    first, second = (canonical_frame({"x": np.zeros(1), "cell_id": ["c"]}, "cells") for _ in range(2))
    first.columns.name = "features"
    third = canonical_frame({"x": np.zeros(1), "cell_id": ["c"]}, "cells")
    assert second.columns.name is None and third.columns.name is None


def test_names_equal_as_keys_but_not_as_names_keep_their_types() -> None:
    """1, 1.0 and True are one key of a dict but three column names: each frame keeps the names it was given."""
    for name in (1, 1.0, True, "1"):
        got = frame_of_arrays({name: np.zeros(1)}, 1)
        want = pd.DataFrame({name: np.zeros(1)}, index=pd.RangeIndex(1))
        assert got.columns.equals(want.columns) and got.columns.dtype == want.columns.dtype
        assert type(got.columns[0]) is type(want.columns[0]), name
