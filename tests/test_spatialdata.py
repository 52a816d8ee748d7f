"""SpatialData bridge: lossless round trips (memory and zarr), names, shapes, coordinate systems,
spatialdata queries and table filtering, outlines, SpatialData objects made elsewhere."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import spatialdata as sd
from hypothesis import given, settings
from spatialdata.transformations import get_transformation
from strategies import cellspecs

import cellspec_sc as cs
from cellspec_sc.bridges.spatialdata import UNS_KEY
from cellspec_sc.errors import CellspecError
from cellspec_sc.io._outlines import OutlineWarning


def through_zarr(sdata, path):
    sdata.write(path)
    return sd.read_zarr(path)


def record(sdata):
    return json.loads(str(sdata.tables["table"].uns[UNS_KEY]))


@pytest.fixture
def xa():
    return cs.example(adjacency=True, region_layers=("tissue",))


# -- round trips ---------------------------------------------------------------------------------
def test_round_trip_in_memory_and_through_zarr(xa, tmp_path):
    sdata = cs.to_spatialdata(xa)
    assert cs.from_spatialdata(sdata).differences(xa) == []
    back = through_zarr(sdata, tmp_path / "x.spatialdata.zarr")
    assert cs.from_spatialdata(back).differences(xa) == []
    assert back.attrs["cellspec_sc"]["package"] == "cellspec_sc"
    assert back.attrs["cellspec_sc"]["version"] == cs.__version__


@given(cellspecs())
def test_round_trip_of_generated_objects_in_memory(x):
    assert cs.from_spatialdata(cs.to_spatialdata(x)).differences(x) == []


@settings(max_examples=8)  # a zarr write takes ~2 s here (anndata writes each uns array separately)
@given(cellspecs(max_cells=4, max_features=3))
def test_round_trip_of_generated_objects_through_zarr(tmp_path_factory, x):
    path = tmp_path_factory.mktemp("sd") / "x.zarr"
    assert cs.from_spatialdata(through_zarr(cs.to_spatialdata(x), path)).differences(x) == []


def test_images_without_cells_and_zero_cells_round_trip(xa, tmp_path):
    one = xa.subset(cells=xa.cells["image_id"] == "img1")
    sdata = cs.to_spatialdata(one)
    assert list(sdata.shapes) == ["img1"]
    assert cs.from_spatialdata(through_zarr(sdata, tmp_path / "one.zarr")).equals(one)
    none = xa.subset(cells=np.zeros(xa.n_cells, dtype=bool))
    sdata = cs.to_spatialdata(none)
    assert list(sdata.shapes) == []
    assert cs.from_spatialdata(through_zarr(sdata, tmp_path / "none.zarr")).equals(none)


# -- names ---------------------------------------------------------------------------------------
def renamed_images(x, mapping):
    images, cells, channels = x.images.copy(), x.cells.copy(), x.channels.copy()
    for frame in (images, cells, channels):
        frame["image_id"] = frame["image_id"].map(mapping).astype("string")
    adjacency = None
    if x.adjacency is not None:
        adjacency = x.adjacency.copy()
        adjacency["image_id"] = adjacency["image_id"].map(mapping).astype("string")
    return x.replace(images=images, cells=cells, channels=channels, adjacency=adjacency)


def test_image_ids_become_valid_unique_names_and_come_back(tmp_path):
    x = cs.example(n_images=4, adjacency=True)
    x = renamed_images(x, {"img1": "Slide 1 / core #3", "img2": "table", "img3": "Bild_ä", "img4": "bild_ä"})
    sdata = cs.to_spatialdata(x)
    names = {e["image_id"]: e["name"] for e in record(sdata)["images"]}
    assert names == {"Slide 1 / core #3": "Slide_1___core__3", "table": "table-2", "Bild_ä": "Bild__",
                     "bild_ä": "bild__-2"}
    assert sorted(sdata.shapes) == sorted(names.values())
    assert set(sdata.coordinate_systems) == {n for v in names.values() for n in (v, v + "_px")}
    assert cs.from_spatialdata(through_zarr(sdata, tmp_path / "n.zarr")).equals(x)


def test_hidden_looking_image_ids_are_not_lost_on_disk(tmp_path):
    # spatialdata accepts the element name ".a", but read_zarr skips such a hidden group
    x = renamed_images(cs.example(), {"img1": ".a", "img2": "..."})
    sdata = cs.to_spatialdata(x)
    assert sorted(sdata.shapes) == ["x...", "x.a"]
    back = through_zarr(sdata, tmp_path / "h.zarr")
    assert sorted(back.shapes) == ["x...", "x.a"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert cs.from_spatialdata(back).equals(x)


def test_obs_columns_that_spatialdata_refuses_are_renamed_and_restored(tmp_path):
    x = cs.example()
    cells = x.cells.copy()
    cells["Area"] = 1.5  # differs from "area" only by case
    cells["my score (%)"] = pd.array(["a", None] * 40, dtype="string")
    cells["_index"] = pd.array(range(80), dtype="Int32")
    x = x.replace(cells=cells)
    sdata = cs.to_spatialdata(x)
    obs = sdata.tables["table"].obs
    assert {"Area-2", "my_score____", "x_index"} <= set(obs.columns)
    assert record(sdata)["obs_columns_renamed"] == {"Area-2": "Area", "my_score____": "my score (%)",
                                                    "x_index": "_index"}
    assert cs.from_spatialdata(through_zarr(sdata, tmp_path / "c.zarr")).equals(x)


# -- shapes, table and coordinate systems ----------------------------------------------------------
def test_circles_follow_the_xenium_convention_and_the_table_annotates_them(xa):
    sdata = cs.to_spatialdata(xa)
    circles = sdata.shapes["img2"]
    cells = xa.cells[xa.cells["image_id"] == "img2"]
    assert list(circles.index) == list(cells["cell_id"])
    first = cells.iloc[0]
    assert circles.geometry.iloc[0].x == first["x"] and circles.geometry.iloc[0].y == first["y"]
    assert circles["radius"].iloc[0] == math.sqrt(first["area"] / math.pi)
    table = sdata.tables["table"]
    attrs = table.uns["spatialdata_attrs"]
    assert attrs == {"region": ["img1", "img2"], "region_key": "cs__region", "instance_key": "cell_id"}
    assert isinstance(table.obs["cs__region"].dtype, pd.CategoricalDtype)
    assert table.obs["cell_id"].dtype == circles.index.dtype
    matched = sd.match_table_to_element(sdata, "img2")
    assert list(matched.obs["cell_id"]) == list(circles.index)


def test_missing_area_gets_the_documented_fallback_radius():
    x = cs.example()
    cells = x.cells.copy()
    cells.loc[[0, 1], "area"] = np.nan  # both in img1
    cells.loc[cells["image_id"] == "img2", "area"] = np.nan  # no area at all in img2
    x = x.replace(cells=cells)
    sdata = cs.to_spatialdata(x)
    img1, img2 = sdata.shapes["img1"], sdata.shapes["img2"]
    known = np.sqrt(cells.loc[cells["image_id"] == "img1", "area"].dropna().to_numpy() / np.pi)
    assert img1["radius"].iloc[0] == img1["radius"].iloc[1] == np.median(known)
    assert img1["radius_is_fallback"].tolist()[:3] == [True, True, False]
    assert (img2["radius"] == 0.5).all() and img2["radius_is_fallback"].all()  # one pixel of 0.5 um
    assert record(sdata)["radius"]["fallback_cells"] == {"img1": 2, "img2": 40}
    assert cs.from_spatialdata(sdata).equals(x)


def test_pixel_coordinate_system_scales_by_the_pixel_size_in_x_and_y():
    x = cs.example()
    images = x.images.copy()
    images["pixel_size_y"] = [0.25, np.nan]
    x = x.replace(images=images)
    sdata = cs.to_spatialdata(x)
    m1 = get_transformation(sdata.shapes["img1"], to_coordinate_system="img1_px").to_affine_matrix(
        input_axes=("x", "y"), output_axes=("x", "y"))
    m2 = get_transformation(sdata.shapes["img2"], to_coordinate_system="img2_px").to_affine_matrix(
        input_axes=("x", "y"), output_axes=("x", "y"))
    np.testing.assert_array_equal(m1, [[2.0, 0, 0], [0, 4.0, 0], [0, 0, 1]])
    np.testing.assert_array_equal(m2, [[2.0, 0, 0], [0, 2.0, 0], [0, 0, 1]])
    micrometres = get_transformation(sdata.shapes["img1"], to_coordinate_system="img1")
    np.testing.assert_array_equal(micrometres.to_affine_matrix(input_axes=("x", "y"), output_axes=("x", "y")),
                                  np.eye(3))


def test_a_subnormal_pixel_size_gets_no_pixel_coordinate_system():
    x = cs.example()
    x = x.replace(images=x.images.assign(pixel_size=[5e-324, 0.5]))
    sdata = cs.to_spatialdata(x)
    assert set(sdata.coordinate_systems) == {"img1", "img2", "img2_px"}  # 1 / 5e-324 is infinite
    assert record(sdata)["images"][0]["pixel_coordinate_system"] is None
    assert cs.from_spatialdata(sdata).equals(x)


def test_an_image_added_in_pixels_overlays_the_cells():
    from spatialdata.models import Image2DModel
    from spatialdata.transformations import Identity

    x = cs.example()
    sdata = cs.to_spatialdata(x)
    cell = x.cells.iloc[0]  # img1, pixel size 0.5: pixel (col, row) = floor(x / 0.5), floor(y / 0.5)
    col, row = int(cell["x"] // 0.5), int(cell["y"] // 0.5)
    pixels = np.zeros((1, int(x.images["height_px"][0]), int(x.images["width_px"][0])), dtype=np.uint8)
    pixels[0, row, col] = 255
    sdata.images["img1_image"] = Image2DModel.parse(pixels, dims=("c", "y", "x"),
                                                    transformations={"img1_px": Identity()})
    in_pixels = sd.transform(sdata.shapes["img1"], to_coordinate_system="img1_px")
    centre = in_pixels.geometry.iloc[0]
    assert (math.floor(centre.x), math.floor(centre.y)) == (col, row)
    image = sdata.images["img1_image"]
    assert int(image.isel(c=0, y=math.floor(centre.y), x=math.floor(centre.x))) == 255
    assert cs.from_spatialdata(sdata).equals(x)  # an added image does not disturb the cells


# -- queries and filtering -----------------------------------------------------------------------
def frame_um(x, image_id="img1"):
    """(width, height) of an image in micrometres, from its images row."""
    row = x.images.set_index("image_id").loc[image_id]
    return float(row["width_px"] * row["pixel_size"]), float(row["height_px"] * row["pixel_size"])


def box_um(x):
    """A box over part of img1: from 10% to 60% of its width, 7% to 67% of its height."""
    width, height = frame_um(x)
    return (0.1 * width, 0.07 * height, 0.6 * width, 0.67 * height)


def expected_cells(x, image_id, x0, y0, x1, y1):
    c = x.cells
    inside = (c["image_id"] == image_id) & c["x"].between(x0, x1) & c["y"].between(y0, y1)
    return {(image_id, cell_id) for cell_id in c.loc[inside, "cell_id"]}


def check_subset(y, x, wanted):
    """y is x restricted to the (image_id, cell_id) keys in wanted, contacts trimmed, history noted."""
    assert y.validate().ok
    keys = set(zip(y.cells["image_id"], y.cells["cell_id"], strict=True))
    assert keys == wanted
    pairs = set(zip(y.adjacency["image_id"], y.adjacency["cell_id_a"], y.adjacency["cell_id_b"], strict=True))
    all_pairs = set(zip(x.adjacency["image_id"], x.adjacency["cell_id_a"], x.adjacency["cell_id_b"], strict=True))
    assert pairs == {(i, a, b) for i, a, b in all_pairs if (i, a) in keys and (i, b) in keys}
    assert len(pairs) < len(all_pairs)
    rows = [k in wanted for k in zip(x.cells["image_id"], x.cells["cell_id"], strict=True)]
    assert y.equals(x.subset(cells=np.array(rows)).replace(provenance=y.provenance))
    assert y.provenance["history"][-1]["details"]["cells_after"] == len(wanted)


@pytest.mark.parametrize("filter_table", [True, False])
def test_bounding_box_query_gives_a_valid_cellspec_of_the_cells_left(xa, tmp_path, filter_table):
    sdata = through_zarr(cs.to_spatialdata(xa), tmp_path / "q.zarr")
    box = box_um(xa)
    q = sd.bounding_box_query(sdata, axes=("x", "y"), min_coordinate=list(box[:2]), max_coordinate=list(box[2:]),
                              target_coordinate_system="img1", filter_table=filter_table)
    wanted = expected_cells(xa, "img1", *box)
    assert 0 < len(wanted) < 40
    if filter_table:
        check_subset(cs.from_spatialdata(q), xa, wanted)
    else:  # the table still has the cells of img2, whose element the query removed
        with pytest.warns(UserWarning, match=r"left out: \{'img2': 40\}"):
            check_subset(cs.from_spatialdata(q), xa, wanted)


def test_bounding_box_query_in_pixels_matches_the_same_box_in_micrometres(xa):
    sdata = cs.to_spatialdata(xa)
    box = box_um(xa)
    in_pixels = [v / 0.5 for v in box]  # pixel size 0.5 um
    q = sd.bounding_box_query(sdata, axes=("x", "y"), min_coordinate=in_pixels[:2], max_coordinate=in_pixels[2:],
                              target_coordinate_system="img1_px")
    wanted = expected_cells(xa, "img1", *box)
    assert 0 < len(wanted) < 40
    check_subset(cs.from_spatialdata(q), xa, wanted)


def test_polygon_query_gives_a_valid_cellspec_of_the_cells_left(xa):
    from shapely.geometry import Polygon

    sdata = cs.to_spatialdata(xa)
    width, height = frame_um(xa)
    triangle = Polygon([(0, 0), (width, 0), (0, height)])  # the top-left half of img1
    q = sd.polygon_query(sdata, triangle, target_coordinate_system="img1")
    c = xa.cells
    in_img1 = c["image_id"] == "img1"
    # a circle is kept when it intersects the triangle: centre distance to the hypotenuse below its radius
    distance = (height * c["x"] + width * c["y"] - width * height) / np.hypot(width, height)
    radius = np.sqrt(c["area"] / np.pi)
    wanted = {("img1", cell_id) for cell_id in c.loc[in_img1 & (distance < radius), "cell_id"]}
    assert 0 < len(wanted) < 40
    check_subset(cs.from_spatialdata(q), xa, wanted)


def test_filtering_the_table_keeps_the_cells_of_the_rows_left(xa, tmp_path):
    import annsel as an

    sdata = cs.to_spatialdata(xa)
    tumour = set(zip(*xa.cells.loc[xa.cells["classification"] == "Tumor", ["image_id", "cell_id"]].T.to_numpy()))
    by_query = sdata.filter_by_table_query("table", obs_expr=an.col("classification") == "Tumor")
    check_subset(cs.from_spatialdata(by_query), xa, tumour)
    table = sdata.tables["table"]
    sdata.tables["table"] = table[(table.obs["classification"] == "Tumor").to_numpy()].copy()
    check_subset(cs.from_spatialdata(through_zarr(sdata, tmp_path / "f.zarr")), xa, tumour)


def test_rows_of_the_regions_interleaved_keep_every_cell_in_the_table_order(xa, monkeypatch):
    """Table rows shuffled (one left out: a reordered X of the same shape reads as changed in place), so each
    region's rows are scattered, not the slice to_spatialdata writes: every cell left stays, in the table's
    order, as from_anndata gives the same rows of to_anndata."""
    # both sides note a history step: one clock second for both, or they differ when a second turns between them
    monkeypatch.setattr("cellspec_sc.model._provenance.utc_now", lambda: "2026-12-04T08:15:48Z")
    sdata = cs.to_spatialdata(xa)
    order = np.random.default_rng(3).permutation(xa.n_cells)[1:]
    sdata.tables["table"] = sdata.tables["table"][order].copy()
    regions = sdata.tables["table"].obs["cs__region"].to_numpy()
    assert (regions[:-1] != regions[1:]).sum() > 2  # scattered
    back = cs.from_spatialdata(sdata)
    assert back.differences(cs.from_anndata(cs.to_anndata(xa)[order])) == []
    assert back.provenance["history"][-1]["time_utc"] == "2026-12-04T08:15:48Z"  # the pinned clock was used
    assert back.cells["cell_id"].tolist() == xa.cells["cell_id"].iloc[order].tolist()


def test_a_query_that_keeps_no_cell_is_reported(xa):
    q = sd.bounding_box_query(cs.to_spatialdata(xa), axes=("x", "y"), min_coordinate=[-50, -50],
                              max_coordinate=[-10, -10], target_coordinate_system="img1")
    with pytest.raises(CellspecError, match="keeps no cell"):
        cs.from_spatialdata(q)


def test_removing_an_element_drops_its_cells_unless_asked_not_to(xa):
    sdata = cs.to_spatialdata(xa)
    del sdata.shapes["img2"]
    with pytest.warns(UserWarning, match="not in the SpatialData are left out"):
        assert set(cs.from_spatialdata(sdata).cells["image_id"]) == {"img1"}
    assert cs.from_spatialdata(sdata, restrict_to_shapes=False).equals(xa)


# -- outlines ------------------------------------------------------------------------------------
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


def test_geometry_ref_outlines_become_a_polygons_element(tmp_path):
    x = with_outlines(tmp_path, cs.example())
    with pytest.warns(OutlineWarning, match="img2.*not found"):
        sdata = cs.to_spatialdata(x)
    polygons = sdata.shapes["img1_outlines"]
    assert list(polygons.index) == list(x.cells["cell_id"][:3])
    assert polygons.geometry.iloc[1].bounds == (5.0, 10.0, 7.0, 12.0)  # pixels x 0.5 um
    m = get_transformation(polygons, to_coordinate_system="img1_px").to_affine_matrix(
        input_axes=("x", "y"), output_axes=("x", "y"))
    np.testing.assert_array_equal(m, [[2.0, 0, 0], [0, 2.0, 0], [0, 0, 1]])
    assert record(sdata)["images"][0]["outlines"] == {"n_outlines": 3, "cells_without_outline": 37,
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


# -- refusals ------------------------------------------------------------------------------------
def test_invalid_objects_and_ambiguous_tables_are_refused(xa):
    bad = xa.replace(cells=xa.cells.assign(x=np.inf))
    with pytest.raises(cs.ValidationError, match="cells_coordinates_finite"):
        cs.to_spatialdata(bad)
    sdata = cs.to_spatialdata(xa)
    with pytest.raises(CellspecError, match="no table 'cells'"):
        cs.from_spatialdata(sdata, table_key="cells")
    sdata.tables["other"] = sdata.tables["table"].copy()
    sdata.attrs.pop("cellspec_sc")
    with pytest.raises(CellspecError, match="2 tables"):
        cs.from_spatialdata(sdata)
    assert cs.from_spatialdata(sdata, table_key="other").equals(xa)


# -- SpatialData made elsewhere ------------------------------------------------------------------
def xenium_like():
    """Circles in micrometres, a "global" pixel coordinate system and a table keyed like spatialdata-io's."""
    import anndata as ad
    from spatialdata.models import ShapesModel, TableModel
    from spatialdata.transformations import Scale

    ids = ["aaa-1", "aab-1", "aac-1"]
    circles = ShapesModel.parse(np.array([[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]]), geometry=0,
                                radius=np.array([3.0, 4.0, 5.0]), index=pd.Index(ids),
                                transformations={"global": Scale([4.0, 4.0], axes=("x", "y"))})
    obs = pd.DataFrame({"cell_id": ids[::-1], "region": pd.Categorical(["cell_circles"] * 3),
                        "cell_area": [78.5, 50.2, 28.3]}, index=["2", "1", "0"])
    table = TableModel.parse(ad.AnnData(X=np.array([[5.0, 6.0], [3.0, 4.0], [1.0, 2.0]]), obs=obs,
                                        var=pd.DataFrame(index=["CD3", "CD8"])),
                             region="cell_circles", region_key="region", instance_key="cell_id")
    return sd.SpatialData(shapes={"cell_circles": circles}, tables={"table": table})


def test_a_foreign_spatialdata_needs_the_missing_facts_named():
    with pytest.raises(CellspecError) as err:
        cs.from_spatialdata(xenium_like())
    for needed in ("sample_id=", "pixel_size=", "coordinate_unit="):
        assert needed in str(err.value)


def test_a_foreign_spatialdata_takes_ids_regions_and_centroids_from_its_shapes(tmp_path):
    sdata = through_zarr(xenium_like(), tmp_path / "f.zarr")
    x = cs.from_spatialdata(sdata, sample_id="s1", pixel_size=0.25, coordinate_unit="um")
    assert x.validate().ok
    assert x.cells["cell_id"].tolist() == ["aac-1", "aab-1", "aaa-1"]  # table order
    assert x.cells["image_id"].tolist() == ["cell_circles"] * 3
    assert x.cells["x"].tolist() == [50.0, 30.0, 10.0] and x.cells["y"].tolist() == [60.0, 40.0, 20.0]
    assert x.cells["cell_area"].tolist() == [78.5, 50.2, 28.3]
    np.testing.assert_array_equal(x.measurements, [[5.0, 6.0], [3.0, 4.0], [1.0, 2.0]])
    assert x.provenance["history"][-1]["details"]["centroids"] == "from shapes"
    in_pixels = cs.from_spatialdata(sdata, sample_id="s1", pixel_size=0.25, coordinate_unit="px",
                                    pixel_origin="corner", coordinate_system="global")
    assert in_pixels.cells["x_px"].tolist() == [200.0, 120.0, 40.0]
    assert in_pixels.cells["x"].tolist() == [50.0, 30.0, 10.0]


def test_a_foreign_table_row_without_a_shape_is_left_out_with_a_warning():
    sdata = xenium_like()
    sdata.shapes["cell_circles"] = sdata.shapes["cell_circles"].iloc[:2]
    with pytest.warns(UserWarning, match="1 table row"):
        x = cs.from_spatialdata(sdata, sample_id="s1", pixel_size=0.25, coordinate_unit="um")
    assert x.cells["cell_id"].tolist() == ["aab-1", "aaa-1"]
    assert x.validate().ok


# -- files and sources ---------------------------------------------------------------------------
def test_a_spatialdata_store_is_a_source_for_validate_and_info(xa, tmp_path):
    from cellspec_sc.bridges.spatialdata import is_spatialdata_zarr, write_spatialdata
    from cellspec_sc.cli._sources import load
    from cellspec_sc.cli.main import main

    path = tmp_path / "x.spatialdata.zarr"
    write_spatialdata(xa, path)
    with pytest.raises(CellspecError, match="exists"):
        write_spatialdata(xa, path)
    assert is_spatialdata_zarr(path) and not is_spatialdata_zarr(tmp_path)
    assert load(str(path)).equals(xa)
    assert main(["validate", str(path)]) == 0
    (tmp_path / "broken.zarr").mkdir()
    (tmp_path / "broken.zarr" / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group", '
                                                        '"attributes": {"spatialdata_attrs": {}}}')
    (tmp_path / "broken.zarr" / "tables").mkdir()
    (tmp_path / "broken.zarr" / "tables" / "zarr.json").write_text("{not json")
    assert main(["info", str(tmp_path / "broken.zarr")]) == 2


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


def test_a_foreign_table_annotating_polygons_gets_their_centroids():
    import anndata as ad
    import geopandas as gpd
    from shapely.geometry import box
    from spatialdata.models import ShapesModel, TableModel
    from spatialdata.transformations import Identity

    polygons = ShapesModel.parse(gpd.GeoDataFrame(geometry=[box(0, 0, 4, 2), box(10, 10, 12, 16)],
                                                  index=pd.Index([7, 3])), transformations={"global": Identity()})
    obs = pd.DataFrame({"label": [3, 7], "roi": pd.Categorical(["cells", "cells"]), "slide": ["s1", "s1"]},
                       index=["a", "b"])
    table = TableModel.parse(ad.AnnData(X=np.ones((2, 1)), obs=obs, var=pd.DataFrame(index=["CD3"])),
                             region="cells", region_key="roi", instance_key="label")
    sdata = sd.SpatialData(shapes={"cells": polygons}, tables={"t": table})
    x = cs.from_spatialdata(sdata, sample_key="slide", pixel_size=1.0, coordinate_unit="um")
    assert x.cells["cell_id"].tolist() == ["3", "7"]
    assert x.cells["x"].tolist() == [11.0, 2.0] and x.cells["y"].tolist() == [13.0, 1.0]
    assert x.validate().ok
