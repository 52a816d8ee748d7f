"""SpatialData bridge: image ids and cells columns become names SpatialData accepts, and come back."""

from __future__ import annotations

import warnings

import pandas as pd

import cellspec_sc as cs


def renamed_images(x, mapping):
    images, cells, channels = x.images.copy(), x.cells.copy(), x.channels.copy()
    for frame in (images, cells, channels):
        frame["image_id"] = frame["image_id"].map(mapping).astype("string")
    adjacency = None
    if x.adjacency is not None:
        adjacency = x.adjacency.copy()
        adjacency["image_id"] = adjacency["image_id"].map(mapping).astype("string")
    return x.replace(images=images, cells=cells, channels=channels, adjacency=adjacency)


def test_image_ids_become_valid_unique_names_and_come_back(tmp_path, through_zarr, uns_record):
    x = cs.example(n_images=4, adjacency=True)
    x = renamed_images(x, {"img1": "Slide 1 / core #3", "img2": "table", "img3": "Bild_ä", "img4": "bild_ä"})
    sdata = cs.to_spatialdata(x)
    names = {e["image_id"]: e["name"] for e in uns_record(sdata)["images"]}
    assert names == {"Slide 1 / core #3": "Slide_1___core__3", "table": "table-2", "Bild_ä": "Bild__",
                     "bild_ä": "bild__-2"}
    assert sorted(sdata.shapes) == sorted(names.values())
    assert set(sdata.coordinate_systems) == {n for v in names.values() for n in (v, v + "_px")}
    assert cs.from_spatialdata(through_zarr(sdata, tmp_path / "n.zarr")).equals(x)


def test_hidden_looking_image_ids_are_not_lost_on_disk(tmp_path, through_zarr):
    # spatialdata accepts the element name ".a", but read_zarr skips such a hidden group
    x = renamed_images(cs.example(), {"img1": ".a", "img2": "..."})
    sdata = cs.to_spatialdata(x)
    assert sorted(sdata.shapes) == ["x...", "x.a"]
    back = through_zarr(sdata, tmp_path / "h.zarr")
    assert sorted(back.shapes) == ["x...", "x.a"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert cs.from_spatialdata(back).equals(x)


def test_obs_columns_that_spatialdata_refuses_are_renamed_and_restored(tmp_path, through_zarr, uns_record):
    x = cs.example()
    cells = x.cells.copy()
    cells["Area"] = 1.5  # differs from "area" only by case
    cells["my score (%)"] = pd.array(["a", None] * 40, dtype="string")
    cells["_index"] = pd.array(range(80), dtype="Int32")
    x = x.replace(cells=cells)
    sdata = cs.to_spatialdata(x)
    obs = sdata.tables["table"].obs
    assert {"Area-2", "my_score____", "x_index"} <= set(obs.columns)
    assert uns_record(sdata)["obs_columns_renamed"] == {"Area-2": "Area", "my_score____": "my score (%)",
                                                    "x_index": "_index"}
    assert cs.from_spatialdata(through_zarr(sdata, tmp_path / "c.zarr")).equals(x)
