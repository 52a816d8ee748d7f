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


def test_element_name_too_long_for_a_file_name_is_refused_before_anything_is_written(tmp_path):
    # ".a...a" (255 bytes) is a storable image id, but its element name "x.a...a" is 256 bytes: a folder
    # name no file system takes
    import pytest

    from cellspec_sc.errors import Unstorable

    image_id = "." + "a" * 254
    x = renamed_images(cs.example(), {"img1": image_id, "img2": "b"})
    target = tmp_path / "t.spatialdata.zarr"
    with pytest.raises(Unstorable) as refused:
        cs.to_spatialdata(x).write(str(target))
    assert "shapes element 'x.aaaa" in str(refused.value)
    assert "256 bytes long" in str(refused.value)
    assert "at most 255 bytes" in str(refused.value)
    assert not target.exists()


def test_obs_column_renamed_beyond_a_file_name_is_refused(tmp_path):
    import pytest

    from cellspec_sc.bridges.spatialdata import write_spatialdata
    from cellspec_sc.errors import Unstorable

    x = cs.example()
    cells = x.cells.copy()
    column = "__" + "c" * 253  # storable (255 bytes), but renamed to "x__c...c" (256 bytes)
    cells[column] = pd.Categorical(["p", "q"] * 40)
    x = x.replace(cells=cells)
    target = tmp_path / "c.spatialdata.zarr"
    with pytest.raises(Unstorable) as refused:
        write_spatialdata(x, target)
    assert f"table 'table' obs column {('x' + column)[:40]!r}..." in str(refused.value)
    assert "256 bytes long" in str(refused.value)
    assert not target.exists()
