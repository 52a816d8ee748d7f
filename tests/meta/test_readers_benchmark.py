"""The small-export rows never rot: ``python -m benchmarks.readers`` times every reader beside pandas in one process."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

from results_page import assert_renders_in_results_page

ROOT = Path(__file__).resolve().parents[2]
CASES = ["read_qupath", "read_mcmicro", "read_halo", "read_inform", "read_cellprofiler", "read_export_halo",
         "read_inform_15_fields", "read_steinbock", "read_steinbock_15_images"]


def test_small_export_rows_cover_every_reader_and_the_fifteen_image_folder(tmp_path):
    out = tmp_path / "small.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.readers", "--rows", "1,40", "--repeat", "2", "--data",
                           str(tmp_path / "data"), "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert [r["operation"] for r in rows] == CASES * 2
    # the inForm batch: a table of that many rows per field; a steinbock folder: a row per image at least
    assert [r["n_cells"] for r in rows] == [1] * 6 + [15, 4, 15] + [40] * 6 + [600, 40, 40]
    for row in rows:
        assert len(row["ours_times_s"]) == len(row["baseline_times_s"]) == 2
        assert row["ours_min_s"] == min(row["ours_times_s"]) and row["baseline_min_s"] == min(row["baseline_times_s"])
        assert math.isclose(row["ratio"], row["ours_min_s"] / row["baseline_min_s"])
        assert math.isclose(row["extra_s"], row["ours_min_s"] - row["baseline_min_s"])
        assert row["goal_met"] == (row["extra_s"] <= 0.020)  # every file here has at most 1,000 rows
        assert row["file_bytes"] > 0
    assert "| read_steinbock_15_images | 15 x 45 |" in proc.stdout
    assert_renders_in_results_page(out, "| read_steinbock_15_images | 15 x 45 |")
