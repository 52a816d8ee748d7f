"""The cellspec record a scene carries (root attribute ``cellspec``): written with its format version, read back
to what was compiled; records of scenes written before versions were stored still read; a newer major version is
refused naming both versions."""

from __future__ import annotations

import json
from pathlib import Path

import luxar
import pytest
import zarr

import cellspec_sc as cs
from cellspec_sc.bridges.luxar._record import FORMAT, LEGACY_VERSION, SceneRecord, decode, encode, read_scene_record
from luxar_scenes import ramp_object

RECORDS = Path(__file__).resolve().parents[2] / "data" / "records"


def test_a_compiled_scene_carries_its_record_with_the_format_version(tmp_path):
    path = cs.to_luxar(ramp_object([1.0, 2.0]), tmp_path / "s.luxar.zarr",
                       layers=["cells", "marker:CD3e", "category:classification"])
    stored = luxar.LuxarScene.load(path).root_attrs["cellspec"]
    assert stored["format_version"] == FORMAT.version == "1.0"
    record = read_scene_record(path)
    assert record == SceneRecord(layers=("cells", "marker:CD3e", "category:classification"), layout="side",
                                 images=("ramp",), image_nodes=("ramp",),
                                 colour_layers=("classification", "CD3e (cell:CD3e:mean)"))
    assert record.format_version == "1.0"
    assert encode(record) == stored


def test_records_written_before_versions_decode_as_legacy_to_the_same_record():
    side = decode(json.loads((RECORDS / "luxar_scene_cellspec_unversioned.json").read_text()), where="side")
    assert side == SceneRecord(layers=("cells", "marker:CD3e", "category:classification"), layout="side",
                               images=("img1", "img2"), image_nodes=("img1", "img2"),
                               colour_layers=("classification", "CD3e (cell:CD3e:mean)"))
    assert side.format_version == LEGACY_VERSION
    stack = decode(json.loads((RECORDS / "luxar_scene_cellspec_unversioned_stack.json").read_text()), where="stack")
    assert stack == SceneRecord(("cells",), "stack", ("s1", "s2"), ("s1", "s2"), ("classification",))
    assert decode(encode(stack), where="again") == stack  # written again, it reads back the same


def test_the_legacy_example_is_what_a_scene_of_the_same_object_records_today(tmp_path):
    """The stored example came from ``cs.example(n_cells=40)`` with these layers; today's scene records the same."""
    path = cs.to_luxar(cs.example(n_cells=40), tmp_path / "s.luxar.zarr",
                       layers=["cells", "marker:CD3e", "category:classification"])
    legacy = decode(json.loads((RECORDS / "luxar_scene_cellspec_unversioned.json").read_text()), where="legacy")
    assert read_scene_record(path) == legacy


def test_a_newer_major_version_is_refused_naming_both_versions(tmp_path):
    path = cs.to_luxar(ramp_object([1.0, 2.0]), tmp_path / "s.luxar.zarr")
    root = zarr.open_group(str(path), mode="r+")
    root.attrs["cellspec"] = {**dict(root.attrs["cellspec"]), "format_version": "2.0"}
    with pytest.raises(cs.FormatError, match=r"s\.luxar\.zarr: the cellspec record of a Luxar scene .* is version "
                                             r"2\.0, newer than the 1\.0 this cellspec_sc reads"):
        read_scene_record(path)


def test_a_newer_minor_version_is_read():
    record = SceneRecord(("cells",), "side", ("a",), ("a",), ("cells",))
    newer = decode({**encode(record), "format_version": "1.7", "added_later": True}, where="s.luxar.zarr")
    assert newer == record and newer.format_version == "1.7"


@pytest.mark.parametrize(("attribute", "message"), [
    (["cells"], "root attribute 'cellspec' is a list, not a record"),
    ({"format_version": "one"}, "format_version 'one', which is not MAJOR.MINOR"),
    ({"layers": "cells", "layout": "side", "images": [], "image_nodes": [], "colour_layers": []},
     r"cellspec.layers is str, not a list"),
    ({"layers": [{"name": "cells"}], "layout": "side", "images": [], "image_nodes": [], "colour_layers": []},
     r"cellspec.layers\[0\] is \{'name': 'cells'\}, not a string"),
    ({"layers": [], "layout": "grid", "images": [], "image_nodes": [], "colour_layers": []},
     "cellspec.layout is 'grid', not one of side, stack"),
    ({"layers": [], "layout": "side", "images": ["a"], "image_nodes": [], "colour_layers": []},
     "cellspec.images has 1 entries but image_nodes 0"),
])
def test_damaged_records_are_refused_naming_the_key(attribute, message):
    with pytest.raises(cs.FormatError, match=message):
        decode(attribute, where="s.luxar.zarr")


def test_a_directory_without_a_record_is_refused(tmp_path):
    with pytest.raises(cs.FormatError, match="no root attribute 'cellspec'"):
        read_scene_record(tmp_path)
