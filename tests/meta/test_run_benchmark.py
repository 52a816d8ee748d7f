"""The benchmarks never rot: ``python -m benchmarks.run --quick`` runs every case into a temp dir."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np

from results_page import assert_renders_in_results_page

ROOT = Path(__file__).resolve().parents[2]


def test_quick_run_writes_every_row_with_finite_times_and_ratios(tmp_path):
    sys.path.insert(0, str(ROOT))
    from benchmarks.cases import all_cases

    out = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.run", "--quick", "--data", str(tmp_path / "data"),
                           "--json", str(out), "--markdown", str(tmp_path / "table.md")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    document = json.loads(out.read_text())
    rows = document["rows"]
    assert [r["operation"] for r in rows] == [c.name for c in all_cases()]
    names = {r["operation"] for r in rows}
    assert {"directory write", "directory read", "validate", "read lazy=True (validated)"} <= names
    for row in rows:
        assert "error" not in row, row
        for key in ("ours_min_s", "ours_median_s", "baseline_min_s", "baseline_median_s", "ratio"):
            assert math.isfinite(row[key]) and row[key] > 0, (row["operation"], key, row[key])
        assert row["ours_min_s"] <= row["ours_median_s"] and row["baseline_min_s"] <= row["baseline_median_s"]
        assert math.isclose(row["ratio"], row["ours_min_s"] / row["baseline_min_s"])
        assert row["ours_peak_bytes"] > 0 and row["baseline_peak_bytes"] > 0
        assert row["goal_met"] in (True, False, None) and row["goal"]
    # the local server's CPU, each side: counted in clock ticks of 10 ms, so one small fetch of the quick run may
    # count none, but the server's work over every S3 row does
    served = [row[f"{side}_server_cpu_s"] for row in rows if "from S3" in row["operation"] for side in ("ours",
                                                                                                       "baseline")]
    assert served and all(math.isfinite(cpu) and cpu >= 0 for cpu in served) and sum(served) > 0, served
    read = next(r for r in rows if r["operation"] == "directory read")
    assert read["object_bytes"] >= 2000 * 24 * 8 and read["matrix_bytes"] == 2000 * 24 * 8
    table = (tmp_path / "table.md").read_text()
    assert table.count("\n") == len(rows) + 2 and "| directory read | 2,000 x 24 |" in table
    assert_renders_in_results_page(out, "| directory read | 2,000 x 24 |")


def test_peak_memory_is_measured_per_repetition():
    sys.path.insert(0, str(ROOT))
    from benchmarks.measure import time_operation

    held = []

    def allocate(i: int) -> None:
        block = np.ones(25_000_000 if i == 0 else 1000)  # 200 MB, then nearly nothing
        held.append(float(block[0]))

    timing = time_operation(allocate, repeat=2)
    assert timing["peak_growth_bytes"] >= 190 * 2**20
    assert timing["peak_is_per_operation"] and len(timing["times"]) == 2


def test_timer_replaces_wall_time():
    sys.path.insert(0, str(ROOT))
    from benchmarks.measure import time_operation

    timing = time_operation(lambda i: sum(range(10_000)), repeat=3, timer=lambda: 42.0)
    assert timing["times"] == [42.0, 42.0, 42.0]
