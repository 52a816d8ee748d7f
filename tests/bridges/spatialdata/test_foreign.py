"""SpatialData bridge: a SpatialData not made by to_spatialdata (spatialdata-io-like) needs the missing facts
named, and takes ids, regions and centroids from the shapes its table annotates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import spatialdata as sd

import cellspec_sc as cs
from cellspec_sc.errors import CellspecError


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


def test_a_foreign_spatialdata_takes_ids_regions_and_centroids_from_its_shapes(tmp_path, through_zarr):
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
