"""The cohort benchmark never rots: ``python -m benchmarks.cohort --quick`` runs on LocalClusters of 1 and 2 workers,
with the bare copy (the machine's ceiling) and the hashed copy (a reference) beside write_dataset."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from results_page import assert_renders_in_results_page

ROOT = Path(__file__).resolve().parents[2]


def test_quick_cohort_benchmark_reports_every_step_with_peaks_and_no_restarts(tmp_path):
    out = tmp_path / "cohort.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.cohort", "--quick", "--data", str(tmp_path / "data"),
                           "--json", str(out), "--markdown", str(tmp_path / "table.md")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    document = json.loads(out.read_text())
    rows = document["rows"]
    written = [r["bytes_written"] for r in rows if r["step"] == "write_dataset"]
    assert written[0] == written[1] > 4 * 3_000 * 12 * 8  # the same dataset, at least its float64 values
    assert_renders_in_results_page(out, "| validate |", "| write_dataset |")
    floor = document["disk_floor"]
    assert floor["bytes"] == written[0] and floor["writers"] == 2 and floor["seconds"] > 0
    # the floor is written the way write_dataset writes its parts (around the page cache where it can)
    from cellspec_sc.io import suits_direct_io
    assert floor["direct"] == suits_direct_io(tmp_path)
    assert "disk floor:" in proc.stdout
    copies = ("bare_copy", "hashed_copy")
    assert [(r["step"], r["workers"]) for r in rows] == [(s, w) for s in ("validate", "summary", "write_dataset",
                                                                          *copies)
                                                        for w in (1, 2)]
    for row in rows:
        assert "error" not in row and row["workers_restarted"] == 0
        assert 0 <= row["disk_wait_s"] <= 16  # the disk settled (at most 15 s) before every timed run
        assert math.isfinite(row["seconds"]) and row["seconds"] > 0 and row["all_seconds"] == [row["seconds"]]
        assert 0 < row["worker_cpu_s"] < 60 * row["workers"]
        assert len(row["worker_peak_bytes"]) == row["workers"] and min(row["worker_peak_bytes"]) > 50 * 2**20
        assert row["client_peak_bytes"] > 50 * 2**20 and row["cells"] == 4 * 3_000
        # the whole machine's busy CPU includes the workers' (ticks of 10 ms on either side)
        assert row["machine_cpu_s"] >= row["worker_cpu_s"] - 0.1
        assert 0 <= row["stolen_cpu_s"] <= row["seconds"] * (os.cpu_count() or 1) + 0.1
        if row["workers"] == 2:
            assert math.isfinite(row["speedup"])
            assert row.get("goal_met") in ((True, False) if row["step"] not in copies else (None,))
    copied = [r["bytes_written"] for r in rows if r["step"] in copies]
    assert copied[0] == copied[1] == copied[2] == copied[3] > 4 * 3_000 * 12 * 8  # the ceilings copy the same rows
    speedups = {r["step"]: r["speedup"] for r in rows if r["workers"] == 2}
    assert (f"ceiling: the bare copy's speedup is {speedups['bare_copy']:.2f}x (the hashed copy's "
            f"{speedups['hashed_copy']:.2f}x), write_dataset's {speedups['write_dataset']:.2f}x") in proc.stdout
    table = (tmp_path / "table.md").read_text()
    assert table.count("\n") == len(rows) + 2 and "| summary | 2 | 4 x 3,000 x 12 |" in table
    assert not (tmp_path / "data" / "cohort-scratch").exists()


def test_disk_idle_waits_at_most_its_limit_and_not_at_all_without_device_statistics(tmp_path):
    from benchmarks.cohort import disk_idle

    assert disk_idle(Path("/proc")) == 0.0  # procfs has no block device to watch
    device = os.stat(tmp_path).st_dev
    watched = Path(f"/sys/dev/block/{os.major(device)}:{os.minor(device)}/stat").is_file()
    started = time.perf_counter()
    waited = disk_idle(tmp_path, still=0.3, limit=0.6)
    assert waited <= time.perf_counter() - started < 1.5
    assert (waited >= 0.3) if watched else (waited == 0.0)  # idle for `still` seconds, or gave up at the limit


def test_worker_env_reaches_every_worker_before_it_starts_beside_dasks_own(monkeypatch, tmp_path):
    import benchmarks.cohort as bench

    def environment(client, cohort, step, scratch, server=None):
        return {"seen": sorted(client.run(lambda: (os.environ.get("CELLSPEC_BENCH_PROBE"),
                                                   os.environ.get("MALLOC_TRIM_THRESHOLD_"))).values())}

    monkeypatch.setattr(bench, "run_step", environment)
    row = bench.timed_run(2, "1GB", None, "validate", [], tmp_path, {"CELLSPEC_BENCH_PROBE": "a=b"})
    assert row["seen"] == [("a=b", "65536")] * 2  # ours, and dask's MALLOC_TRIM_THRESHOLD_ kept
    assert bench.parse_args(["--worker-env", "X=1=2"]).worker_env == ["X=1=2"]
    with pytest.raises(SystemExit):
        bench.parse_args(["--worker-env", "NOEQUALS"])


def test_quick_summary_from_a_bucket_reports_the_local_s3_servers_cpu_beside_the_workers(tmp_path):
    out = tmp_path / "cohort.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.cohort", "--quick", "--steps", "summary_from_bucket",
                           "--data", str(tmp_path / "data"), "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert [(r["step"], r["workers"]) for r in rows] == [("summary_from_bucket", 1), ("summary_from_bucket", 2)]
    for row in rows:
        assert "error" not in row and row["workers_restarted"] == 0 and row["cells"] == 4 * 3_000
        # the server answered every member's requests: it spent CPU, counted among the machine's
        assert 0 < row["server_cpu_s"] <= row["machine_cpu_s"] + 0.1
    assert rows[1]["goal_met"] in (True, False) and math.isfinite(rows[1]["speedup"])
    assert_renders_in_results_page(out, "| summary_from_bucket |", "S3 server CPU s, 1 / 2 workers")
