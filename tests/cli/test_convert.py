"""`cellspec convert` between directories, .h5ad and AnnData .zarr; `validate`/`info` open AnnData files."""

from __future__ import annotations

import anndata as ad
import numpy as np
import pandas as pd

import cellspec_sc as cs
from cellspec_sc.cli._convert import target_writer
from cellspec_sc.cli.main import main


def test_directory_h5ad_zarr_directory_is_lossless(tmp_path, capsys):
    x = cs.example(adjacency=True, region_layers=("tissue",))
    cs.write(x, tmp_path / "d1")
    assert main(["convert", str(tmp_path / "d1"), str(tmp_path / "x.h5ad")]) == 0
    assert main(["convert", str(tmp_path / "x.h5ad"), str(tmp_path / "x.zarr")]) == 0
    assert main(["convert", str(tmp_path / "x.zarr"), str(tmp_path / "d2")]) == 0
    assert "AnnData .zarr store" in capsys.readouterr().out
    assert cs.read(tmp_path / "d2").differences(cs.read(tmp_path / "d1")) == []
    assert cs.read(tmp_path / "d2").differences(x) == []
    assert ad.read_h5ad(tmp_path / "x.h5ad").n_obs == x.n_cells


def test_validate_and_info_open_anndata_files(tmp_path, capsys):
    assert main(["convert", "example", str(tmp_path / "x.h5ad")]) == 0
    assert main(["convert", "example", str(tmp_path / "x.zarr")]) == 0
    for name in ("x.h5ad", "x.zarr"):
        capsys.readouterr()
        assert main(["validate", str(tmp_path / name)]) == 0
        assert main(["info", str(tmp_path / name)]) == 0
        assert "80 in 2 images" in capsys.readouterr().out


def test_refusals_exit_2(tmp_path, capsys):
    assert main(["convert", "example", str(tmp_path / "x.h5ad")]) == 0
    assert main(["convert", "example", str(tmp_path / "x.h5ad")]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["convert", "example", str(tmp_path / "x.h5ad"), "--overwrite"]) == 0
    (tmp_path / "notes.zarr").mkdir()
    (tmp_path / "notes.zarr" / "keep.txt").write_text("mine")
    assert main(["convert", "example", str(tmp_path / "notes.zarr"), "--overwrite"]) == 2
    assert (tmp_path / "notes.zarr" / "keep.txt").read_text() == "mine"
    foreign = ad.AnnData(X=np.ones((2, 1)), obs=pd.DataFrame(index=["a", "b"]))
    foreign.write_h5ad(tmp_path / "foreign.h5ad")
    capsys.readouterr()
    assert main(["convert", str(tmp_path / "foreign.h5ad"), str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert "foreign.h5ad" in err and "pixel_size=" in err and not (tmp_path / "d").exists()
    (tmp_path / "broken.h5ad").write_bytes(b"not hdf5")
    assert main(["info", str(tmp_path / "broken.h5ad")]) == 2
    assert "cannot be read as AnnData" in capsys.readouterr().err


def test_target_table_picks_the_longest_suffix(monkeypatch):
    from cellspec_sc.cli import _convert as cli_convert

    monkeypatch.setattr(cli_convert, "TARGETS", [*cli_convert.TARGETS,
                                                 (".other.zarr", "cellspec_sc.cli._convert:target_writer",
                                                  "cellspec_sc.io._publish:HTML_FILE", "other")])
    assert target_writer("a.other.zarr")[1] == "other"
    assert target_writer("a.spatialdata.zarr")[1] == "SpatialData .zarr store"
    assert target_writer("a.zarr/")[1] == "AnnData .zarr store"
    assert target_writer("A.H5AD")[1] == "AnnData .h5ad file"
