"""Every command line path ends in exit code 0, 1 or 2 and, on failure, one line (a traceback with --debug)."""

from __future__ import annotations

import gzip
import subprocess
import sys

import cellspec_sc as cs
from cellspec_sc.cli.main import main


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
