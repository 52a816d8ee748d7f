"""cellspec_sc.io._outlines: geometry_ref GeoJSON files, resolved safely and joined to cells."""

from __future__ import annotations

import json
import os
import warnings

import pandas as pd
import pytest

import cellspec_sc as cs
from cellspec_sc.errors import CellspecError
from cellspec_sc.io import image_outlines, write_manifest
from cellspec_sc.io._outlines import OutlineWarning, outline_path, read_outlines


def square(x0, y0, side=2.0):
    return {"type": "Polygon", "coordinates": [[[x0, y0], [x0 + side, y0], [x0 + side, y0 + side],
                                                [x0, y0 + side], [x0, y0]]]}


def write_geojson(path, features, collection=True):
    data = {"type": "FeatureCollection", "features": features} if collection else features
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_outline_path_refuses_paths_that_leave_the_directory(tmp_path):
    (tmp_path / "run").mkdir()
    for ref in ("../x.geojson", "sub/../../x.geojson", "sub/../a.geojson", str(tmp_path / "x.geojson"), "",
                "c:\\x.geojson", "a\\..\\..\\x.geojson"):
        with pytest.raises(CellspecError, match="images.geometry_ref"):
            outline_path(tmp_path / "run", ref)
    assert outline_path(tmp_path / "run", "sub/a.geojson") == tmp_path / "run" / "sub" / "a.geojson"


def test_outline_path_refuses_a_symlink_out_of_the_directory(tmp_path):
    (tmp_path / "run").mkdir()
    write_geojson(tmp_path / "outside.geojson", [])
    os.symlink(tmp_path / "outside.geojson", tmp_path / "run" / "link.geojson")
    with pytest.raises(CellspecError, match="leads outside the directory"):
        outline_path(tmp_path / "run", "link.geojson")


def test_cell_id_property_wins_over_feature_id_and_pixels_become_micrometres(tmp_path):
    features = [
        {"type": "Feature", "id": "uuid-1", "properties": {"cell_id": "7"}, "geometry": square(10, 20)},
        {"type": "Feature", "id": "8", "properties": {"objectType": "cell"}, "geometry": square(0, 0)},
        {"type": "Feature", "id": "9", "properties": {}, "geometry": {"type": "Point", "coordinates": [1, 1]}},
        {"type": "Feature", "properties": {}, "geometry": square(5, 5)},
        {"type": "Feature", "id": "8", "properties": {}, "geometry": square(50, 50)},
    ]
    o = read_outlines(write_geojson(tmp_path / "a.geojson", features), pixel_size=0.5, pixel_size_y=0.25)
    assert list(o.geometry.index) == ["7", "8"]
    assert o.geometry["7"].bounds == (5.0, 5.0, 6.0, 5.5)
    assert o.geometry["8"].bounds == (0.0, 0.0, 1.0, 0.5)  # the first of the repeated id
    assert o.skipped == {"not_polygonal": 1, "no_id": 1, "duplicate_id": 1}


def test_bare_feature_list_numeric_ids_and_micrometre_units(tmp_path):
    features = [{"type": "Feature", "id": 3, "geometry": square(1, 1, 4)}]
    o = read_outlines(write_geojson(tmp_path / "a.json", features, collection=False), pixel_size=0.5, units="um")
    assert list(o.geometry.index) == ["3"]
    assert o.geometry["3"].area == 16.0


def test_for_cells_keeps_cell_order_and_counts_unknown_ids(tmp_path):
    features = [{"type": "Feature", "id": i, "geometry": square(0, 0)} for i in ("b", "a", "zz")]
    o = read_outlines(write_geojson(tmp_path / "a.geojson", features))
    got = o.for_cells(["a", "c", "b"])
    assert list(got.index) == ["a", "b"]
    assert o.skipped == {"unknown_id": 1}


def with_refs(tmp_path, refs):
    x = cs.example()
    images = x.images.copy()
    images["geometry_ref"] = pd.array(refs, dtype="string")
    return x.replace(images=images, source_dir=tmp_path)


def test_image_outlines_warns_on_missing_unreadable_and_unlisted_files(tmp_path):
    (tmp_path / "bad.geojson").write_text("{not json", encoding="utf-8")
    x = with_refs(tmp_path, ["missing.geojson", "bad.geojson"])
    with pytest.warns(OutlineWarning) as record:
        assert image_outlines(x) == {}
    messages = " ".join(str(w.message) for w in record)
    assert "'img1'" in messages and "not found" in messages
    assert "'img2'" in messages and "cannot read GeoJSON" in messages

    write_geojson(tmp_path / "ok.geojson", [{"type": "Feature", "id": "1", "geometry": square(0, 0)}])
    (tmp_path / "cells.parquet").write_bytes(b"stand-in")
    write_manifest(tmp_path, ["cells.parquet"])
    x = with_refs(tmp_path, ["ok.geojson", None])
    with pytest.warns(OutlineWarning, match="not listed in MANIFEST"):
        assert image_outlines(x) == {}
    (tmp_path / "DONE").write_text("0" * 64 + "\n")
    with pytest.warns(OutlineWarning, match="DONE holds"):
        assert image_outlines(x) == {}
    write_manifest(tmp_path, ["cells.parquet", "ok.geojson"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = image_outlines(x)
    assert list(got) == ["img1"]
    assert got["img1"].geometry["1"].bounds == (0.0, 0.0, 1.0, 1.0)  # pixel_size 0.5 of the example


def test_image_outlines_refuses_escaping_ref_and_needs_a_directory(tmp_path):
    with pytest.raises(CellspecError, match="leaves the directory"):
        image_outlines(with_refs(tmp_path, ["../../etc/passwd", None]))
    x = with_refs(tmp_path, ["a.geojson", None]).replace(source_dir=None)
    with pytest.warns(OutlineWarning, match="directory is unknown"):
        assert image_outlines(x) == {}


def test_materialise_outline_files_writes_inside_and_keeps_other_content(tmp_path):
    from cellspec_sc.io import materialise_outline_files

    root = materialise_outline_files({"a/b.geojson": b"1", "c.json": b""}, tmp_path / "d")
    assert (root / "a" / "b.geojson").read_bytes() == b"1" and (root / "c.json").read_bytes() == b""
    assert materialise_outline_files({"a/b.geojson": b"1"}, root) == root  # same content: fine
    with pytest.raises(CellspecError, match="other content"):
        materialise_outline_files({"a/b.geojson": b"2"}, root)
    with pytest.raises(CellspecError, match="leaves the directory"):
        materialise_outline_files({"../x.geojson": b"2"}, root)
