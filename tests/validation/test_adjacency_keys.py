"""The adjacency checks answer by integer codes of the ids exactly as pandas' MultiIndex and duplicated answer, for
any text: missing values, empty strings, NUL bytes, non-ASCII ids and ids that compare differently as bytes and as
text."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cellspec_sc.validation._checks import adjacency
from cellspec_sc.validation._checks.adjacency import ContactCodes, endpoints_missing, known_text, pair_problems

PLAIN = st.sampled_from(["1", "2", "10", "", "a", "é", "z", "Ä", "ab"])  # the Arrow path
ANY = st.one_of(st.none(), st.sampled_from(["1", "2", "10", "", "a\x00", "a", "\x00a", "é", "z", "Ä"]))  # mostly pandas
TEXT = "string[pyarrow]"


def _text(values: list[str | None]) -> pd.Series:
    return pd.Series(values, dtype=TEXT)


def _missing_by_pandas(cells: list[pd.Series], adj: pd.DataFrame) -> np.ndarray:
    index = pd.MultiIndex.from_arrays([c.astype(object).where(c.notna(), None) for c in cells])
    missing = np.zeros(len(adj), dtype=bool)
    for column in ("cell_id_a", "cell_id_b"):
        missing |= ~pd.MultiIndex.from_arrays([adj["image_id"].astype(object), adj[column].astype(object)]).isin(index)
    return missing


def _pairs_by_pandas(adj: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    def utf8(values: pd.Series) -> list[bytes]:
        return [("" if pd.isna(v) else v).encode("utf-8") for v in values]
    unordered = np.array([not x < y for x, y in zip(utf8(adj["cell_id_a"]), utf8(adj["cell_id_b"]), strict=True)],
                         dtype=bool)
    return unordered, adj[["image_id", "cell_id_a", "cell_id_b"]].duplicated(keep=False).to_numpy()


@settings(max_examples=300, deadline=None)
@given(data=st.data(), ids=st.sampled_from([PLAIN, ANY]))
def test_arrow_keys_answer_as_pandas(data, ids):
    cells = data.draw(st.lists(st.tuples(st.sampled_from(["i1", "i2"]), ids), max_size=8))
    rows = data.draw(st.lists(st.tuples(st.sampled_from(["i1", "i2", "i3"]), ids, ids), max_size=10))
    cell_columns = [_text([c[0] for c in cells]), _text([c[1] for c in cells])]
    adj = pd.DataFrame({"image_id": _text([r[0] for r in rows]), "cell_id_a": _text([r[1] for r in rows]),
                        "cell_id_b": _text([r[2] for r in rows])})
    assert endpoints_missing(cell_columns, adj).tolist() == _missing_by_pandas(cell_columns, adj).tolist()
    expected_unordered, expected_dup = _pairs_by_pandas(adj)
    codes = ContactCodes.of(cell_columns, adj)  # what validation shares between the two checks, when it can
    for shared in (None, codes) if codes is not None else (None,):
        unordered, dup = pair_problems(adj, shared)
        assert unordered.tolist() == expected_unordered.tolist() and dup.tolist() == expected_dup.tolist()


@pytest.mark.parametrize("missing", [None, "x"])
def test_a_trailing_nul_orders_after_the_id_without_it(missing):
    adj = pd.DataFrame({"image_id": _text(["i", "i", "i"]), "cell_id_a": _text(["a", "a\x00", missing]),
                        "cell_id_b": _text(["a\x00", "a", "y"])})
    unordered, _ = pair_problems(adj)  # missing: the path without codes, which compares the text itself
    assert unordered.tolist() == [False, True, False]


def test_ids_with_nul_bytes_are_answered_by_codes_and_only_missing_values_by_pandas(monkeypatch):
    def by_pandas(values):
        raise AssertionError("answered by pandas' MultiIndex")
    monkeypatch.setattr(adjacency, "_objects", by_pandas)
    cells = [_text(["i", "i"]), _text(["a\x00", "a"])]
    adj = pd.DataFrame({"image_id": _text(["i", "i"]), "cell_id_a": _text(["a", "\x00a"]),
                        "cell_id_b": _text(["a\x00", "a"])})
    assert endpoints_missing(cells, adj).tolist() == [False, True]  # "a" + "\0a" would join like "a\0" + "a"
    with pytest.raises(AssertionError, match="MultiIndex"):
        endpoints_missing([cells[0], _text(["a", None])], adj)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.sampled_from(["mask_touching", "delaunay", "", "x\x00", "é"])),
                       max_size=8),
       allowed=st.sampled_from([("mask_touching", "polygon_intersection", "delaunay"), ("é",), ()]),
       dtype=st.sampled_from([TEXT, object]))
def test_known_methods_answer_as_pandas_isin(values, allowed, dtype):
    series = pd.Series(values, dtype=dtype)
    found = known_text(series, allowed)
    assert found.dtype == bool
    np.testing.assert_array_equal(found, series.isin(allowed).to_numpy(dtype=bool))
