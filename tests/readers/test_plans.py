"""Adapters turn a header (and side files) into a frozen plan and keep no state between the pipeline's steps:
the same adapter reads any number of files, in any order, to the same objects."""

from __future__ import annotations

import copy
import dataclasses
import warnings

import pytest

import cellspec_sc as cs
from cellspec_sc.readers import McquantAdapter, QuPathAdapter, ReaderWarning
from cellspec_sc.readers._pipeline import read_export
from exports import DATA


def test_a_plan_is_frozen_and_says_what_each_measurement_column_means():
    plan = QuPathAdapter(pixel_size=0.325).plan(DATA / "qupath" / "v05_channel_first.tsv")
    assert len(plan.features) == len(plan.roles.matrix)
    assert [f.source_name for f in plan.features] == list(plan.roles.matrix)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.roles = None
    mc = McquantAdapter(pixel_size=0.65, markers_csv=DATA / "mcmicro" / "markers.csv").plan(
        DATA / "mcmicro" / "exemplar-001--unmicst_cell.csv")
    assert mc.file_image == "exemplar-001" and mc.channel_names is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        mc.pixel_size = 1.0


def test_one_adapter_reads_several_files_in_any_order_without_carrying_state(tmp_path):
    adapter = QuPathAdapter(pixel_size=0.5)
    before = copy.deepcopy(vars(adapter))
    first, second = DATA / "qupath" / "v04_cell_detection.tsv", DATA / "qupath" / "v06_compartment_first.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReaderWarning)
        a, b = read_export(adapter, first), read_export(adapter, second)
        b_again, a_again = read_export(adapter, second), read_export(adapter, first)
        fresh = cs.read_qupath(second, pixel_size=0.5)
    assert vars(adapter) == before
    assert a.equals(a_again.replace(provenance=a.provenance)), a.differences(a_again)
    assert b.equals(b_again.replace(provenance=b.provenance)), b.differences(b_again)
    assert b.equals(fresh.replace(provenance=b.provenance)), b.differences(fresh)
