"""SpatialData bridge: images.geometry_ref outlines become a polygons element, their files travel byte for byte
(also through `cellspec convert`), and outlines outside the directory are refused."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import spatialdata as sd
from spatialdata.transformations import get_transformation

import cellspec_sc as cs
from cellspec_sc.errors import CellspecError
from cellspec_sc.io._outlines import OutlineWarning


def square_feature(cell_id, x0, y0, side=4.0):
    ring = [[x0, y0], [x0 + side, y0], [x0 + side, y0 + side], [x0, y0 + side], [x0, y0]]
    return {"type": "Feature", "id": cell_id, "properties": {"objectType": "cell"},
            "geometry": {"type": "Polygon", "coordinates": [ring]}}


def with_outlines(tmp_path, x):
    features = [square_feature(str(c), 10.0 * i, 20.0) for i, c in enumerate(x.cells["cell_id"][:3])]
    features.append(square_feature("not-a-cell", 0, 0))
    (tmp_path / "outlines").mkdir()
    (tmp_path / "outlines" / "img1.geojson").write_text(json.dumps({"type": "FeatureCollection",
                                                                    "features": features}))
    images = x.images.copy()
    images["geometry_ref"] = pd.array(["outlines/img1.geojson", "outlines/missing.geojson"], dtype="string")
    return x.replace(images=images, source_dir=tmp_path)


def test_geometry_ref_outlines_become_a_polygons_element(tmp_path, through_zarr, uns_record):
    x = with_outlines(tmp_path, cs.example())
    with pytest.warns(OutlineWarning, match="img2.*not found"):
        sdata = cs.to_spatialdata(x)
    polygons = sdata.shapes["img1_outlines"]
    assert list(polygons.index) == list(x.cells["cell_id"][:3])
    assert polygons.geometry.iloc[1].bounds == (5.0, 10.0, 7.0, 12.0)  # pixels x 0.5 um
    m = get_transformation(polygons, to_coordinate_system="img1_px").to_affine_matrix(
        input_axes=("x", "y"), output_axes=("x", "y"))
    np.testing.assert_array_equal(m, [[2.0, 0, 0], [0, 2.0, 0], [0, 0, 1]])
    assert uns_record(sdata)["images"][0]["outlines"] == {"n_outlines": 3, "cells_without_outline": 37,
                                                      "skipped": {"unknown_id": 1}, "element": "img1_outlines"}
    assert "img2_outlines" not in sdata.shapes
    back = through_zarr(sdata, tmp_path / "o.zarr")
    assert cs.from_spatialdata(back).equals(x)
    y = cs.from_spatialdata(back, outline_dir=tmp_path / "files")  # the file travelled byte for byte
    assert y.equals(x) and y.source_dir == tmp_path / "files"
    original = (tmp_path / "outlines" / "img1.geojson").read_bytes()
    assert (tmp_path / "files" / "outlines" / "img1.geojson").read_bytes() == original
    (tmp_path / "files" / "outlines" / "img1.geojson").write_bytes(b"{}")
    with pytest.raises(CellspecError, match="other content"):
        cs.from_spatialdata(back, outline_dir=tmp_path / "files")


def test_outlines_outside_the_directory_are_refused(tmp_path):
    x = cs.example()
    images = x.images.copy()
    images["geometry_ref"] = pd.array(["../elsewhere.geojson", None], dtype="string")
    with pytest.raises(CellspecError, match="leaves the directory"):
        cs.to_spatialdata(x.replace(images=images, source_dir=tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "img1_outlines" not in cs.to_spatialdata(x.replace(images=images, source_dir=tmp_path),
                                                        outlines=False).shapes


def test_cellspec_convert_directory_to_spatialdata_and_back_with_outlines(tmp_path):
    from cellspec_sc.cli.main import main

    (tmp_path / "src").mkdir()
    source = with_outlines(tmp_path / "src", cs.example(adjacency=True))
    refs = pd.array(["outlines/img1.geojson", None], dtype="string")  # the directory writer copies this file
    cs.write(source.replace(images=source.images.assign(geometry_ref=refs)), tmp_path / "run1")
    x = cs.read(tmp_path / "run1")  # x.source_dir is run1, whose manifest lists the outline file
    store = tmp_path / "run1.spatialdata.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutlineWarning)
        assert main(["convert", str(tmp_path / "run1"), str(store)]) == 0
    assert sorted(sd.read_zarr(store).shapes) == ["img1", "img1_outlines", "img2"]
    assert main(["convert", str(tmp_path / "run1"), str(store)]) == 2  # exists
    assert main(["convert", str(store), str(tmp_path / "run1-again")]) == 0
    assert cs.read(tmp_path / "run1-again").equals(x)
    assert main(["convert", "example", str(store), "--overwrite"]) == 0
    assert cs.from_spatialdata(sd.read_zarr(store)).equals(cs.example())
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left behind
    other = tmp_path / "other.spatialdata.zarr"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert main(["convert", "example", str(other), "--overwrite"]) == 2
    assert (other / "notes.txt").read_text() == "mine"
