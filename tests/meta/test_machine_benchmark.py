"""``python -m benchmarks.machine``: the machine's own scaling of CPU work, alone and beside disk writes (the
reference write_dataset's 2-worker speedup is read against), runs and reports what it measured."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from benchmarks.machine import steal_seconds
from results_page import assert_renders_in_results_page

ROOT = Path(__file__).resolve().parents[2]


def test_quick_machine_benchmark_reports_both_cases_with_their_speedups(tmp_path):
    out = tmp_path / "machine.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.machine", "--quick", "--data", str(tmp_path / "data"),
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    document = json.loads(out.read_text())
    rows = document["rows"]
    assert [(r["processes"], r["beside_writes"]) for r in rows] == [(1, False), (2, False), (1, True), (2, True)]
    assert document["rounds"] == 8 and document["buffer_bytes"] == 64 << 20
    for one, two in (rows[0:2], rows[2:4]):
        assert "speedup" not in one and two["speedup"] == pytest.approx(one["seconds"] / two["seconds"])
    for row in rows:
        # the same work in every run: 8 hashes of 64 MB, not less than a fast core's 0.1 s
        assert 0.1 < row["cpu_s"] < 60 and row["seconds"] > 0 and row["stolen_s"] >= 0
        assert ("bytes_written" in row) == row["beside_writes"]
    assert all(r["bytes_written"] >= 4 << 20 for r in rows[2:])  # the writer was writing while it was timed
    assert not (tmp_path / "data" / "machine-scratch" / "writes.bin").exists()
    assert_renders_in_results_page(out, "| alone |", "| beside disk writes |")
    table = proc.stdout.split("\n\n")[-1]
    assert "| beside disk writes | 2 |" in table and f"| {rows[1]['speedup']:.2f} |" in table


def test_steal_seconds_is_the_hypervisors_share_as_psutil_reads_it():
    if not hasattr(psutil.cpu_times(), "steal"):
        pytest.skip("this system reports no steal time (not Linux)")
    before = psutil.cpu_times().steal
    ours = steal_seconds()
    after = psutil.cpu_times().steal
    assert before - 0.011 <= ours <= after + 0.011
