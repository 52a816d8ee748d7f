"""The command line on directories: demo, validate, info."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

import cellspec_sc as cs
from cellspec_sc.cli.main import main
from dirhelpers import reseal


def test_demo_writes_reads_back_and_validates(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "identical to what was written" in out and "cellspec validation: OK" in out
    y = cs.read(tmp_path / "example.cellspec")
    again = cs.example(adjacency=True, region_layers=("tumor",), image_dir=tmp_path / "again")
    assert y.equals(again)  # the images' SHA-256 too: the same example writes the same files
    assert "SHA-256 checked" in out and (tmp_path / "preview.html").read_text().count("composite of channels") == 1
    assert main(["demo", "--out", str(tmp_path)]) == 0  # again: replaces its own directory


def test_validate_and_info_on_a_directory(tmp_path, capsys):
    path = cs.write(cs.example(n_cells=12), tmp_path / "o")
    assert main(["validate", str(path)]) == 0
    assert "cellspec validation: OK" in capsys.readouterr().out
    assert main(["info", str(path)]) == 0
    assert "cells     12 in 2 images" in capsys.readouterr().out


def test_validate_reports_nan_stored_in_a_file(tmp_path, capsys):
    path = cs.write(cs.example(n_cells=12), tmp_path / "o")
    table = pq.read_table(path / "cells.parquet")
    i = table.schema.get_field_index("nucleus:FOXP3:mean")
    values = table.column(i).to_pylist()
    values[0] = float("nan")
    pq.write_table(table.set_column(i, "nucleus:FOXP3:mean", pa.array(values, pa.float64())), path / "cells.parquet")
    reseal(path)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  measurements_finite" in out and "nucleus:FOXP3:mean: 1 NaN" in out


def test_refused_directory_exits_2(tmp_path, capsys):
    path = cs.write(cs.example(n_cells=12), tmp_path / "o")
    (path / "DONE").unlink()
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "DONE: file is missing" in err and str(path) in err
