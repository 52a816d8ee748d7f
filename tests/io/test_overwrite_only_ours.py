"""overwrite=True replaces only what the package wrote: a complete cellspec directory (valid DONE, a manifest
listing exactly the files present) or a complete cohort dataset. Any other folder is refused, naming the files
that replacing it would lose, and is left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

import cellspec_sc as cs
from cellspec_sc.bridges.anndata import write_h5ad
from cellspec_sc.cli.main import main
from cellspec_sc.cohort import open_cohort
from cellspec_sc.cohort.example import write_example_cohort
from cellspec_sc.io import TargetExists

try:  # the reproducer runs on code without the check too
    from cellspec_sc.io import files_lost_by_replacing
except ImportError:
    def files_lost_by_replacing(path):
        return None


def users_folder(path: Path, marker: str) -> Path:
    """The folder of the report: a marker file of ours beside the user's own work."""
    (path / "raw").mkdir(parents=True)
    (path / marker).write_text("")
    (path / "thesis.docx").write_text("work")
    (path / "raw" / "scan.tif").write_bytes(b"II*\x00")
    return path


def untouched(path: Path, marker: str) -> bool:
    return ((path / "thesis.docx").read_text() == "work" and (path / "raw" / "scan.tif").read_bytes() == b"II*\x00"
            and (path / marker).exists())


@pytest.mark.parametrize("marker", ["DONE", "cellspec.json", "MANIFEST.sha256"])
def test_write_refuses_a_folder_that_only_holds_a_marker(tmp_path, marker):
    target = users_folder(tmp_path / "proj", marker)
    with pytest.raises(TargetExists, match=r"raw/scan\.tif.*thesis\.docx|thesis\.docx.*raw/scan\.tif"):
        cs.write(cs.example(n_cells=5), target, overwrite=True)
    assert untouched(target, marker)


def test_convert_overwrite_refuses_the_users_folder(tmp_path, capsys):
    target = users_folder(tmp_path / "proj", "DONE")
    write_h5ad(cs.example(n_cells=5), tmp_path / "base.h5ad")
    assert main(["convert", str(tmp_path / "base.h5ad"), str(target), "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert "thesis.docx" in err and "raw/scan.tif" in err
    assert untouched(target, "DONE")


def test_a_complete_directory_is_replaced_and_one_with_an_extra_file_is_not(tmp_path):
    target = cs.write(cs.example(n_cells=5, seed=1), tmp_path / "run")
    assert files_lost_by_replacing(target) == []
    new = cs.example(n_cells=7, seed=2)
    cs.write(new, target, overwrite=True)
    assert cs.read(target).equals(new)
    (target / "notes.txt").write_text("mine")
    assert files_lost_by_replacing(target) == ["notes.txt"]
    with pytest.raises(TargetExists, match="notes.txt"):
        cs.write(cs.example(n_cells=3), target, overwrite=True)
    assert (target / "notes.txt").read_text() == "mine"
    with pytest.warns(UserWarning, match="notes.txt"):
        assert cs.read(target).equals(new)


def test_a_directory_with_a_wrong_done_or_a_missing_listed_file_is_not_replaced(tmp_path):
    target = cs.write(cs.example(n_cells=5), tmp_path / "run")
    (target / "DONE").write_text("0" * 64 + "\n")
    assert set(files_lost_by_replacing(target)) == {p.name for p in target.iterdir()}
    with pytest.raises(TargetExists, match="cells.parquet"):
        cs.write(cs.example(n_cells=3), target, overwrite=True)
    other = cs.write(cs.example(n_cells=5), tmp_path / "other")
    (other / "cells.parquet").unlink()
    assert "cellspec.json" in files_lost_by_replacing(other)


def test_an_empty_folder_is_replaced(tmp_path):
    (tmp_path / "empty").mkdir()
    assert files_lost_by_replacing(tmp_path / "empty") == []
    x = cs.example(n_cells=4)
    assert cs.read(cs.write(x, tmp_path / "empty", overwrite=True)).equals(x)


def test_write_dataset_refuses_a_folder_that_only_holds_cohort_json(tmp_path):
    cohort = open_cohort(write_example_cohort(tmp_path / "slides", 2, n_cells=20))
    target = users_folder(tmp_path / "proj", "cohort.json")
    with pytest.raises(TargetExists, match="thesis.docx"):
        cohort.write_dataset(target, overwrite=True)
    assert untouched(target, "cohort.json")
    dataset = cohort.write_dataset(tmp_path / "ds")
    cohort.write_dataset(dataset, overwrite=True)  # a complete dataset is replaced
    (dataset / "cells" / "extra.parquet").write_bytes(b"PAR1")
    with pytest.raises(TargetExists, match="cells/extra.parquet"):
        cohort.write_dataset(dataset, overwrite=True)
