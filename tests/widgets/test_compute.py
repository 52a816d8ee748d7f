"""The numbers behind the preview's figures: histograms, summaries, rasters, categories and lengths, computed
without any widget."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from cellspec_sc.display import robust_window
from cellspec_sc.widgets import _compute as compute


def test_histogram_counts_known_values():
    h = compute.histogram({"a": np.array([0.0, 0.5, 1.0, 1.5, np.nan]), "b": np.array([2.0, 2.0])}, bins=4)
    assert h.edges.tolist() == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert h.counts["a"].tolist() == [1, 1, 1, 1]
    assert h.counts["b"].tolist() == [0, 0, 0, 2]
    assert h.n_na == {"a": 1, "b": 0}


def test_histogram_log_excludes_non_positive():
    h = compute.histogram({"a": np.array([-1.0, 0.0, 1.0, 100.0])}, bins=2, scale="log")
    assert h.edges.tolist() == [1.0, 10.0, 100.0]
    assert h.counts["a"].tolist() == [1, 1] and h.excluded["a"] == 2


def test_histogram_extreme_doubles_do_not_overflow():
    h = compute.histogram({"a": np.array([-1.7976931348623157e308, 1.7976931348623157e308])}, bins=2)
    assert np.isfinite(h.edges).all() and h.counts["a"].tolist() == [1, 1]


def test_summary_row_quantiles_and_na():
    row = compute.summary_row(np.array([np.nan, *range(101)], dtype=float))
    assert (row["n"], row["na"]) == (102, 1)
    assert row["na_fraction"] == pytest.approx(1 / 102)
    assert (row["min"], row["q01"], row["q25"], row["median"], row["q75"], row["q99"], row["max"]) == \
        (0.0, 1.0, 25.0, 50.0, 75.0, 99.0, 100.0)


def test_value_raster_sums_and_na_bins():
    grid = compute.Grid(4.0, 2.0, 2, 1, 2.0)
    index = compute.bin_index(np.array([0.5, 1.5, 3.0, 3.5]), np.array([0.5, 1.0, 1.0, 1.9]), grid)
    raster = compute.value_raster(index, np.array([2.0, 4.0, np.nan, np.nan]), grid)
    assert raster.cells.tolist() == [[2, 2]]
    assert raster.mean[0, 0] == 3.0 and np.isnan(raster.mean[0, 1])
    assert raster.na_only.tolist() == [[False, True]]
    rgba = compute.value_rgba(raster, 0.0, 10.0)
    assert tuple(rgba[0, 1]) == (176, 176, 176, 255)  # NA grey


def test_y_runs_downward_in_the_raster():
    grid = compute.Grid(10.0, 10.0, 2, 2, 5.0)
    index = compute.bin_index(np.array([1.0]), np.array([9.0]), grid)  # near the bottom edge
    raster = compute.value_raster(index, np.array([1.0]), grid)
    assert raster.cells.tolist() == [[0, 0], [1, 0]]


def test_category_codes_pool_rare_labels_and_na():
    values = pd.Series(["a"] * 5 + ["b"] * 4 + ["c"] * 3 + ["d"] + [None], dtype="string")
    codes, labels = compute.category_codes(values, max_categories=3)
    assert labels == ["a", "b", compute.OTHER, compute.NA_LABEL]
    assert np.bincount(codes).tolist() == [5, 4, 4, 1]


def test_nice_length_and_the_colour_window():
    assert [compute.nice_length(s) for s in (1000.0, 3.0, 0.7)] == [200.0, 0.5, 0.1]
    lo, hi = robust_window(np.r_[np.arange(101.0), np.nan, np.inf])
    assert (lo, hi) == (1.0, 99.0)
    assert robust_window(np.array([np.nan])) == (0.0, 1.0)


@settings(max_examples=60)
@given(hnp.arrays(np.float64, st.integers(0, 300), elements=st.one_of(st.floats(-1e6, 1e6), st.just(np.nan))),
       st.integers(1, 40), st.integers(1, 40))
def test_raster_and_histogram_conserve_cells(values, nx, ny):
    rng = np.random.default_rng(values.size)
    grid = compute.Grid(float(nx), float(ny), nx, ny, 1.0)
    index = compute.bin_index(rng.uniform(-1, nx + 1, values.size), rng.uniform(-1, ny + 1, values.size), grid)
    raster = compute.value_raster(index, values, grid)
    finite = values[np.isfinite(values)]
    assert raster.cells.sum() == values.size and raster.finite.sum() == finite.size
    assert raster.sum.sum() == pytest.approx(finite.sum(), rel=1e-9, abs=1e-6)
    assert compute.histogram({"a": values}).counts["a"].sum() == finite.size
