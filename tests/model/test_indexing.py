"""AnnData habits on a CellSpec: ``x[cells, features]``, ``len(x)``, ``x.shape`` and ``x.copy()``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cellspec_sc as cs
from cellspec_sc.errors import InputError
from strategies import cellspecs

QUERY_FIELDS = ("kind", "marker", "compartment", "statistic", "unit")


def _same_but_time(a: cs.CellSpec, b: cs.CellSpec) -> None:
    """Equal objects whose last history steps may differ only in their time stamp."""
    assert a.replace(provenance=b.provenance).equals(b), a.differences(b)
    steps_a, steps_b = a.provenance["history"], b.provenance["history"]
    assert len(steps_a) == len(steps_b)
    assert [{k: v for k, v in s.items() if k != "time_utc"} for s in steps_a] == \
        [{k: v for k, v in s.items() if k != "time_utc"} for s in steps_b]


@st.composite
def cell_selections(draw, x: cs.CellSpec):
    """(what x[...] gets, the same cells as subset() arguments)."""
    n = x.n_cells
    kind = draw(st.sampled_from(["slice", "mask", "positions", "ids", "pairs", "one"]))
    if kind == "slice":
        sl = slice(draw(st.none() | st.integers(-n - 2, n + 2)), draw(st.none() | st.integers(-n - 2, n + 2)),
                   draw(st.none() | st.integers(1, 3) | st.integers(-3, -1)))
        return sl, np.arange(n)[sl]
    if kind == "mask":
        mask = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
        return mask, np.flatnonzero(mask)
    if kind == "positions":
        positions = draw(st.lists(st.integers(-n, n - 1), max_size=n + 2))
        return positions, np.array(positions, dtype=np.int64)
    if kind == "one":
        position = draw(st.integers(-n, n - 1))
        return position, [position]
    picked = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n))
    if kind == "ids":
        ids = [str(x.cells["cell_id"].iloc[i]) for i in picked]
        return ids, ids
    pairs = [(str(x.cells["image_id"].iloc[i]), str(x.cells["cell_id"].iloc[i])) for i in picked]
    return pairs, pairs


@st.composite
def feature_selections(draw, x: cs.CellSpec):
    """(what x[:, ...] gets, the same features as subset() arguments)."""
    n = len(x.dictionary)
    kind = draw(st.sampled_from(["slice", "mask", "positions", "ids", "query"]))
    if kind == "slice":
        sl = slice(draw(st.none() | st.integers(-n - 1, n + 1)), draw(st.none() | st.integers(-n - 1, n + 1)),
                   draw(st.none() | st.integers(1, 2)))
        return sl, np.arange(n)[sl]
    if kind == "mask":
        mask = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
        return mask, np.flatnonzero(mask)
    if kind == "positions" and n:
        positions = draw(st.lists(st.integers(0, n - 1), max_size=n))
        return positions, np.array(positions, dtype=np.int64)
    if kind == "query" and n:
        row = x.dictionary.iloc[draw(st.integers(0, n - 1))]
        fields = draw(st.lists(st.sampled_from(QUERY_FIELDS), min_size=1, max_size=2, unique=True))
        query = {f: row[f] for f in fields if isinstance(row[f], str)}
        wanted = np.ones(n, dtype=bool)
        for f, value in query.items():  # an independent selection: the dictionary compared column by column
            wanted &= np.array([v == value if isinstance(v, str) else False for v in x.dictionary[f]])
        return query, np.flatnonzero(wanted)
    ids = draw(st.lists(st.sampled_from(x.feature_ids), max_size=n)) if n else []
    return ids, ids


@given(st.data())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_indexing_selects_what_subset_selects(data):
    x = data.draw(cellspecs(max_cells=8, max_features=5))
    cells, cells_as_subset = data.draw(cell_selections(x))
    features, features_as_subset = data.draw(feature_selections(x))
    both = x[cells, features]
    _same_but_time(both, x.subset(cells=cells_as_subset, features=features_as_subset))
    _same_but_time(x[cells], x.subset(cells=cells_as_subset))
    _same_but_time(x[:, features], x.subset(features=features_as_subset))
    assert both.shape == (both.n_cells, len(both.dictionary)) == both.measurements.shape
    assert len(both) == both.n_cells


def test_indexing_follows_adjacency_and_keeps_images_and_channels():
    x = cs.example(adjacency=True)
    img1 = x[x.cells["image_id"] == "img1", {"kind": "intensity", "statistic": "mean", "compartment": "cell"}]
    assert img1.shape == (40, 4)  # DAPI, CD3e, Pan-Cytokeratin, FOXP3
    assert img1.feature_ids == ["cell:DAPI:mean", "cell:CD3e:mean", "cell:Pan-Cytokeratin:mean", "cell:FOXP3:mean"]
    assert set(img1.adjacency["image_id"]) == {"img1"}
    assert len(img1.adjacency) == int((x.adjacency["image_id"] == "img1").sum())
    assert img1.images.equals(x.images) and img1.channels.equals(x.channels)
    np.testing.assert_array_equal(img1.measurements,
                                  x.measurements[:40][:, [x.feature_position(f) for f in img1.feature_ids]])
    assert img1.provenance["history"][-1]["step"] == "subset"


def test_len_shape_and_whole_selections():
    x = cs.example()
    assert len(x) == 80 and x.shape == (80, 19) == x.measurements.shape
    assert x[:5].cells["cell_id"].tolist() == x.cells["cell_id"].iloc[:5].tolist()
    _same_but_time(x[:], x.subset())
    _same_but_time(x[:, :], x.subset())
    assert x[-1].cells["cell_id"].tolist() == [x.cells["cell_id"].iloc[-1]]
    assert x[:, "cell:area"].feature_ids == ["cell:area"]


def test_bad_selections_are_refused_by_name():
    x = cs.example()
    with pytest.raises(InputError, match="unknown feature_id 'CD45'"):
        x[:, ["CD45"]]
    with pytest.raises(InputError, match="unknown dictionary column"):
        x[:, {"antibody": "CD3e"}]
    with pytest.raises(InputError, match="position out of range"):
        x[[80]]
    with pytest.raises(InputError, match="mask has 3 entries for 80 cells"):
        x[np.array([True, False, True])]
    with pytest.raises(InputError, match="cells or \\(cells, features\\)"):
        x[1, 2, 3]
    with pytest.raises(ValueError):  # InputError is a ValueError, as with AnnData
        x[:, ["CD45"]]


def test_copy_is_independent_and_equal():
    x = cs.example(adjacency=True)
    y = x.copy()
    assert y.equals(x) and y.provenance == x.provenance
    assert not np.shares_memory(y.measurements, x.measurements)
    assert not y.measurements.flags.writeable
    y.cells.loc[0, "x"] = -1.0
    y.dictionary.loc[0, "marker"] = "changed"
    y.adjacency.loc[0, "shared_boundary"] = -1.0
    y.provenance["history"].append({"step": "mine"})
    y.extensions["mine"] = 1
    assert x.equals(cs.example(adjacency=True)) and "mine" not in x.extensions
    assert not y.equals(x)
