"""Runs benchmark jobs in this (fresh) process and prints one result line per job.

``python -m benchmarks.worker JOBS.json`` where the file holds a list of jobs
``{"case", "side", "n", "f", "data", "work", "repeat", "big"}`` or
``{"prepare": true, "n", "f", "data"}``. The parent runs one worker per job so
that peaks never mix (``--quick`` runs all jobs of a size in one worker).
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

from .cases import Env, case_named
from .data import prepare_slide
from .measure import time_operation

PREFIX = "BENCH_RESULT "


def run_job(job: dict) -> dict:
    if job.get("prepare"):
        prepare_slide(Path(job["data"]), job["n"], job["f"])
        return {"prepared": True}
    case = case_named(job["case"])
    env = Env(n=job["n"], f=job["f"], data=Path(job["data"]), work=Path(job["work"]), big=job.get("big", False))
    op = getattr(case, job["side"])(env)
    return time_operation(op.run, job["repeat"], op.cleanup, op.inspect, op.timer)


def main(argv: list[str]) -> int:
    jobs = json.loads(Path(argv[0]).read_text())
    for job in jobs:
        try:
            out = {"ok": True, **run_job(job)}
        except Exception as err:  # noqa: BLE001 - a failing case is reported in the table, not fatal
            out = {"ok": False, "error": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc()}
        print(PREFIX + json.dumps({"job": job, **out}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
