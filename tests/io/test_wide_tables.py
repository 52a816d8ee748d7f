"""Wide tables (few cells, many features): writing and reading stay linear in the number of features.

A generous bound on CPU time, not a timed goal (benchmarks/ measures speed): 10x the features must cost
well under 30x the CPU time, which any loop quadratic in the columns (a by-name lookup or a ``list.count``
per column) breaks at 20,000 features.
"""

from __future__ import annotations

import time

import numpy as np

import cellspec_sc as cs


def _write_and_read_cpu(tmp_path, n_features: int) -> float:
    x = cs.example(n_cells=10, n_features=n_features, n_images=1)
    start = time.process_time()
    y = cs.read(cs.write(x, tmp_path / f"wide{n_features}"))
    spent = time.process_time() - start
    assert y.equals(x) and y.measurements.shape == (10, n_features)
    return spent


def test_write_and_read_time_grow_linearly_with_features(tmp_path):
    _write_and_read_cpu(tmp_path, 200)  # imports and first calls out of the way
    small = min(_write_and_read_cpu(tmp_path / str(i), 2_000) for i in range(2))
    large = _write_and_read_cpu(tmp_path, 20_000)
    assert large < 30 * small, f"2,000 features: {small:.2f} s CPU, 20,000: {large:.2f} s (quadratic?)"


def test_wide_table_with_na_and_stored_values_round_trips(tmp_path):
    x = cs.example(n_cells=3, n_features=5_000, n_images=1)
    m = x.measurements.copy()
    m[1, ::3] = np.nan
    m[0, 7] = -0.0
    x = x.replace(measurements=m)
    y = cs.read(cs.write(x, tmp_path / "w"))
    assert y.equals(x)
    assert np.signbit(y.measurements[0, 7]) and np.isnan(y.measurements[1, ::3]).all()
