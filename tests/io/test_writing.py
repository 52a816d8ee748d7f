"""Writing cellspec directories: crash safety, overwrite, staging leftovers, outlines, refusals."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

import cellspec_sc as cs
from cellspec_sc.io import _refusals as r
from cellspec_sc.io import _staging as staging
from dirhelpers import sha256


def leftovers(parent):
    return sorted(p.name for p in parent.iterdir() if ".cellspec-" in p.name)


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


# -- overwrite ---------------------------------------------------------------------------------
def test_existing_target_refused_without_overwrite(tmp_path):
    old = cs.write(cs.example(n_cells=5), tmp_path / "o")
    before = sha256(old / "cells.parquet")
    with pytest.raises(r.TargetExists, match="overwrite=True"):
        cs.write(cs.example(n_cells=6), old)
    assert sha256(old / "cells.parquet") == before and leftovers(tmp_path) == []


@pytest.mark.parametrize("renameat2", [True, False])
def test_overwrite_replaces_a_cellspec_directory(tmp_path, monkeypatch, renameat2):
    monkeypatch.setattr(staging, "USE_RENAMEAT2", renameat2)
    cs.write(cs.example(n_cells=5, adjacency=True), tmp_path / "o")
    new = cs.example(n_cells=7, seed=3)
    cs.write(new, tmp_path / "o", overwrite=True, format="tsv")
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["DONE", "MANIFEST.sha256", "cells.tsv.gz",
                                                                 "cellspec.json"]
    assert cs.read(tmp_path / "o").n_cells == 7 and leftovers(tmp_path) == []


def test_overwrite_into_empty_directory(tmp_path):
    (tmp_path / "o").mkdir()
    cs.write(cs.example(n_cells=5), tmp_path / "o", overwrite=True)
    assert cs.read(tmp_path / "o").n_cells == 5


def test_overwrite_never_replaces_other_folders_or_files(tmp_path):
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "thesis.tex").write_text("precious")
    (tmp_path / "file").write_text("precious")
    for target in ("home", "file"):
        with pytest.raises(r.TargetExists, match="refusing"):
            cs.write(cs.example(n_cells=5), tmp_path / target, overwrite=True)
    assert (tmp_path / "home" / "thesis.tex").read_text() == "precious"
    assert (tmp_path / "file").read_text() == "precious" and leftovers(tmp_path) == []


# -- staging leftovers -----------------------------------------------------------------------
def test_stale_staging_of_dead_writer_removed_live_one_kept(tmp_path):
    dead = tmp_path / f".o.cellspec-staging-{dead_pid()}-abcd1234"
    dead.mkdir()
    (dead / "cells.parquet").write_bytes(b"half")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = tmp_path / f".o.cellspec-staging-{sleeper.pid}-abcd1234"
        live.mkdir()
        other = tmp_path / f".p.cellspec-staging-{dead_pid()}-abcd1234"  # another target's: not ours
        other.mkdir()
        cs.write(cs.example(n_cells=5), tmp_path / "o")
        assert not dead.exists() and live.exists() and other.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_interrupted_two_rename_swap_is_restored(tmp_path):
    """Crash between the fallback's two renames: no target, old one aside, new one staged."""
    old = cs.example(n_cells=5)
    cs.write(old, tmp_path / "o")
    pid = dead_pid()
    os.rename(tmp_path / "o", tmp_path / f".o.cellspec-old-{pid}-00000000")
    cs.write(cs.example(n_cells=9), tmp_path / "new")
    os.rename(tmp_path / "new", tmp_path / f".o.cellspec-staging-{pid}-11111111")
    staging.clean_stale(tmp_path / "o")
    assert cs.read(tmp_path / "o").equals(old) and leftovers(tmp_path) == []


def test_failure_while_writing_leaves_nothing(tmp_path, monkeypatch):
    import cellspec_sc.io._directory as directory

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(directory, "write_manifest", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cs.write(cs.example(n_cells=5), tmp_path / "o")
    assert list(tmp_path.iterdir()) == []


# -- refusals of write ------------------------------------------------------------------------
def test_invalid_object_refused(tmp_path):
    x = cs.example(n_cells=5)
    x = x.replace(cells=x.cells.assign(x=[np.inf, 1.0, 2.0, 3.0, 4.0]))
    with pytest.raises(cs.ValidationError) as info:
        cs.write(x, tmp_path / "o")
    assert info.value.report.status("cells_coordinates_finite") == "fail" and list(tmp_path.iterdir()) == []


def test_newer_version_refused(tmp_path):
    with pytest.raises(r.UnsupportedVersion, match="minor version 7"):
        cs.write(cs.example(n_cells=5).replace(spec_version="1.7.0"), tmp_path / "o")


def test_unwritable_values_refused(tmp_path):
    x = cs.example(n_cells=5)
    with pytest.raises(r.Unwritable, match="n_px"):  # int64 beyond int32: integers are stored as int32
        cs.write(x.replace(cells=x.cells.assign(n_px=np.array([1, 2, 3, 4, 2**40]))), tmp_path / "a")
    prov = {**x.provenance, "parameters": {"threshold": float("nan")}}
    with pytest.raises(r.Unwritable, match="JSON"):
        cs.write(x.replace(provenance=prov), tmp_path / "b")
    assert list(tmp_path.iterdir()) == []


def test_unknown_format_refused(tmp_path):
    with pytest.raises(cs.InputError, match="format"):
        cs.write(cs.example(n_cells=5), tmp_path / "o", format="csv")


# -- outlines ----------------------------------------------------------------------------------
def with_outlines(tmp_path, refs):
    src = tmp_path / "export"
    for ref in refs:
        (src / ref).parent.mkdir(parents=True, exist_ok=True)
        (src / ref).write_text(json.dumps({"type": "FeatureCollection", "features": [], "ref": ref}))
    x = cs.example(n_cells=6)
    return x.replace(images=x.images.assign(geometry_ref=pd.array(refs, dtype="string")), source_dir=src)


def test_outlines_copied_listed_and_carried_on(tmp_path):
    x = with_outlines(tmp_path, ["outlines/img1.geojson", "outlines/img2.geojson"])
    path = cs.write(x, tmp_path / "o")
    check = subprocess.run(["sha256sum", "-c", "MANIFEST.sha256"], cwd=path, capture_output=True, text=True)
    assert check.returncode == 0 and "outlines/img2.geojson: OK" in check.stdout
    y = cs.read(path)
    assert y.equals(x) and y.source_dir == path.resolve()
    again = cs.write(y, tmp_path / "again")  # source_dir is now the first directory
    assert json.loads((again / "outlines" / "img1.geojson").read_text())["ref"] == "outlines/img1.geojson"


def test_outline_missing_from_source_refused(tmp_path):
    x = with_outlines(tmp_path, ["a.geojson", "b.geojson"])
    (x.source_dir / "b.geojson").unlink()
    with pytest.raises(r.OutlineMissing, match="b.geojson"):
        cs.write(x, tmp_path / "o")
    with pytest.raises(r.OutlineMissing):
        cs.write(x.replace(source_dir=None), tmp_path / "o")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("ref", ["../escape.geojson", "/etc/passwd", "a/../../b.geojson", "DONE", "two\nlines",
                                 "back\\slash"])
def test_unsafe_geometry_ref_refused(tmp_path, ref):
    x = cs.example(n_cells=6)
    x = x.replace(images=x.images.assign(geometry_ref=pd.array([ref, None], dtype="string")), source_dir=tmp_path)
    with pytest.raises(r.UnsafePath):
        cs.write(x, tmp_path / "o")


# -- crash safety ------------------------------------------------------------------------------
CHILD = """
import sys, cellspec_sc as cs
x = cs.example(n_cells=int(sys.argv[2]), n_features=40, seed=int(sys.argv[3]), adjacency=True)
print("ready", flush=True)
cs.write(x, sys.argv[1], overwrite=True, format=sys.argv[4])
print("done", flush=True)
"""


def _start(target, seed, fmt, n_cells=8_000):
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(target), str(n_cells), str(seed), fmt],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    return child


@pytest.mark.parametrize("fmt, kills", [("parquet", 4), ("tsv", 2)])
def test_killed_writer_leaves_nothing_or_a_complete_directory(tmp_path, fmt, kills):
    target = tmp_path / "obj"
    objects = {seed: cs.example(n_cells=8_000, n_features=40, seed=seed, adjacency=True) for seed in (1, 2)}
    # how long one write takes here, to spread the kill points over it (not asserted)
    child = _start(target, 1, fmt)
    began = time.monotonic()
    assert child.stdout.readline().strip() == "done"
    duration = time.monotonic() - began
    child.wait()
    rng = random.Random(20261202)
    outcomes = set()
    for attempt in range(kills):
        if attempt == 2 and target.exists():  # also kill writers of a brand-new directory
            cs.write(objects[1], target, overwrite=True)  # (cleans up the previous victim's staging)
            import shutil
            shutil.rmtree(target)
        before = cs.read(target) if target.exists() else None
        seed = 2 if attempt % 2 == 0 else 1
        child = _start(target, seed, fmt)
        time.sleep(rng.uniform(0, 1.4 * duration))
        child.send_signal(signal.SIGKILL)
        child.wait()
        if not target.exists():
            outcomes.add("nothing")
            assert before is None
            continue
        got = cs.read(target)
        candidates = [objects[seed]] + ([before] if before is not None else [])
        assert any(got.equals(c) for c in candidates)
        outcomes.add("new" if got.equals(objects[seed]) and (before is None or not before.equals(got)) else "old")
    cs.write(objects[1], target, overwrite=True)
    assert leftovers(tmp_path) == []
    print("outcomes:", sorted(outcomes))  # which ones occur depends on timing; each was checked above


# -- file layout -------------------------------------------------------------------------------
def test_cells_columns_dictionary_encoded_with_statistics_features_plain(tmp_path):
    """Measured doubles are stored plain (nearly all distinct), ids and coordinates with dictionary
    and min/max statistics, which readers use to skip row groups."""
    import pyarrow.parquet as pq

    x = cs.example(n_cells=3000, n_features=10)
    path = cs.write(x, tmp_path / "o")
    group = pq.ParquetFile(path / "cells.parquet").metadata.row_group(0)
    chunks = {group.column(j).path_in_schema: group.column(j) for j in range(group.num_columns)}
    for name in x.cells.columns:
        encodings = chunks[name].encodings
        assert chunks[name].is_stats_set and ("PLAIN_DICTIONARY" in encodings or "RLE_DICTIONARY" in encodings), name
    for name in x.feature_ids:
        assert not chunks[name].is_stats_set and not any("DICTIONARY" in e for e in chunks[name].encodings), name
    assert cs.read(path).equals(x)
