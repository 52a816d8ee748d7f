"""The cases of issue 18 not covered by test_publishing (1), test_hostile (2-4) and test_faults (6):
empty tables (5), the command line's exits (7), values a format cannot store (8), reads racing a writer (9).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from dirhelpers import reseal

import cellspec_sc as cs
from cellspec_sc.bridges.anndata_io import read_anndata_zarr, read_h5ad, write_anndata_zarr, write_h5ad
from cellspec_sc.bridges.spatialdata import read_spatialdata, write_spatialdata
from cellspec_sc.cli.main import main
from cellspec_sc.errors import Unstorable
from cellspec_sc.io._refusals import ChangedSinceRead


# -- 5: empty tables through every writer and bridge -------------------------------------------
def tsv_exact(x):
    """``x`` with doubles that 15 significant digits hold exactly (so the TSV variant reads back equal)."""
    cells = x.cells.copy()
    for column in ("x", "y", "area"):
        cells[column] = cells[column].round(3)
    return x.replace(cells=cells, measurements=np.round(x.measurements, 3))


def empty_variants():
    x = tsv_exact(cs.example(adjacency=True))
    return {"0 cells": x.subset(cells=np.zeros(x.n_cells, dtype=bool)),
            "0 features": x.subset(features=[]),
            "0 contacts": x.replace(adjacency=x.adjacency.iloc[:0])}


WRITERS = {
    "parquet": (lambda x, p: cs.write(x, p), cs.read),
    "tsv": (lambda x, p: cs.write(x, p, format="tsv"), cs.read),
    "h5ad": (lambda x, p: write_h5ad(x, p.with_suffix(".h5ad")), read_h5ad),
    "anndata zarr": (lambda x, p: write_anndata_zarr(x, p.with_suffix(".zarr")), read_anndata_zarr),
    "spatialdata": (lambda x, p: write_spatialdata(x, p.with_suffix(".spatialdata.zarr")), read_spatialdata),
}


@pytest.mark.parametrize("variant", sorted(empty_variants()))
def test_empty_tables_round_trip_through_every_writer(tmp_path, variant):
    x = empty_variants()[variant]
    for name, (write, read) in WRITERS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            back = read(write(x, tmp_path / name.replace(" ", "-")))
        assert back.differences(x) == [], (variant, name)
    scene = cs.to_luxar(x, tmp_path / "scene.luxar.zarr")
    assert (scene / "zarr.json").is_file()


def test_zero_row_files_of_another_writer_can_be_written_again(tmp_path):
    x = cs.example(adjacency=True)
    parquet = cs.write(x, tmp_path / "p")
    pq.write_table(pq.read_table(parquet / "cells.parquet").slice(0, 0), parquet / "cells.parquet")  # plain pyarrow
    pq.write_table(pq.read_table(parquet / "adjacency.parquet").slice(0, 0), parquet / "adjacency.parquet")
    reseal(parquet)
    tsv = cs.write(x, tmp_path / "t", format="tsv")
    for name in ("cells.tsv.gz", "adjacency.tsv.gz"):
        with gzip.open(tsv / name, "rb") as f:
            header = f.readline()
        with gzip.open(tsv / name, "wb") as f:  # header only
            f.write(header)
    reseal(tsv)
    for source in (parquet, tsv):
        y = cs.read(source)
        assert y.n_cells == 0 and len(y.adjacency) == 0
        for fmt in ("parquet", "tsv"):
            assert cs.read(cs.write(y, tmp_path / f"{source.name}-{fmt}", format=fmt)).equals(y)


# -- 7: every command line path ends in 0/1/2 and one line ---------------------------------------
def cellspec(*argv: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cellspec_sc.cli.main", *argv], capture_output=True, text=True,
                          timeout=timeout)


def test_cli_failures_are_one_line_and_debug_shows_the_traceback(tmp_path):
    gz = tmp_path / "export.tsv"
    gz.write_bytes(gzip.compress(b"Image\tName\tCentroid X \xc2\xb5m\tCentroid Y \xc2\xb5m\n"))
    nul = cs.example()
    cells = nul.cells.copy()
    cells.loc[0, "cell_id"] = "a\x00b"
    nul_dir = cs.write(nul.replace(cells=cells), tmp_path / "nul")
    cases = [
        ["import", "qupath", str(gz), str(tmp_path / "q"), "--pixel-size", "0.5"],
        ["demo", "--out", "/proc/1"],
        ["convert", str(nul_dir), str(tmp_path / "nul.h5ad")],
        ["convert", "example", str(tmp_path / "x.txt")],
        ["validate", str(tmp_path / "missing")],
    ]
    for argv in cases:
        out = cellspec(*argv)
        assert out.returncode == 2, (argv, out.stderr)
        # a reader may warn first; the failure itself is one line, the last
        assert out.stderr.splitlines()[-1].startswith("cellspec: error: "), (argv, out.stderr)
        assert "Traceback" not in out.stderr
    assert not (tmp_path / "nul.h5ad").exists() and not (tmp_path / "x.txt").exists()
    debug = cellspec("--debug", "demo", "--out", "/proc/1")
    assert debug.returncode == 2 and "Traceback (most recent call last)" in debug.stderr


def test_preview_into_a_missing_folder_creates_it(tmp_path):
    out = tmp_path / "new" / "folder" / "report.html"
    assert main(["preview", "example", "-o", str(out), "--max-features", "1"]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


# -- 8: values a target format cannot store ----------------------------------------------------
def test_nul_in_text_refused_for_h5ad_and_noted_by_validate(tmp_path):
    x = cs.example()
    cells = x.cells.copy()
    cells.loc[5, "classification"] = "T\x00cell"
    y = x.replace(cells=cells)
    report = cs.validate(y)
    assert report.ok and report.status("portability") == "warn"
    assert "cells.classification row 5 holds a NUL" in report.result("portability").message
    with pytest.raises(Unstorable, match=r"classification row 5 .* \.h5ad"):
        write_h5ad(y, tmp_path / "y.h5ad")
    assert list(tmp_path.iterdir()) == []
    assert cs.read(cs.write(y, tmp_path / "d")).equals(y)  # a cellspec directory holds it


def test_long_region_layer_name_refused_for_zarr_and_noted_by_validate(tmp_path):
    layer = "L" * 255  # matches the spec's pattern
    x = cs.example(region_layers=(layer,))
    assert cs.validate(x).status("portability") == "warn"
    for write in (write_anndata_zarr, write_spatialdata):
        with pytest.raises(Unstorable, match="255|bytes long"):
            write(x, tmp_path / "x.zarr")
    assert list(tmp_path.iterdir()) == []
    assert cs.validate(cs.example()).status("portability") == "pass"


# -- 9: a read racing a writer returns old or new, or says the directory changed ----------------
OVERWRITER = """
import sys, cellspec_sc as cs
objects = [cs.example(n_cells=4000, n_features=30, seed=s) for s in (1, 2)]
print("ready", flush=True)
for k in range(int(sys.argv[2])):
    cs.write(objects[k % 2], sys.argv[1], overwrite=True)
"""


def test_lazy_and_eager_reads_racing_an_overwriting_writer(tmp_path):
    target = tmp_path / "t"
    objects = [cs.example(n_cells=4000, n_features=30, seed=s) for s in (1, 2)]
    cs.write(objects[1], target)
    writer = subprocess.Popen([sys.executable, "-c", OVERWRITER, str(target), "30"], stdout=subprocess.PIPE,
                              text=True)
    assert writer.stdout.readline().strip() == "ready"
    outcomes = []
    try:
        while writer.poll() is None:
            lazy = len(outcomes) % 2 == 0
            try:
                y = cs.read(target, lazy=lazy)
                if lazy:
                    y = y.replace(measurements=np.asarray(y.measurements.compute()))
                assert any(y.equals(o) for o in objects)
                outcomes.append("read")
            except ChangedSinceRead:
                outcomes.append("changed")
    finally:
        writer.wait(timeout=300)
    assert writer.returncode == 0
    assert "read" in outcomes, outcomes  # (ValidationError or any other refusal fails the test)


# -- 4: the schema's provenance types accept every document written per the spec's field list ----
def test_schema_accepts_provenance_written_per_the_spec_field_list():
    from cellspec_sc.io._metadata import schema_problem

    x = cs.example()
    document = json.loads((cs.write(x, Path(tempfile.mkdtemp()) / "d") / "cellspec.json").read_text("utf-8"))
    assert schema_problem(document) is None
    # as another implementation may write section 6: an empty parameter list as [] (R's list()),
    # unknown sizes and hashes as null, extra fields, a history step with details
    document["provenance"].update(
        parameters=[], inputs=[{"path_basename": "a.tsv", "bytes": None, "sha256": None, "note": "x"}],
        history=[{"step": "subset", "function": "subset", "time_utc": "2026-01-01T00:00:00Z", "details": {"n": 1}}],
        extra_field={"any": "thing"})
    assert schema_problem(document) is None
    for field, value in (("counts", {"rows_read": -1, "rows_kept": 0, "na_converted": 0, "nonfinite_converted": 0}),
                         ("created_utc", "2026-01-01 00:00:00"), ("parameters", ["pixel_size"]),
                         ("producer", "QuPath"), ("inputs", "a.tsv")):
        broken = json.loads(json.dumps(document))
        broken["provenance"][field] = value
        assert schema_problem(broken) is not None, field
