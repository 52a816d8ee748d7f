"""Cohort.summary's statistics, value by value, where the layout of the cells could mislead them.

Directories whose images are interleaved in the cells table, grouped in another order than the images
table, split across row groups, with a single-cell image, an image without cells, an all-NA feature,
NA in one image only and signed zeros; each statistic compared with numpy on ``cs.read`` of the
directory, bit for bit (quantiles by value: the sign of a zero order statistic is numpy's choice).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cellspec_sc as cs
from cellspec_sc.cohort import _summary as summary_module
from cellspec_sc.cohort._summary import QUANTILES, STATISTICS, Scratch, column_statistics
from cellspec_sc.cohort.example import prefixed
from dirhelpers import reseal
from strategies import doubles_or_na

LEVELS = list(QUANTILES.values())


def numpy_statistics(values: np.ndarray) -> list[float]:
    """What the summary promises for one column, from numpy alone."""
    kept = values[~np.isnan(values)]
    if not kept.size:
        return [0, values.size] + [np.nan] * (len(STATISTICS) - 2)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return [kept.size, values.size - kept.size, kept.mean(), kept.std(ddof=1), kept.min(),
                *np.quantile(kept, LEVELS), kept.max()]


def assert_same(got: list[float], expected: list[float]) -> None:
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    exact = [i for i, s in enumerate(STATISTICS) if s not in QUANTILES]
    got[np.isnan(got)] = expected[np.isnan(expected)] = np.nan  # NaN is NaN, whatever its sign bit
    assert got[exact].view(np.uint64).tolist() == expected[exact].view(np.uint64).tolist(), (got, expected)
    quantiles = [STATISTICS.index(q) for q in QUANTILES]
    assert np.array_equal(got[quantiles], expected[quantiles], equal_nan=True), (got, expected)


@settings(max_examples=300, deadline=None)
@given(st.lists(doubles_or_na, max_size=40))
def test_column_statistics_equal_numpy_on_any_column(values):
    column = np.array(values, dtype=np.float64)
    assert_same(column_statistics(column).tolist(), numpy_statistics(column))
    assert_same(column_statistics(column, Scratch(64)).tolist(), numpy_statistics(column))  # reused buffers


def test_column_statistics_edge_cases():
    nan = np.nan
    assert np.isnan(column_statistics(np.array([nan, nan]))[2:]).all()
    assert column_statistics(np.array([nan, nan]))[:2].tolist() == [0, 2]
    one = column_statistics(np.array([nan, -0.0]))
    assert one[[0, 1, 4]].tolist() == [1, 1, 0.0] and np.signbit(one[4]) and np.signbit(one[-1])  # min, max -0.0
    assert np.isnan(one[3])  # no sd of one value
    assert column_statistics(np.array([])).tolist()[:2] == [0, 0]
    inf = column_statistics(np.array([np.inf, 1.0, -np.inf]))
    assert np.isnan(inf[2]) and inf[4] == -np.inf and inf[-1] == np.inf


def _grouped_in_reverse(x: cs.CellSpec) -> np.ndarray:
    """Row positions with the cells grouped by image, last image first; the last image loses its cells."""
    image = x.cells["image_id"].to_numpy(dtype=object)
    ids = list(x.images["image_id"])
    return np.concatenate([np.flatnonzero(image == i) for i in reversed(ids[:-1])])


def _interleaved(x: cs.CellSpec) -> np.ndarray:
    """Row positions taking one cell of each image in turn; the last image keeps a single cell."""
    image = x.cells["image_id"].to_numpy(dtype=object)
    ids = list(x.images["image_id"])
    rows = [np.flatnonzero(image == i) for i in ids[:-1]] + [np.flatnonzero(image == ids[-1])[:1]]
    rank = np.concatenate([np.arange(r.size) for r in rows])
    return np.concatenate(rows)[np.argsort(rank, kind="stable")]


def _messy(seed: int, name: str, arrange, tmp_path):
    x = prefixed(cs.example(seed, n_cells=160, n_images=4), f"{name}_")
    x = x.subset(cells=arrange(x))
    m = x.measurements.copy()
    image = x.cells["image_id"].to_numpy(dtype=object)
    m[:, 0] = np.nan  # a feature without any value
    m[image == f"{name}_img2", 1] = np.nan  # NA in one image only
    m[seed::5, 2] = np.nan
    m[:, 3][m[:, 3] > np.nanmedian(m[:, 3])] = -0.0  # signed zeros beside zeros
    m[::2, 4] = 0.0
    m[:, 5] += np.where(image == f"{name}_img1", 1e6, 0.0)  # images differ a lot: a mix-up shows
    path = cs.write(x.replace(measurements=m), tmp_path / name)
    pq.write_table(pq.read_table(path / "cells.parquet"), path / "cells.parquet", row_group_size=23)
    reseal(path)
    return path


@pytest.mark.parametrize("arrange", [_interleaved, _grouped_in_reverse])
def test_summary_equals_numpy_whatever_the_order_of_the_cells(tmp_path, arrange):
    path = _messy(3, "s", arrange, tmp_path)
    cohort = cs.open_cohort([path])
    assert len(cohort.members[0].parts) > 3
    summary = cohort.summary().set_index(["image_id", "feature_id"])
    x = cs.read(path)
    sizes = x.cells["image_id"].value_counts()
    assert sorted(sizes.get(i, 0) for i in x.images["image_id"])[:2] == \
           ([0, 40] if arrange is _grouped_in_reverse else [1, 40])
    for image in x.images["image_id"]:
        rows = x.measurements[(x.cells["image_id"] == image).to_numpy()]
        for j, feature in enumerate(x.feature_ids):
            got = summary.loc[(image, feature), list(STATISTICS)].tolist()
            assert_same(got, numpy_statistics(rows[:, j]))


def test_summary_of_selected_images_from_interleaved_rows(tmp_path):
    path = _messy(4, "t", _interleaved, tmp_path)
    cohort = cs.open_cohort([path]).select(images=["t_img3", "t_img1"])
    summary = cohort.summary().set_index(["image_id", "feature_id"])
    assert sorted(summary.index.get_level_values(0).unique()) == ["t_img1", "t_img3"]
    x = cs.read(path)
    for image in ("t_img1", "t_img3"):
        rows = x.measurements[(x.cells["image_id"] == image).to_numpy()]
        for j, feature in enumerate(x.feature_ids):
            assert_same(summary.loc[(image, feature), list(STATISTICS)].tolist(), numpy_statistics(rows[:, j]))


def test_union_summary_of_directories_lacking_features(tmp_path):
    small = _messy(5, "u", _interleaved, tmp_path)
    big = cs.write(prefixed(cs.example(6, n_cells=90, n_features=23), "v_"), tmp_path / "v")
    cohort = cs.open_cohort([small, big], features="union")
    summary = cohort.summary().set_index(["image_id", "feature_id"])
    for path in (small, big):
        x = cs.read(path)
        for image in x.images["image_id"]:
            rows = x.measurements[(x.cells["image_id"] == image).to_numpy()]
            for feature in cohort.feature_ids:
                values = rows[:, x.feature_ids.index(feature)] if feature in x.feature_ids else \
                    np.full(len(rows), np.nan)
                assert_same(summary.loc[(image, feature), list(STATISTICS)].tolist(), numpy_statistics(values))


def assert_summary_equals_numpy(summary, path) -> None:
    x = cs.read(path)
    for image in x.images["image_id"]:
        rows = x.measurements[(x.cells["image_id"] == image).to_numpy()]
        for j, feature in enumerate(x.feature_ids):
            assert_same(summary.loc[(image, feature), list(STATISTICS)].tolist(), numpy_statistics(rows[:, j]))


def test_a_directory_split_into_tasks_of_feature_batches(tmp_path, monkeypatch):
    paths = [_messy(7, "w", _interleaved, tmp_path), _messy(8, "z", _grouped_in_reverse, tmp_path)]
    cohort = cs.open_cohort(paths)
    monkeypatch.setattr(summary_module, "BATCH_BYTES", 8 * 160 * 3)  # 3 features a batch: 7 batches
    monkeypatch.setattr(summary_module, "worker_threads", lambda client=None: 3)  # 3 tasks per directory
    assert [len(b) for b in summary_module.feature_batches(cohort.feature_ids, 160)] == [3] * 6 + [1]
    summary = cohort.summary().set_index(["image_id", "feature_id"])
    for path in paths:
        assert_summary_equals_numpy(summary, path)


def test_a_directory_changed_behind_its_stamps_is_left_out_in_one_task_per_directory(tmp_path, monkeypatch):
    paths = [_messy(seed, f"d{seed}", _grouped_in_reverse, tmp_path) for seed in range(1, 5)]
    cohort = cs.open_cohort(paths)
    monkeypatch.setattr(summary_module, "worker_threads", lambda client=None: 1)
    monkeypatch.setattr(summary_module, "BATCH_BYTES", 8 * 160 * 5)  # a task works through 4 batches
    data = paths[1] / "cells.parquet"
    stamp = data.stat()
    raw = bytearray(data.read_bytes())
    raw[300] ^= 0x01  # same size, same time, same inode: only the hash tells
    with open(data, "r+b") as handle:
        handle.write(raw)
    os.utime(data, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    with pytest.raises(cs.CellspecError, match="d2") as err:
        cohort.summary()
    assert [(f.directory, f.check) for f in err.value.failures] == [(str(paths[1]), "ChecksumMismatch")]
    result = err.value.result.set_index(["image_id", "feature_id"])
    assert sorted(set(result["directory"])) == [str(p) for p in paths if p != paths[1]]
    for path in (paths[0], paths[2], paths[3]):
        assert_summary_equals_numpy(result, path)
