"""Benchmarks at slide scale: ``python -m benchmarks.run`` prints a table and writes JSON.

Every row times one operation of cellspec_sc beside a baseline measured in the
same run on the same data (min and median of ``--repeat`` repetitions, each
side in its own fresh worker process so that peak memories do not mix) and
says whether its goal is met.

    python -m benchmarks.run                       # 100,000 and 1,000,000 cells x 200 features
    python -m benchmarks.run --quick --data DATA   # seconds; what the test suite runs
    python -m benchmarks.run --big                 # 2,000,000 x 1,000 (16 GB): needs >= 21 GB available
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .cases import Case, all_cases
from .host import available_gb, describe_machine, recorded_command
from .worker import PREFIX

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SIZES = (100_000, 1_000_000)
BIG = (2_000_000, 1_000)
BIG_NEEDS_GB = 21.0
QUICK = {"sizes": (2_000,), "features": 24, "repeat": 1}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="cell counts, comma separated")
    p.add_argument("--features", type=int, default=200)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--quick", action="store_true", help=f"small run for the test suite: {QUICK}, one worker per size")
    p.add_argument("--big", action="store_true", help=f"only the {BIG[0]:,} x {BIG[1]:,} slide (16 GB of float64)")
    p.add_argument("--force", action="store_true", help="run --big even with less than "
                                                        f"{BIG_NEEDS_GB:g} GB available")
    p.add_argument("--only", default="", help="run the cases whose name contains one of these texts "
                                              "(comma separated, case-insensitive)")
    p.add_argument("--data", type=Path, default=ROOT / "benchmarks" / ".data",
                   help="where slides are written (kept between runs) and scratch output goes")
    p.add_argument("--json", type=Path, default=None, help="JSON output (default: DATA/results.json)")
    p.add_argument("--markdown", type=Path, default=None, help="also write the table as markdown here")
    return p.parse_args(argv)


def run_worker(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run ``jobs`` in one fresh worker process; one result dict per job."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(jobs, handle)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        proc = subprocess.run([sys.executable, "-m", "benchmarks.worker", handle.name], cwd=ROOT, env=env,
                              capture_output=True, text=True)
    finally:
        os.unlink(handle.name)
    results = [json.loads(line[len(PREFIX):]) for line in proc.stdout.splitlines() if line.startswith(PREFIX)]
    for job in jobs[len(results):]:  # the worker died (e.g. killed for memory): say so in the table
        results.append({"job": job, "ok": False, "error": f"worker exited with {proc.returncode}: "
                                                          f"{proc.stderr.strip().splitlines()[-1:]}"})
    return results


def jobs_for(case: Case, n: int, f: int, data: Path, repeat: int, big: bool) -> list[dict[str, Any]]:
    base = {"case": case.name, "n": n, "f": f, "data": str(data), "work": str(data / "scratch"), "repeat": repeat,
            "big": big}
    return [{**base, "side": "ours"}, {**base, "side": "baseline"}]


def make_row(case: Case, n: int, f: int, big: bool, ours: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    baseline = case.big_baseline_name if big and case.big_baseline_name else case.baseline_name
    quick_wide = f < 100 and "cells" in case.extra  # the quick run's wide table is smaller
    row: dict[str, Any] = {"operation": case.name, "baseline": baseline, "n_cells": case.extra.get("cells", n),
                           "n_features": 2_000 if quick_wide else case.extra.get("columns", f), "big": big,
                           "goal": case.goal_text}
    errors = [f"{side}: {r['error']}" for side, r in (("ours", ours), ("baseline", base)) if not r.get("ok")]
    for side, r in (("ours", ours), ("baseline", base)):
        times = r.get("times") or [math.nan]
        row[f"{side}_min_s"] = min(times)
        row[f"{side}_median_s"] = statistics.median(times)
        row[f"{side}_peak_bytes"] = r.get("peak_bytes", math.nan)
        row[f"{side}_peak_growth_bytes"] = r.get("peak_growth_bytes", math.nan)
        row[f"{side}_times_s"] = times
        row[f"{side}_cpu_min_s"] = min(r.get("cpu_times") or [math.nan])
        row[f"{side}_cpu_times_s"] = r.get("cpu_times") or []
        row[f"{side}_load_before"] = r.get("load_before") or []
        row[f"{side}_free_gb_before"] = [round(b / 2**30, 2) for b in r.get("free_bytes_before") or []]
        if "server_cpu_s" in r:  # a case against a local server: the server's CPU seconds (first repetition)
            row[f"{side}_server_cpu_s"] = r["server_cpu_s"]
    for key in ("object_bytes", "matrix_bytes", "scene_bytes", "transferred_bytes", "directory_bytes",
                "transferred_share", "image_bytes"):
        row[key] = ours.get(key) or base.get(key)
    row["ratio"] = row["ours_min_s"] / row["baseline_min_s"] if row["baseline_min_s"] else math.nan
    row["cpu_ratio"] = row["ours_cpu_min_s"] / row["baseline_cpu_min_s"] if row["baseline_cpu_min_s"] else math.nan
    row["ours_cells_per_s"] = row["n_cells"] / row["ours_min_s"] if row["ours_min_s"] else math.nan
    row["peak_is_per_operation"] = bool(ours.get("peak_is_per_operation"))
    row["goal_met"] = None if errors else case.goal(row)
    if errors:
        row["error"] = "; ".join(errors)
    return row


def _mb(value: Any) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value / 2**20:,.0f}"


def _s(lo: float, med: float) -> str:
    return "—" if math.isnan(lo) else f"{lo:.3g} ({med:.3g})"


def table_markdown(rows: list[dict[str, Any]]) -> str:
    """The rows as a markdown table."""
    head = ("| operation | cells x features | ours s, min (median) | baseline | baseline s, min (median) | ratio "
            "| CPU ratio | ours cells/s | peak growth MB ours / baseline | object MB | goal | met |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        met = {True: "yes", False: "**no**", None: "—"}[r["goal_met"]]
        if r.get("error"):
            met = f"error: {r['error'][:120]}"
        lines.append(f"| {r['operation']} | {r['n_cells']:,} x {r['n_features']:,} "
                     f"| {_s(r['ours_min_s'], r['ours_median_s'])} | {r['baseline']} "
                     f"| {_s(r['baseline_min_s'], r['baseline_median_s'])} | {r['ratio']:.2f} "
                     f"| {r.get('cpu_ratio', math.nan):.2f} | {r['ours_cells_per_s']:,.0f} "
                     f"| {_mb(r['ours_peak_growth_bytes'])} / {_mb(r['baseline_peak_growth_bytes'])} "
                     f"| {_mb(r['object_bytes'])} | {r['goal']} | {met} |")
    return "\n".join(lines)


def save(out: Path, command: str, repeat: int, quick: bool, info: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """Write the results JSON (atomically, so a reader never sees half a file)."""
    document = {"created_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "command": command,
                "repeat": repeat, "one_worker_per_size": quick, "machine": info, "rows": rows}
    partial = out.with_name(out.name + ".partial")
    partial.write_text(json.dumps(document, indent=1, default=str))
    os.replace(partial, out)


def plan(args: argparse.Namespace) -> tuple[list[tuple[int, int, bool]], int]:
    if args.quick:
        return [(n, QUICK["features"], False) for n in QUICK["sizes"]], QUICK["repeat"]
    if args.big:
        return [(BIG[0], BIG[1], True)], 1
    return [(int(s), args.features, False) for s in args.sizes.split(",") if s.strip()], args.repeat


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.big and not args.force and available_gb() < BIG_NEEDS_GB:
        print(f"--big needs >= {BIG_NEEDS_GB:g} GB available, this machine has {available_gb():.1f} GB now; "
              "refusing (use --force to override)", file=sys.stderr)
        return 2
    sizes, repeat = plan(args)
    args.data.mkdir(parents=True, exist_ok=True)
    wanted = [w.strip().lower() for w in args.only.split(",")]
    cases = [c for c in all_cases() if any(w in c.name.lower() for w in wanted) and (c.big or not args.big)]
    info = describe_machine()
    rows: list[dict[str, Any]] = []
    out = args.json or args.data / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    command = recorded_command("benchmarks.run", argv if argv is not None else sys.argv[1:])
    for n, f, big in sizes:
        if (n, f, big) != sizes[0]:  # the wide table has its own fixed size: measured once per run
            cases = [c for c in cases if "cells" not in c.extra]
        prepared = run_worker([{"prepare": True, "n": n, "f": f, "data": str(args.data)}])[0] \
            if any(c.needs_slide for c in cases) else {"ok": True}  # the readers write their own inputs
        if not prepared.get("ok"):
            print(f"could not write the {n} x {f} slide: {prepared.get('error')}", file=sys.stderr)
            return 1
        if args.quick:
            jobs = [job for case in cases for job in jobs_for(case, n, f, args.data, repeat, big)]
            results = run_worker(jobs)
            pairs = zip(cases, results[0::2], results[1::2], strict=True)
        else:
            pairs = ((case, *run_worker(jobs_for(case, n, f, args.data, repeat, big))) for case in cases)
        for case, ours, base in pairs:
            rows.append(make_row(case, n, f, big, ours, base))
            print(table_markdown(rows[-1:]).splitlines()[-1], flush=True)
            save(out, command, repeat, args.quick, info, rows)  # after every row: a long run can be stopped
    info["load_average_at_end"] = os.getloadavg()
    save(out, command, repeat, args.quick, info, rows)
    text = table_markdown(rows)
    print("\n" + text + f"\n\nJSON: {out}")
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0 if all(not r.get("error") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
