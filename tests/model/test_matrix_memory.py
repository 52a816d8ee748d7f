"""Large matrices reuse the mapping of the last one released, never one still in use (model/memory.py)."""

from __future__ import annotations

import numpy as np
import pytest

import cellspec_sc as cs
from cellspec_sc.model import _memory as memory
from cellspec_sc.model import empty_matrix, release_kept

ROWS, COLS = 1 << 13, 1 << 10  # 64 MB: the smallest mapped matrix


@pytest.fixture(autouse=True)
def nothing_kept():
    release_kept()
    yield
    release_kept()


def address(m: np.ndarray) -> int:
    return m.__array_interface__["data"][0]


def test_a_released_matrix_is_reused_by_the_next_of_its_size():
    first = empty_matrix(ROWS, COLS)
    first[:] = 7.0
    where = address(first)
    del first
    second = empty_matrix(ROWS, COLS)
    assert address(second) == where
    second[:] = np.arange(COLS)  # writable, ordinary C-order values
    assert second.flags.c_contiguous and second[5, 3] == 3.0


def test_a_matrix_in_use_is_never_handed_out_again():
    first = empty_matrix(ROWS, COLS)
    first[:] = 1.0
    second = empty_matrix(ROWS, COLS)
    assert not np.shares_memory(first, second)
    second[:] = 2.0
    assert (first == 1.0).all()


def test_a_view_keeps_its_matrix_from_being_reused():
    first = empty_matrix(ROWS, COLS)
    first[:] = 1.0
    column = first[:, 3]  # e.g. one feature kept by the user
    del first
    second = empty_matrix(ROWS, COLS)
    second[:] = 2.0
    assert (column == 1.0).all()
    del column, second
    assert release_kept() == ROWS * COLS * 8  # the last one released is kept, the other unmapped


def test_sizes_far_apart_get_a_new_mapping():
    big = empty_matrix(4 * ROWS, COLS)
    where = address(big)
    del big
    small = empty_matrix(ROWS, COLS)  # would sit in four times its size: the kept mapping is unmapped
    assert address(small) != where
    del small
    larger = empty_matrix(2 * ROWS, COLS)  # the kept one is too small
    assert release_kept() == 0 and larger.shape == (2 * ROWS, COLS)


def test_reads_in_a_row_share_no_values(tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "_MAPPED_FROM", 0)  # every matrix mapped, so a small slide shows it
    x = cs.example(n_cells=500, n_features=12)
    path = cs.write(x, tmp_path / "x")
    first = cs.read(path)
    second = cs.read(path)
    assert not np.shares_memory(first.measurements, second.measurements)
    stored = second._measurements  # the memory the object owns, written by force
    stored.setflags(write=True)
    stored[:] = -1.0
    assert first.equals(x)
    where = address(first.measurements)
    del first
    third = cs.read(path)
    assert address(third.measurements) == where and third.equals(x)
