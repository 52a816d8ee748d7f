"""Cohort validation's matrix stats gathered without building each part's block (``add_part_stats``) equal the
stats of the block itself, whatever the row group length and the order of the images; and the reports agree.

Each directory holds NA stored as null, NaN stored as a number, infinities of both signs, negatives and signed
zeros, in row groups short (23 rows: Arrow's one conversion) and long (15,000 rows: numpy columns),
with images grouped (stats per image run) or shuffled (stats from several row blocks of about 1 MB).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cellspec_sc as cs
from cellspec_sc.cohort._members import add_part_stats, cells_frame, feature_block, member_object
from cellspec_sc.cohort._validate import validate_member
from cellspec_sc.io import stats_for
from dirhelpers import reseal


def _interleave(x: cs.CellSpec) -> np.ndarray:
    """The rows in a shuffled order: images interleaved, with no period a misplaced row block could hide in."""
    return np.random.default_rng(11).permutation(x.n_cells)


def _directory(tmp_path, *, n_cells: int, row_group: int, interleaved: bool):
    x = cs.example(5, n_cells=n_cells, n_images=3)
    if interleaved:
        x = x.subset(cells=_interleave(x))
    m = x.measurements.copy()
    m[::7, 0] = np.nan  # NA: stored as null by cs.write
    m[::3, 2] = -m[::3, 2]  # negatives
    m[1::4, 3] = -0.0
    path = cs.write(x.replace(measurements=m), tmp_path / "d")
    table = pq.read_table(path / "cells.parquet")  # what cs.write refuses, written behind its back:
    table = _with_values(table, x.feature_ids[1], {n_cells // 2 + n_cells // 8: np.inf, n_cells - 2: -np.inf})
    table = _with_values(table, x.feature_ids[4], dict.fromkeys(range(5, n_cells, 11), np.nan))  # NaN, not null
    pq.write_table(table, path / "cells.parquet", row_group_size=row_group)
    reseal(path)
    return path


def _with_values(table: pa.Table, name: str, values: dict[int, float]) -> pa.Table:
    column = np.array(table.column(name).to_numpy(zero_copy_only=False), dtype=np.float64)
    column[list(values)] = list(values.values())
    return table.set_column(table.schema.get_field_index(name), name, pa.array(column, type=pa.float64()))


def _block_stats(member):
    """The stats as the block of every part gives them (the path before add_part_stats)."""
    stats = stats_for(cells_frame(member), len(member.feature_ids))
    nulls = np.zeros(len(member.feature_ids), dtype=np.int64)
    for part, start in zip(member.parts, member.offsets, strict=True):
        stats.add(start, feature_block(member, part, member.feature_ids, nulls))
    return stats, nulls


@pytest.mark.parametrize(("n_cells", "row_group", "interleaved"),
                         [(600, 23, True), (600, 23, False), (30_000, 15_000, False), (30_000, 15_000, True)])
def test_stats_without_the_block_equal_the_blocks_stats(tmp_path, n_cells, row_group, interleaved):
    member = cs.open_cohort([_directory(tmp_path, n_cells=n_cells, row_group=row_group,
                                       interleaved=interleaved)]).members[0]
    assert len(member.parts) == -(-n_cells // row_group)
    expected, expected_nulls = _block_stats(member)
    got = stats_for(cells_frame(member), len(member.feature_ids))
    nulls = np.zeros(len(member.feature_ids), dtype=np.int64)
    for part, start in zip(member.parts, member.offsets, strict=True):
        add_part_stats(member, part, member.feature_ids, nulls, got, start)
    assert nulls.tolist() == expected_nulls.tolist() and nulls[0] == len(range(0, n_cells, 7))
    for name in ("nan", "infinite", "first_infinite", "negative"):
        assert getattr(got, name).tolist() == getattr(expected, name).tolist(), name
    assert got.infinite[1] == 2 and got.nan[4] - nulls[4] == len(range(5, n_cells, 11))
    assert got.low.view(np.uint64).tolist() == expected.low.view(np.uint64).tolist()  # -0.0 is not 0.0 here
    assert got.high.view(np.uint64).tolist() == expected.high.view(np.uint64).tolist()


def test_cohort_validation_reports_what_validating_the_read_directory_reports(tmp_path):
    path = _directory(tmp_path, n_cells=30_000, row_group=15_000, interleaved=True)
    member = cs.open_cohort([path]).members[0]
    _, stats, stored = member_object(member, eager=False)
    assert stored == {member.feature_ids[4]: len(range(5, 30_000, 11))}
    cohort_report = validate_member(member).to_frame()
    with pytest.raises(cs.ValidationError) as refused:  # cs.read refuses it, with its report
        cs.read(path)
    direct_report = refused.value.report.to_frame()
    columns = ["name", "status", "message", "column", "count"]
    assert cohort_report[columns].values.tolist() == direct_report[columns].values.tolist()
    failed = direct_report.loc[direct_report["status"] == "fail", "message"].tolist()
    assert len(failed) == 1 and "2 infinite value(s), first at row 18750" in failed[0] and \
        f"{len(range(5, 30_000, 11))} NaN/infinite value(s) stored as numbers" in failed[0]
