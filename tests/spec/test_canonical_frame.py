"""canonical_frame builds its frame from the converted columns without naming them a second time: the frame is
the one pandas builds when the names are given (same column Index, dtypes, blocks and values)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from cellspec_sc.spec import PANDAS_DTYPES, canonical_frame

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
