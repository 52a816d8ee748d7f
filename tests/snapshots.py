"""Bit-exact snapshots of a CellSpec's matrix and tables, to show that something left it unchanged."""

from __future__ import annotations

import numpy as np
import pandas as pd

import cellspec_sc as cs


def bits(matrix) -> np.ndarray:
    return np.ascontiguousarray(matrix, dtype=np.float64).view(np.int64).copy()


def snapshot(x: cs.CellSpec) -> tuple[np.ndarray, pd.DataFrame, pd.DataFrame]:
    return bits(x.measurements), x.cells.copy(deep=True), x.dictionary.copy(deep=True)


def assert_unchanged(x: cs.CellSpec, before: tuple[np.ndarray, pd.DataFrame, pd.DataFrame], step: str) -> None:
    matrix, cells, dictionary = before
    assert np.array_equal(bits(x.measurements), matrix), f"{step} changed x.measurements"
    pd.testing.assert_frame_equal(x.cells, cells, obj=f"x.cells after {step}")
    pd.testing.assert_frame_equal(x.dictionary, dictionary, obj=f"x.dictionary after {step}")
