"""CellSpec.from_tables on plain pandas/numpy input: coercion, feature ids, provenance, validation, round trip."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pandas as pd
import pytest

import cellspec_sc as cs
from cellspec_sc.model import package_version


def plain_tables() -> dict:
    """What a user has: int ids, int coordinates, a float32 matrix, a dictionary without feature ids."""
    return dict(
        cells=pd.DataFrame({"cell_id": [1, 2, 3], "image_id": ["img1", "img1", "img2"], "sample_id": "s1",
                            "x": [10, 20, 30], "y": [5.5, 6.5, 7.5], "area": [40, 50, 60]}),
        measurements=np.array([[1.5, 40.0, 0.9], [2.25, 50.0, 0.8], [np.nan, 60.0, 0.7]], dtype=np.float32),
        dictionary=pd.DataFrame({"kind": ["intensity", "shape", "other"], "marker": ["CD3", None, None],
                                 "compartment": ["nucleus", "cell", None],
                                 "statistic": ["mean", "area", "detection_probability"],
                                 "unit": ["a.u.", "um2", "1"]}),
        images=pd.DataFrame({"image_id": ["img1", "img2"], "sample_id": "s1", "pixel_size": [1, 1],
                             "width_px": [100, 100], "height_px": [80, 80]}),
        channels=pd.DataFrame({"image_id": ["img1", "img1", "img2", "img2"], "channel_index": [1, 2, 1, 2],
                               "channel_name": ["DAPI", "CD3", "DAPI", "CD3"], "marker": ["DAPI", "CD3"] * 2}),
    )


def test_plain_frames_become_a_valid_object_with_spec_types():
    x = cs.CellSpec.from_tables(**plain_tables(), producer={"tool": "my-pipeline", "version": "2.1"})
    assert x.validate().ok
    assert x.cells["cell_id"].tolist() == ["1", "2", "3"] and x.cells["cell_id"].dtype == "string"
    assert x.cells["x"].dtype == np.float64 and x.cells["x"].tolist() == [10.0, 20.0, 30.0]
    assert x.images["pixel_size"].dtype == np.float64 and str(x.images["width_px"].dtype) == "Int32"
    assert str(x.channels["channel_index"].dtype) == "Int32"
    assert x.measurements.dtype == np.float64 and x.measurements.flags.c_contiguous
    assert x.measurements[1, 0] == 2.25 and x.measurements[0, 2] == np.float64(np.float32(0.9))
    assert np.isnan(x.measurements[2, 0])


def test_missing_feature_ids_follow_the_rule_of_each_kind():
    tables = plain_tables()
    tables["dictionary"]["feature_id"] = [None, "cell:area", None]
    x = cs.CellSpec.from_tables(**tables, producer="my-pipeline")
    assert x.feature_ids == ["nucleus:CD3:mean", "cell:area", "other:detection_probability"]
    assert x.dictionary["source_name"].tolist() == x.feature_ids  # a bare matrix has no headers
    assert x.provenance["history"][-1]["details"]["feature_ids_built"] == 2


def test_a_measurement_frame_gives_source_names_or_is_matched_by_feature_id():
    tables = plain_tables()
    tables["measurements"] = pd.DataFrame(tables["measurements"], columns=["CD3 mean", "Area", "Prob"])
    x = cs.CellSpec.from_tables(**tables, producer="my-pipeline")
    assert x.dictionary["source_name"].tolist() == ["CD3 mean", "Area", "Prob"]
    tables = plain_tables()
    ids = ["nucleus:CD3:mean", "cell:area", "other:detection_probability"]
    tables["dictionary"]["feature_id"] = ids
    tables["measurements"] = pd.DataFrame(tables["measurements"], columns=ids)[ids[::-1]]  # another order
    y = cs.CellSpec.from_tables(**tables, producer="my-pipeline")
    assert y.measurements[:, 1].tolist() == [40.0, 50.0, 60.0]  # cell:area, taken by id


def test_provenance_is_filled(tmp_path):
    source = tmp_path / "cells.csv"
    source.write_bytes(b"cell_id,x\n1,10\n")
    tables = plain_tables()
    tables["measurements"] = tables["measurements"].astype(np.float64)
    tables["measurements"][0, 1] = np.inf
    before = tables["measurements"].copy()
    x = cs.CellSpec.from_tables(**tables, producer="my-pipeline", inputs=[source],
                                parameters={"segmentation": "cellpose"}, operator="lab 3")
    p = x.provenance
    assert p["producer"] == {"tool": "my-pipeline", "version": None}
    assert p["reader"] == {"package": "cellspec_sc", "version": package_version(), "adapter": "from_tables",
                           "adapter_version": "1.0.0"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", p["created_utc"])
    assert p["inputs"] == [{"path_basename": "cells.csv", "bytes": 15,
                            "sha256": hashlib.sha256(source.read_bytes()).hexdigest()}]
    assert p["counts"] == {"rows_read": 3, "rows_kept": 3, "na_converted": 1, "nonfinite_converted": 1}
    assert p["parameters"] == {"segmentation": "cellpose"} and p["operator"] == "lab 3"
    step = p["history"][-1]
    assert step["step"] == "from_tables" and step["function"] == "cellspec_sc.CellSpec.from_tables"
    assert "cell_id: int64 -> string" in step["details"]["coerced"]["cells"]
    # the caller's array is kept
    assert np.isnan(x.measurements[0, 1]) and np.array_equal(tables["measurements"], before, equal_nan=True)


def test_a_wrong_unit_is_refused_naming_the_rule_and_what_is_allowed():
    tables = plain_tables()
    tables["dictionary"].loc[1, "unit"] = "µm²"
    with pytest.raises(cs.ValidationError) as err:
        cs.CellSpec.from_tables(**tables, producer="my-pipeline")
    message = str(err.value)
    assert "from_tables: change what the rules below name" in message
    assert "dictionary_unit" in message and "a.u., um, um2, px, px2, rad, 1" in message and "(1)" in message
    assert [r.name for r in err.value.report.failures] == ["dictionary_unit"]


def test_a_marker_without_channel_is_refused_naming_the_rule():
    tables = plain_tables()
    tables["channels"] = tables["channels"][tables["channels"]["marker"] != "CD3"]
    with pytest.raises(cs.ValidationError, match="markers_in_channels"):
        cs.CellSpec.from_tables(**tables, producer="my-pipeline")


def test_values_that_cannot_be_converted_name_table_column_and_row():
    tables = plain_tables()
    tables["cells"]["x"] = [10, "ten", 30]
    with pytest.raises(cs.InputError, match=r"cells\.x, row 1 \('ten'\)"):
        cs.CellSpec.from_tables(**tables, producer="my-pipeline")
    tables = plain_tables()
    tables["measurements"] = tables["measurements"][:, :2]
    with pytest.raises(cs.InputError, match=r"shape \(3, 2\), expected \(3, 3\)"):
        cs.CellSpec.from_tables(**tables, producer="my-pipeline")
    tables = plain_tables()
    tables["dictionary"].loc[2, "kind"] = "score"
    with pytest.raises(cs.InputError, match="dictionary row 2: no feature_id and kind 'score'"):
        cs.CellSpec.from_tables(**tables, producer="my-pipeline")


def test_round_trip_through_disk(tmp_path):
    x = cs.CellSpec.from_tables(**plain_tables(), producer={"tool": "my-pipeline", "version": "2.1"})
    y = cs.read(cs.write(x, tmp_path / "mine.cellspec"))
    assert y.equals(x), y.differences(x)


def test_the_example_rebuilt_from_plain_tables_is_the_example():
    x = cs.example(adjacency=True)

    def plain(frame):
        return pd.DataFrame({c: frame[c].astype(object).where(frame[c].notna(), None) if frame[c].dtype != np.float64
                             else frame[c] for c in frame.columns})

    y = cs.CellSpec.from_tables(cells=plain(x.cells), measurements=x.measurements.astype(np.float32).astype(np.float64),
                                dictionary=plain(x.dictionary), images=plain(x.images), channels=plain(x.channels),
                                adjacency=plain(x.adjacency), producer=x.provenance["producer"])
    assert y.replace(provenance=x.provenance).differences(x.replace(
        measurements=x.measurements.astype(np.float32).astype(np.float64), provenance=x.provenance)) == []
