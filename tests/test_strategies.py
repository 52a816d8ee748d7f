"""The shared generator makes valid objects that really contain the edge cases it promises."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import Phase, find, given, settings

import cellspec_sc as cs
from strategies import cellspecs


@given(cellspecs())
def test_generated_objects_pass_structure_validation(x):
    report = cs.validate(x)
    assert report.ok, report.format(only_problems=True)


@given(cellspecs())
def test_generated_object_equals_itself_and_differs_after_flipping_a_sign(x):
    assert x.equals(x)
    if x.measurements.size:
        m = x.measurements.copy()
        m[0, 0] = -m[0, 0] if not np.isnan(m[0, 0]) else 1.0
        assert not x.equals(x.replace(measurements=m))


def _has_negative_zero(x):
    m = x.measurements
    return bool(np.any((m == 0) & np.signbit(m)))


def _has_subnormal(x):
    m = np.abs(x.measurements)
    return bool(np.any((m > 0) & (m < np.finfo(np.float64).tiny)))


EDGE_CASES = {
    "negative zero in measurements": _has_negative_zero,
    "subnormal in measurements": _has_subnormal,
    "NA in measurements": lambda x: bool(np.isnan(x.measurements).any()),
    "largest double": lambda x: bool((np.abs(x.measurements) == np.finfo(np.float64).max).any()),
    "numeric-looking id": lambda x: bool(x.cells["cell_id"].isin(["001", "1e3"]).any()),
    "non-ASCII id": lambda x: any(not c.isascii() for c in x.cells["cell_id"]),
    "zero features": lambda x: x.measurements.shape[1] == 0,
    "one cell": lambda x: x.n_cells == 1,
    "several images": lambda x: x.cells["image_id"].nunique() > 1,
    "adjacency": lambda x: x.adjacency is not None and len(x.adjacency) > 0,
    "region layer": lambda x: any(c.startswith("region__") for c in x.cells.columns),
    "NA in an integer column": lambda x: "n_neighbours" in x.cells and bool(x.cells["n_neighbours"].isna().any()),
}


@pytest.mark.parametrize("case", EDGE_CASES)
def test_generator_reaches_edge_case(case):
    found = find(cellspecs(max_cells=8), EDGE_CASES[case],
                 settings=settings(max_examples=2000, database=None, phases=[Phase.generate]))
    assert cs.validate(found).ok
