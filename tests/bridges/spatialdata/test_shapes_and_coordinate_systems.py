"""SpatialData bridge: circles and their radius, the table annotating them, the coordinate systems in
micrometres and pixels, and an image added in pixels overlaying the cells."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import spatialdata as sd
from spatialdata.transformations import get_transformation

import cellspec_sc as cs


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


def test_missing_area_gets_the_documented_fallback_radius(uns_record):
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
    assert uns_record(sdata)["radius"]["fallback_cells"] == {"img1": 2, "img2": 40}
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


def test_a_subnormal_pixel_size_gets_no_pixel_coordinate_system(uns_record):
    x = cs.example()
    x = x.replace(images=x.images.assign(pixel_size=[5e-324, 0.5]))
    sdata = cs.to_spatialdata(x)
    assert set(sdata.coordinate_systems) == {"img1", "img2", "img2_px"}  # 1 / 5e-324 is infinite
    assert uns_record(sdata)["images"][0]["pixel_coordinate_system"] is None
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


def test_cells_of_interleaved_images_make_what_the_spatialdata_models_make_of_them(xa):
    from spatialdata.models import ShapesModel, TableModel

    order = np.random.default_rng(0).permutation(xa.n_cells)  # the images' cells interleaved
    x = xa.replace(cells=xa.cells.iloc[order].reset_index(drop=True),
                   measurements=np.asarray(xa.measurements)[order])
    sdata = cs.to_spatialdata(x)
    table = sdata.tables["table"]
    assert table.obs["cs__region"].astype(str).tolist() == x.cells["image_id"].tolist()  # images named as they are
    for name, circles in sdata.shapes.items():
        ShapesModel.validate(circles)
        cells = x.cells[x.cells["image_id"] == name]
        assert circles.index.tolist() == cells["cell_id"].tolist()
        np.testing.assert_array_equal(circles.geometry.x, cells["x"])
        np.testing.assert_array_equal(circles["radius"], np.sqrt(cells["area"] / np.pi))
    TableModel.validate(table)
    bare = table.copy()
    attrs = bare.uns.pop("spatialdata_attrs")
    parsed = TableModel.parse(bare, region=attrs["region"], region_key=attrs["region_key"],
                              instance_key=attrs["instance_key"])  # also checks cell ids are unique per region
    assert parsed.uns["spatialdata_attrs"] == table.uns["spatialdata_attrs"]
    pd.testing.assert_frame_equal(parsed.obs, table.obs, check_exact=True)
    assert cs.from_spatialdata(sdata).equals(x)
