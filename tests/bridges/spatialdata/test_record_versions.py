"""The SpatialData bridge's record (table.uns["cellspec_spatialdata"] and sdata.attrs["cellspec_sc"]) carries its
format_version: records written before versions were stored still read (tests/data/records/spatialdata-1.0.json,
kept as the bridge wrote them), and a record of a newer major version is refused naming both versions."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import spatialdata as sd

import cellspec_sc as cs
from cellspec_sc.bridges.spatialdata import read_spatialdata
from cellspec_sc.bridges.spatialdata._record import (
    ATTRS_KEY,
    RECORD,
    UNS_KEY,
    BridgeRecord,
    decode,
    encode,
    table_in_attrs,
)
from cellspec_sc.cli.main import main
from cellspec_sc.errors import FormatError, InputError

STORED = Path(__file__).resolve().parents[2] / "data" / "records" / "spatialdata-1.0.json"


def renamed_columns():
    """cs.example() with cells columns SpatialData refuses as obs names, as in the stored record's about."""
    x = cs.example()
    cells = x.cells.copy()
    cells["Area"] = 1.5
    cells["my score (%)"] = pd.array(["a", None] * 40, dtype="string")
    cells["_index"] = pd.array(range(80), dtype="Int32")
    return x.replace(cells=cells)


OBJECTS = {"example": cs.example, "renamed_columns": renamed_columns}


def stored(name):
    return json.loads(STORED.read_text(encoding="utf-8"))["records"][name]


def with_record(sdata, attrs, uns):
    """``sdata`` with the bridge's attrs entry and uns record replaced."""
    sdata.attrs[ATTRS_KEY] = attrs
    sdata.tables["table"].uns[UNS_KEY] = uns
    return sdata


def stamped(text, version):
    return json.dumps({**json.loads(text), "format_version": version})


@pytest.mark.parametrize("name", list(OBJECTS))
def test_a_record_written_before_versions_reads_back_equal(name, tmp_path):
    x, old = OBJECTS[name](), stored(name)
    assert "format_version" not in old["attrs"] and "format_version" not in json.loads(old["uns"])
    sdata = with_record(cs.to_spatialdata(x), old["attrs"], old["uns"])
    assert cs.from_spatialdata(sdata).equals(x)
    sdata.write(tmp_path / "old.zarr")
    assert read_spatialdata(tmp_path / "old.zarr").equals(x)


@pytest.mark.parametrize("name", list(OBJECTS))
def test_a_record_written_before_versions_is_version_1_0_with_what_the_current_one_holds(name):
    old = stored(name)
    assert RECORD.version_of(json.loads(old["uns"]), where="here", legacy=lambda r: "1.0") == (1, 0)
    assert table_in_attrs({ATTRS_KEY: old["attrs"]}) == "table"
    current = cs.to_spatialdata(OBJECTS[name]()).tables["table"].uns[UNS_KEY]
    assert decode(old["uns"], where="here") == decode(current, where="here")
    if name == "renamed_columns":
        assert decode(old["uns"], where="here").obs_columns_renamed == {
            "Area-2": "Area", "my_score____": "my score (%)", "x_index": "_index"}


def test_the_record_and_the_attrs_are_written_with_the_current_version():
    sdata = cs.to_spatialdata(cs.example())
    record = json.loads(str(sdata.tables["table"].uns[UNS_KEY]))
    attrs = sdata.attrs[ATTRS_KEY]
    assert RECORD.version == "1.1"
    assert next(iter(record)) == "format_version" and record["format_version"] == RECORD.version
    assert attrs["format_version"] == RECORD.version and attrs["table"] == "table"
    assert "bridge_version" not in record and "bridge_version" not in attrs


def test_encode_and_decode_are_inverse():
    record = BridgeRecord(images=[{"image_id": "a b", "name": "a_b", "n_cells": 0}],
                          obs_columns_renamed={"Area-2": "Area"}, fallback_cells={"a b": 3})
    assert decode(encode(record), where="here") == record


def test_a_newer_minor_version_is_read():
    x = cs.example()
    sdata = cs.to_spatialdata(x)
    text = str(sdata.tables["table"].uns[UNS_KEY])
    newer = with_record(sdata, {**sdata.attrs[ATTRS_KEY], "format_version": "1.9"}, stamped(text, "1.9"))
    assert cs.from_spatialdata(newer).equals(x)


def test_a_record_of_a_newer_major_version_is_refused_naming_both_versions(tmp_path):
    sdata = cs.to_spatialdata(cs.example())
    sdata.tables["table"].uns[UNS_KEY] = stamped(str(sdata.tables["table"].uns[UNS_KEY]), "2.0")
    with pytest.raises(FormatError, match=r"SpatialData table 'table'.* version 2\.0, newer than the 1\.1"):
        cs.from_spatialdata(sdata)
    sdata.write(tmp_path / "newer.zarr")
    with pytest.raises(FormatError, match=r"newer\.zarr: SpatialData table 'table'.* 2\.0, newer than the 1\.1"):
        read_spatialdata(tmp_path / "newer.zarr")
    assert main(["info", str(tmp_path / "newer.zarr")]) == 2


def test_attrs_of_a_newer_major_version_are_refused_naming_both_versions():
    sdata = cs.to_spatialdata(cs.example())
    sdata.attrs[ATTRS_KEY] = {**sdata.attrs[ATTRS_KEY], "format_version": "3.2"}
    with pytest.raises(FormatError, match=r"attrs\['cellspec_sc'\].* version 3\.2, newer than the 1\.1"):
        cs.from_spatialdata(sdata)


def test_a_record_that_is_not_the_bridges_is_refused():
    sdata = cs.to_spatialdata(cs.example())
    sdata.tables["table"].uns[UNS_KEY] = "{not json"
    with pytest.raises(InputError, match="not the JSON text written by to_spatialdata"):
        cs.from_spatialdata(sdata)
    sdata.tables["table"].uns[UNS_KEY] = json.dumps({"format_version": "1.1", "images": []})
    with pytest.raises(InputError, match="was not written by cellspec_sc.to_spatialdata"):
        cs.from_spatialdata(sdata)


def test_a_query_result_keeps_the_versioned_record():
    sdata = cs.to_spatialdata(cs.example())
    q = sd.bounding_box_query(sdata, axes=("x", "y"), min_coordinate=[0, 0], max_coordinate=[100, 100],
                              target_coordinate_system="img1")
    assert json.loads(str(q.tables["table"].uns[UNS_KEY]))["format_version"] == RECORD.version
