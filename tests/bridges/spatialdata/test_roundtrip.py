"""SpatialData bridge: lossless round trips, in memory and through zarr, of the example, of generated objects
and of images without cells."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

import cellspec_sc as cs
from strategies import cellspecs


def test_round_trip_in_memory_and_through_zarr(xa, tmp_path, through_zarr):
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
def test_round_trip_of_generated_objects_through_zarr(tmp_path_factory, through_zarr, x):
    path = tmp_path_factory.mktemp("sd") / "x.zarr"
    assert cs.from_spatialdata(through_zarr(cs.to_spatialdata(x), path)).differences(x) == []


def test_images_without_cells_and_zero_cells_round_trip(xa, tmp_path, through_zarr):
    one = xa.subset(cells=xa.cells["image_id"] == "img1")
    sdata = cs.to_spatialdata(one)
    assert list(sdata.shapes) == ["img1"]
    assert cs.from_spatialdata(through_zarr(sdata, tmp_path / "one.zarr")).equals(one)
    none = xa.subset(cells=np.zeros(xa.n_cells, dtype=bool))
    sdata = cs.to_spatialdata(none)
    assert list(sdata.shapes) == []
    assert cs.from_spatialdata(through_zarr(sdata, tmp_path / "none.zarr")).equals(none)
