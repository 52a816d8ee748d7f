"""SpatialData bridge: a SpatialData .zarr store is written atomically, recognised, and opened by `cellspec
validate` and `cellspec info` (a damaged one is reported)."""

from __future__ import annotations

import pytest

from cellspec_sc.errors import CellspecError


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
