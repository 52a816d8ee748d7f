"""A written cohort dataset is exactly its manifest: a part file copied in, a listed part deleted or a part
changed is refused by name when the dataset is opened (or read), never read as more or fewer cells."""

from __future__ import annotations

import shutil

import pytest

import cellspec_sc as cs
from cellspec_sc.cohort.example import write_example_cohort
from cellspec_sc.io._refusals import ChecksumMismatch, ListedFileMissing, UnlistedDataFile


@pytest.fixture
def dataset(tmp_path):
    cohort = cs.open_cohort(write_example_cohort(tmp_path / "slides", 2, n_cells=40))
    return cohort.write_dataset(tmp_path / "ds")


def parts(root):
    return sorted(p for p in root.rglob("*.parquet"))


def test_a_copied_part_is_refused_by_name_on_open(dataset):
    first = parts(dataset)[0]
    copy = first.with_name(first.stem + "-1.parquet")
    shutil.copyfile(first, copy)
    with pytest.raises(UnlistedDataFile, match=copy.name):
        cs.open_cohort(dataset)


def test_a_missing_part_is_refused_by_name_on_open(dataset):
    gone = parts(dataset)[-1]
    gone.unlink()
    with pytest.raises(ListedFileMissing, match=gone.name):
        cs.open_cohort(dataset)


def test_a_changed_part_is_refused_by_name(dataset):
    part = parts(dataset)[0]
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0x01
    part.write_bytes(bytes(data))
    with pytest.raises(ChecksumMismatch, match=part.name):
        cs.open_cohort(dataset).validate()
