"""What this machine gives two processes: CPU work alone, and the same work while the disk is written.

    python -m benchmarks.machine                        # 12.8 GB of SHA-256 per run, about a minute
    python -m benchmarks.machine --quick --data DATA    # seconds; what the test suite runs

The same SHA-256 work (hashing one random 64 MB buffer ``--rounds`` times: no
I/O, no memory traffic beyond the cache-resident buffer, nothing shared) is
timed in 1 process and split between 2, first alone, then while a third
process writes a file as fast as the disk takes it, the way write_dataset
writes its parts (around the page cache, :class:`~cellspec_sc.io._direct.DirectFile`,
where the file system suits it). The writer spends next to no CPU of its own.
Each row has the wall time, the speedup of 2 processes over 1, the CPU
seconds the hashing processes were charged and the CPU seconds the
hypervisor took from this machine's virtual CPUs meanwhile (``steal`` in
``/proc/stat``; zero on bare metal).

On the 2-CPU virtual machine of benchmarks/RESULTS.md the work alone scales 1.99x; beside the writer
it scales 1.34-1.42x, and 21-26% of the two CPUs' time in the 2-process run
is stolen (the host does the virtual disk's work on the cores
this VM runs on, once both of them are busy): a ceiling for any 2-worker
step that writes while it computes, write_dataset included
(benchmarks/RESULTS.md, docs/cohorts.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import hashlib
import json
import multiprocessing as mp
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from cellspec_sc.io import BLOCK, DirectFile, suits_direct_io

from .host import describe_machine, recorded_command

ROOT = Path(__file__).resolve().parent.parent
BUFFER = 64 << 20
WRAP = 1 << 30  # the writer starts its file again after 1 GiB: the disk space it takes is bounded


def _hash_rounds(rounds: int) -> float:
    """In a pool process: hash a random 64 MB buffer ``rounds`` times; the CPU seconds it took."""
    data = _buffer()
    started = time.process_time()
    for _ in range(rounds):
        hashlib.sha256(data).digest()
    return time.process_time() - started


@functools.cache
def _buffer() -> bytes:
    return os.urandom(BUFFER)


CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def cpu_seconds_since_boot() -> dict[str, float]:
    """The machine's CPU seconds since boot by kind, summed over its CPUs (the first line of ``/proc/stat``;
    Linux, empty elsewhere; a kernel without ``steal`` gives none).

    >>> set(cpu_seconds_since_boot()) <= set(CPU_FIELDS)
    True
    """
    try:
        with open("/proc/stat") as stat:
            values = stat.readline().split()[1:1 + len(CPU_FIELDS)]
    except OSError:
        return {}
    tick = os.sysconf("SC_CLK_TCK")
    # strict=False: an older kernel's line may have fewer fields than CPU_FIELDS
    return {name: int(value) / tick for name, value in zip(CPU_FIELDS, values, strict=False)}


def steal_seconds() -> float:
    """CPU seconds the hypervisor has taken from this machine's virtual CPUs since boot (0 where unknown).

    >>> steal_seconds() >= 0
    True
    """
    return cpu_seconds_since_boot().get("steal", 0.0)


def write_until(path: str, stop: Any, written: Any) -> None:
    """In a process of its own: write ``path`` in 4 MB blocks (starting over every :data:`WRAP` bytes) as
    write_dataset writes its parts, until ``stop`` is set; the bytes written go to ``written.value``."""
    block = memoryview(os.urandom(BLOCK))
    direct = suits_direct_io(Path(path).parent)
    while not stop.is_set():
        with DirectFile(path) if direct else open(path, "wb") as out:
            for _ in range(WRAP // BLOCK):
                out.write(block)
                written.value += BLOCK
                if stop.is_set():
                    break


def timed_hashing(pool: ProcessPoolExecutor, processes: int, rounds: int) -> dict[str, float]:
    """``rounds`` hashes of the buffer split between ``processes`` pool processes: wall, CPU and steal seconds."""
    share = [rounds // processes + (1 if i < rounds % processes else 0) for i in range(processes)]
    stolen = steal_seconds()
    started = time.perf_counter()
    cpu = sum(pool.map(_hash_rounds, share))
    return {"seconds": time.perf_counter() - started, "cpu_s": cpu, "stolen_s": steal_seconds() - stolen}


def run_case(pool: ProcessPoolExecutor, processes: int, rounds: int, scratch: Path | None) -> dict[str, Any]:
    """One row: the hashing on ``processes`` processes, beside a writer of ``scratch`` when given."""
    if scratch is None:
        return {"processes": processes, "beside_writes": False, **timed_hashing(pool, processes, rounds)}
    context = mp.get_context("spawn")
    stop, written = context.Event(), context.Value("q", 0)
    writer = context.Process(target=write_until, args=(str(scratch / "writes.bin"), stop, written))
    writer.start()
    try:
        while written.value == 0 and writer.is_alive():  # the writer is writing before the clock starts
            time.sleep(0.01)
        before = written.value
        row = timed_hashing(pool, processes, rounds)
        row["bytes_written"] = written.value - before
    finally:
        stop.set()
        writer.join()
        (scratch / "writes.bin").unlink(missing_ok=True)
    if writer.exitcode != 0:
        raise RuntimeError(f"the writer process ended with {writer.exitcode}")
    return {"processes": processes, "beside_writes": True, **row}


def run_all(rounds: int, scratch: Path, repeat: int) -> list[dict[str, Any]]:
    """Alone and beside the writer, 1 process then 2, ``repeat`` times in turn; the rows in that order."""
    scratch.mkdir(parents=True, exist_ok=True)
    rows = []
    with ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as pool:
        list(pool.map(_hash_rounds, [1, 1]))  # both processes started and holding their buffer
        for _ in range(repeat):
            for beside in (None, scratch):
                pair = [run_case(pool, processes, rounds, beside) for processes in (1, 2)]
                pair[1]["speedup"] = pair[0]["seconds"] / pair[1]["seconds"]
                rows += pair
                print(markdown(pair).splitlines()[-1], flush=True)
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    head = ("| SHA-256 work | processes | s | CPU s | stolen CPU s | MB written meanwhile | speedup vs 1 process |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        speedup = f"{r['speedup']:.2f}" if "speedup" in r else "—"
        beside = "beside disk writes" if r["beside_writes"] else "alone"
        written = f"{r['bytes_written'] / 1e6:,.0f}" if r["beside_writes"] else "—"
        lines.append(f"| {beside} | {r['processes']} | {r['seconds']:.3g} | {r['cpu_s']:.3g} | "
                     f"{r['stolen_s']:.3g} | {written} | {speedup} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small run for the test suite (8 rounds)")
    p.add_argument("--rounds", type=int, default=None, help="hashes of the 64 MB buffer per run (default 200)")
    p.add_argument("--repeat", type=int, default=1, help="rounds of the four runs, in turn")
    p.add_argument("--data", type=Path, default=ROOT / "benchmarks" / ".data", help="where the writer writes")
    p.add_argument("--json", type=Path, default=None, help="JSON output (default: DATA/machine-results.json)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    info = describe_machine()  # before the run: its load average is the other work's, not ours
    rounds = args.rounds or (8 if args.quick else 200)
    rows = run_all(rounds, args.data / "machine-scratch", args.repeat)
    out = args.json or args.data / "machine-results.json"
    document = {"created_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "rounds": rounds,
                "buffer_bytes": BUFFER, "machine": info,
                "command": recorded_command("benchmarks.machine", argv if argv is not None else sys.argv[1:]),
                "cpus": os.cpu_count(), "load_average_at_end": os.getloadavg(), "rows": rows}
    out.write_text(json.dumps(document, indent=1))
    print("\n" + markdown(rows) + f"\nJSON: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
