"""The labels a category column holds, in first-seen order, whatever the column's dtype: the same list as the
plain definition (every non-missing value as an object, made unique, as text)."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from cellspec_sc.display import present_labels

LABELS = st.one_of(st.none(), st.sampled_from(["001", "1", "b", "a", "é", "-0.0", " ", "NA"]))


def plain_definition(values: pd.Series) -> list[str]:
    return [str(v) for v in pd.unique(values.dropna().astype(object))]


@settings(max_examples=200, deadline=None)
@given(st.lists(LABELS, max_size=40), st.sampled_from(["categorical", "string", "object"]), st.randoms())
def test_present_labels_are_the_plain_definition_for_every_dtype(labels, kind, random):
    if kind == "categorical":
        categories = sorted({v for v in labels if v is not None} | {"unused"})
        random.shuffle(categories)  # category order other than first-seen order
        values = pd.Series(pd.Categorical(labels, categories=categories))
    else:
        values = pd.Series(labels, dtype="string" if kind == "string" else object)
    assert present_labels(values) == plain_definition(values.astype(object))


def test_a_categorical_of_numbers_gives_the_labels_of_its_values():
    values = pd.Series(pd.Categorical([3, None, 1, 3], categories=[1, 2, 3]))
    assert present_labels(values) == ["3", "1"]
