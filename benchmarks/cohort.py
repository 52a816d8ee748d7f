"""Cohort benchmark: validate, summary and write_dataset on a dask LocalCluster, 1 worker vs 2.

    python -m benchmarks.cohort                     # 40 directories x 250,000 cells x 100 features (8 GB of float64)
    python -m benchmarks.cohort --quick --data DATA     # seconds; what the test suite runs
    python -m benchmarks.cohort --directories 4 --steps summary,summary_from_bucket --data DATA  # and from S3

Each step runs on a LocalCluster of 1 and on one of 2 single-threaded worker
processes with ``--memory-limit`` each (3 GB by default: a worker holds far
less than the cohort). Every timed run gets a cluster of its own, started and
warmed up (imports, a first validation) before the clock starts and closed
after, so no other cluster is alive while a run is timed: an idle cluster's
event loops, heartbeats and scheduler cost a few percent of a core, which the
spare core absorbs beside 1 worker but which 2 workers on 2 cores would pay.
The two worker counts take turns step by step (validate on 1 then 2 workers,
summary on 1 then 2, ...), so both see the same data in the same disk state:
before every timed run the harness flushes dirty pages (``os.sync``, so no
earlier write is paid for by the next step), reads every file of the cohort
once (the page cache is warm for both, as far as the machine's memory holds the
cohort) and waits until the disk holding ``--data`` has been idle for a second
(at most 15 s; ``disk_wait_s`` in the row): on a file system mounted with
``discard`` the blocks of the output deleted after the previous run are
discarded some seconds after the delete, and that device work would otherwise
land in the next timed run. ``--repeat N`` times each (step, workers)
N times in turn and keeps the fastest. ``--worker-env NAME=VALUE`` sets a
variable in every worker process before it starts, for both worker counts
alike (recorded in the JSON): e.g. ``MIMALLOC_PURGE_DECOMMITS=0``, with which
pyarrow's allocator (mimalloc) keeps the pages of freed buffers mapped instead
of handing them back to the kernel, so that the next row group does not fault
and zero them again (docs/cohorts.md); no variable is set by default. A row per (step, workers): wall time,
cells per second, the CPU seconds of the workers (user + system, summed),
the peak RSS of every worker process and of the client (sampled every 20 ms in
a thread), whether a worker was restarted or killed (its pid or address
changed) and, on the 2-worker rows, the speedup over 1 worker (goal >= 1.7).
The cohort is written once under ``--data`` and reused.

The step ``summary_from_bucket`` (not run by default: it needs s3fs and moto) is ``summary`` on the same cohort
uploaded (once, untimed) to a bucket of a local S3 server, moto's server mode in a process of its own
(:func:`benchmarks.object_storage.start_server`), opened from its URLs with ``storage_options``: the workers
fetch every member from the server (each file streamed and hashed once, the row groups by ranged reads).
The server runs on the same cores as the workers, so its row also records the CPU seconds the server
process spent during the step (``server_cpu_s``, also in the machine's): on a 2-core machine 2 workers and
the server share two cores, where 1 worker and the server have one each, so the speedup is judged beside
``summary``'s on the local disk in the same run (``--steps summary,summary_from_bucket``).

The last step, ``bare_copy``, is the machine's ceiling for write_dataset's
speedup: the same source row groups copied to new Parquet files with pyarrow
(the same rows and writer options, writeback started per file, every file
fsynced at the end) without checks, hashing or partitions. On a 2-core machine
whatever else runs while the workers write (the kernel's page cache and
writeback work, the scheduler) takes from the two cores that 2 workers use
and from the idle second core that 1 worker leaves, so even this copy does not
reach 2x; write_dataset's speedup is judged beside it. The step ``hashed_copy`` is a
reference, not a ceiling: the same copy plus the SHA-256 work write_dataset cannot leave out (every source file
once, as the manifest check, and every file written, for the dataset's manifest), each file hashed by reading it
again, where write_dataset hashes bytes it already holds. Each row also has the
CPU seconds the whole machine spent during the step (all processes and the
kernel, from ``/proc/stat``; other load on the machine counts too) and the CPU
seconds the hypervisor took from the machine's virtual CPUs meanwhile (steal;
zero on bare metal): on a virtual machine whose host does the virtual disk's
work on the cores the VM runs on, this costs 2 workers that write (both cores
busy) and not 1 (:mod:`benchmarks.machine` measures it without our code).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import shutil
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil

from .host import describe_machine, recorded_command
from .machine import cpu_seconds_since_boot, steal_seconds

ROOT = Path(__file__).resolve().parent.parent
FULL = {"directories": 40, "cells": 250_000, "features": 100, "memory_limit": "3GB"}
QUICK = {"directories": 4, "cells": 3_000, "features": 12, "memory_limit": "1GB"}
STEPS = ("validate", "summary", "write_dataset", "bare_copy", "hashed_copy", "summary_from_bucket")
DEFAULT_STEPS = STEPS[:-1]  # the bucket's step needs s3fs and moto: asked for by name
GOAL_STEPS = ("validate", "summary", "write_dataset", "summary_from_bucket")  # the copies are ceilings, not goals
BUCKET_STEPS = ("summary_from_bucket",)
COPIES = ("bare_copy", "hashed_copy")
SPEEDUP_GOAL = 1.7


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.cohort", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help=f"small run for the test suite: {QUICK}")
    p.add_argument("--directories", type=int, default=None)
    p.add_argument("--cells", type=int, default=None)
    p.add_argument("--features", type=int, default=None)
    p.add_argument("--memory-limit", default=None, help="per worker (default 3GB; --quick 1GB)")
    p.add_argument("--worker-env", action="append", default=[], metavar="NAME=VALUE",
                   help="set in every worker process before it starts (dask's nanny pre-spawn environment), for "
                        "both worker counts alike; repeatable. E.g. MIMALLOC_PURGE_DECOMMITS=0")
    p.add_argument("--workers", default="1,2", help="worker counts to compare, comma separated")
    p.add_argument("--steps", default=",".join(DEFAULT_STEPS),
                   help=f"steps to time, comma separated (default: all but {', '.join(BUCKET_STEPS)})")
    p.add_argument("--repeat", type=int, default=1, help="runs per (step, workers), in turn; the fastest is kept")
    p.add_argument("--data", type=Path, default=ROOT / "benchmarks" / ".data", help="where the cohort is written")
    p.add_argument("--json", type=Path, default=None, help="JSON output (default: DATA/cohort-results.json)")
    p.add_argument("--markdown", type=Path, default=None, help="also write the table as markdown here")
    args = p.parse_args(argv)
    unknown = set(args.steps.split(",")) - set(STEPS)
    if unknown:
        p.error(f"--steps: unknown {', '.join(sorted(unknown))} (steps: {', '.join(STEPS)})")
    for item in args.worker_env:
        if "=" not in item or not item.split("=", 1)[0]:
            p.error(f"--worker-env: {item!r} is not NAME=VALUE")
    size = QUICK if args.quick else FULL
    for key in ("directories", "cells", "features", "memory_limit"):
        if getattr(args, key) is None:
            setattr(args, key, size[key])
    return args


def prepare(data: Path, directories: int, cells: int, features: int) -> list[Path]:
    """Write the cohort once (kept between runs); returns the directories."""
    from cellspec_sc.cohort.example import write_example_cohort

    root = data / f"cohort-{directories}x{cells}x{features}"
    paths = [root / f"slide{i:02d}" for i in range(1, directories + 1)]
    if (root / "COMPLETE").exists():
        return paths
    shutil.rmtree(root, ignore_errors=True)
    write_example_cohort(root, directories, n_cells=cells, n_features=features, n_images=2)
    (root / "COMPLETE").write_text("")
    return paths


class Bucket:
    """The cohort in a bucket of a local S3 server started by this process (uploaded once): its URLs and
    storage options, and the server's CPU seconds so far."""

    def __init__(self, paths: list[Path]):
        import boto3
        import fsspec

        from .object_storage import start_server

        self.options = start_server()
        endpoint = self.options["client_kwargs"]["endpoint_url"]
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=self.options["key"],
                     aws_secret_access_key=self.options["secret"]).create_bucket(Bucket="cohort")
        fs = fsspec.filesystem("s3", **self.options)
        self.urls = [f"s3://cohort/{folder.name}" for folder in paths]
        for folder, url in zip(paths, self.urls, strict=True):
            for path in sorted(folder.iterdir()):
                _put_with_retries(fs, path, f"{url}/{path.name}")

    @staticmethod
    def server_cpu_seconds() -> float:
        from .object_storage import server_cpu_seconds

        return server_cpu_seconds()


def _put_with_retries(fs: Any, path: Path, url: str) -> None:
    for attempt in range(3):  # moto's server loses a multipart upload now and then under load
        try:
            fs.put_file(str(path), url)
            return
        except FileNotFoundError:
            if attempt == 2:
                raise


class PeakRss:
    """Peak RSS of this process, sampled in a thread."""

    def __init__(self, every: float = 0.02):
        self.every, self.peak, self._stop = every, 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            self.peak = max(self.peak, me.memory_info().rss)
            time.sleep(self.every)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def _start_sampler(dask_worker: Any) -> int:
    """Run on each worker: start a fresh peak-RSS sampler on the worker object."""
    import threading as th
    import time as tm

    import psutil as ps

    old = getattr(dask_worker, "cohort_rss", None)
    if old is not None:
        old["stop"].set()
    state = {"peak": 0, "stop": th.Event()}

    def sample() -> None:
        me = ps.Process()
        while not state["stop"].is_set():
            state["peak"] = max(state["peak"], me.memory_info().rss)
            tm.sleep(0.02)

    th.Thread(target=sample, daemon=True).start()
    dask_worker.cohort_rss = state
    return os.getpid()


def _read_sampler(dask_worker: Any) -> int:
    state = dask_worker.cohort_rss
    state["stop"].set()
    return max(state["peak"], psutil.Process().memory_info().rss)


def _warm_up() -> bool:
    """Run on each worker: import what the tasks use and validate the small example once."""
    import cellspec_sc as cs
    from cellspec_sc.cohort import _dataset, _summary, _validate  # noqa: F401

    return cs.validate(cs.example()).ok


def _warm_up_store(url: str, storage_options: dict[str, Any]) -> int:
    """Run on each worker: import the store's client and open a connection to it (lists a prefix)."""
    import fsspec

    return len(fsspec.filesystem("s3", **storage_options).ls(url, refresh=True))


def _cpu_seconds() -> float:
    """Run on each worker: user + system CPU seconds of the worker process so far."""
    times = os.times()
    return times.user + times.system


def _machine_cpu_seconds() -> float:
    """CPU seconds every core of the machine spent busy so far (user, nice, system, irq, softirq; Linux)."""
    seconds = cpu_seconds_since_boot()
    busy = ("user", "nice", "system", "irq", "softirq")
    return sum(seconds[kind] for kind in busy) if all(kind in seconds for kind in busy) else math.nan


def copy_row_group(source: str, row_group: int, target: str) -> int:
    """Run on a worker: one row group of a source Parquet file written to a new Parquet file with
    write_dataset's writer options (dictionaries and statistics for the text columns, doubles plain) and its
    writeback started; no checks, no hashing, no partitions. Returns the bytes written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from cellspec_sc.io import start_writeback

    rows = pq.ParquetFile(source).read_row_group(row_group)
    text = [f.name for f in rows.schema if not pa.types.is_floating(f.type)]
    with pq.ParquetWriter(target, rows.schema, use_dictionary=text, write_statistics=text) as writer:
        writer.write_table(rows, row_group_size=max(rows.num_rows, 1))
    start_writeback(Path(target))
    return os.path.getsize(target)


def hashed_copy_row_group(source: str, row_group: int, target: str, hash_source: bool) -> int:
    """:func:`copy_row_group` plus the SHA-256 work write_dataset cannot leave out, done the plain way (each file
    read again to hash it): the source file's (once per file: the manifest check) and the written file's (its
    line in the dataset's manifest)."""
    from cellspec_sc._files import sha256_file

    if hash_source:
        sha256_file(source)
    written = copy_row_group(source, row_group, target)
    sha256_file(target)
    return written


def copy_jobs(cohort: Any, scratch: Path) -> list[tuple[str, int, str, bool]]:
    """(source file, row group, target file, first job of its source) for every row group of the cohort."""
    jobs, seen = [], set()
    for m in cohort.members:
        for k, p in enumerate(m.parts):
            source = str(m.root / p.file)
            jobs.append((source, p.row_group, str(scratch / f"{m.index:05d}-{k:06d}.parquet"), source not in seen))
            seen.add(source)
    return jobs


def bare_copy(client: Any, cohort: Any, scratch: Path, hashed: bool = False) -> None:
    """Copy every row group of the cohort into ``scratch`` on the workers (``hashed``: with the SHA-256 of
    every source and every copy, :func:`hashed_copy_row_group`), then fsync every file here (as write_dataset
    publishes)."""
    from cellspec_sc.io import fsync_tree

    scratch.mkdir(parents=True)
    sources, groups, targets, first = zip(*copy_jobs(cohort, scratch), strict=True)
    if hashed:
        futures = client.map(hashed_copy_row_group, sources, groups, targets, first, pure=False)
    else:
        futures = client.map(copy_row_group, sources, groups, targets, pure=False)
    client.gather(futures)
    fsync_tree(scratch)


def settle(paths: list[Path], data: Path | None = None) -> float:
    """Same disk state before every timed run: no dirty pages left by earlier work, every file of the
    cohort read once (page cache warm), the disk holding ``data`` idle; returns the seconds waited for it."""
    os.sync()
    buffer = bytearray(1 << 24)
    for folder in paths:
        for file in sorted(folder.iterdir()):
            with open(file, "rb", buffering=0) as handle:
                while handle.readinto(buffer):
                    pass
    return disk_idle(data) if data is not None else 0.0


def disk_idle(path: Path, still: float = 1.0, limit: float = 15.0) -> float:
    """Wait until the block device holding ``path`` has done no I/O (discards included) for ``still`` seconds,
    at most ``limit`` seconds; returns the seconds waited (0 where the device's statistics cannot be read)."""
    device = os.stat(path).st_dev
    stat = Path(f"/sys/dev/block/{os.major(device)}:{os.minor(device)}/stat")

    def busy_ms() -> int | None:
        try:
            return int(stat.read_text().split()[9])  # io_ticks: milliseconds with requests in flight
        except (OSError, IndexError, ValueError):
            return None

    started = time.perf_counter()
    last, quiet_since = busy_ms(), started
    while last is not None and time.perf_counter() - quiet_since < still:
        if time.perf_counter() - started > limit:
            break
        time.sleep(0.1)
        now = busy_ms()
        if now != last:
            last, quiet_since = now, time.perf_counter()
    return time.perf_counter() - started if last is not None else 0.0


def disk_floor(scratch: Path, size: int, writers: int) -> dict[str, Any]:
    """Time writing ``size`` bytes (random, in ``writers`` files written at once by threads) and fsyncing
    them, the least any step writing that much can take on this disk; the files are removed after. They are
    written the way write_dataset writes its parts: around the page cache (``DirectFile``) where the file
    system suits it, else through the page cache (each way has its own floor; on ext4 on a virtual disk,
    writing around the page cache can be several times faster than through it)."""
    from cellspec_sc.io import DirectFile, suits_direct_io

    scratch.mkdir(parents=True, exist_ok=True)
    direct = suits_direct_io(scratch)
    chunk = os.urandom(1 << 24)

    def write(i: int) -> None:
        left = size // writers + (size % writers if i == 0 else 0)
        path = scratch / f"floor-{i}.bin"
        if direct:
            with DirectFile(path) as handle:
                while left > 0:
                    left -= handle.write(memoryview(chunk)[:left])
        else:
            with open(path, "wb", buffering=0) as handle:
                while left > 0:
                    left -= handle.write(memoryview(chunk)[:left])
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    settle([], scratch)
    started = time.perf_counter()
    with ThreadPoolExecutor(writers) as pool:
        list(pool.map(write, range(writers)))
    seconds = time.perf_counter() - started
    shutil.rmtree(scratch, ignore_errors=True)
    return {"bytes": size, "writers": writers, "seconds": seconds, "mb_per_s": size / seconds / 2**20,
            "direct": direct}


def timed_run(workers: int, memory_limit: str, cohort: Any, step: str, paths: list[Path],
              data: Path, worker_env: dict[str, str] | None = None, server: Any = None) -> dict[str, Any]:
    """One timed run of ``step`` on a LocalCluster of its own (started and warmed up before the clock starts,
    closed after; ``worker_env`` added to the environment its worker processes start with), the disk settled
    first (:func:`settle`)."""
    import dask
    from distributed import Client, LocalCluster

    environ = {**dask.config.get("distributed.nanny.pre-spawn-environ"), **(worker_env or {})}
    with (dask.config.set({"distributed.nanny.pre-spawn-environ": environ}),
          LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, memory_limit=memory_limit,
                       dashboard_address=None) as cluster,
          Client(cluster, set_as_default=False) as client):
        client.run(_warm_up)  # imports and first-call caches of every worker, untimed
        if server is not None:
            client.run(_warm_up_store, server.urls[0], server.options)
        waited = settle(paths, data)
        row = run_step(client, cohort, step, data / "cohort-scratch", server)
    row["disk_wait_s"] = waited
    return row


def run_step(client: Any, cohort: Any, step: str, scratch: Path, server: Any = None) -> dict[str, Any]:
    """Time one step on ``client``; peaks of every worker and of the client; CPU of the workers (and of the
    local S3 server, when ``server`` is the :class:`Bucket` the step reads from); restarts."""
    before = client.run(_start_sampler)
    server_before = server.server_cpu_seconds() if server is not None else math.nan
    cpu_before = client.run(_cpu_seconds)
    client_peak = PeakRss()
    machine_before, stolen_before = _machine_cpu_seconds(), steal_seconds()
    started = time.perf_counter()
    error = None
    try:
        if step == "validate":
            report = cohort.validate(client, progress=False)
            error = None if report.ok else report.format()[:300]
        elif step in ("summary", *BUCKET_STEPS):
            cohort.summary(client, progress=False)
        elif step in COPIES:
            shutil.rmtree(scratch, ignore_errors=True)
            bare_copy(client, cohort, scratch, hashed=step == "hashed_copy")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
            cohort.write_dataset(scratch, client=client, progress=False)
    except Exception as err:  # noqa: BLE001 - reported in the row
        error = f"{type(err).__name__}: {str(err)[:300]}"
    seconds = time.perf_counter() - started
    machine, stolen = _machine_cpu_seconds() - machine_before, steal_seconds() - stolen_before
    server_cpu = server.server_cpu_seconds() - server_before if server is not None else None
    cpu = sum(client.run(_cpu_seconds).values()) - sum(cpu_before.values())
    peaks = client.run(_read_sampler)
    written = sum(f.stat().st_size for f in scratch.rglob("*") if f.is_file()) if scratch.is_dir() else 0
    shutil.rmtree(scratch, ignore_errors=True)
    restarted = sorted(set(before.items()) ^ set(client.run(lambda: os.getpid()).items()))
    row = {"step": step, "seconds": seconds, "cells_per_s": cohort.n_cells / seconds, "worker_cpu_s": cpu,
           "machine_cpu_s": machine, "stolen_cpu_s": stolen,
           "worker_peak_bytes": sorted(peaks.values()), "client_peak_bytes": client_peak.stop(),
           "workers_restarted": len(restarted) // 2}
    if step in ("write_dataset", *COPIES):
        row["bytes_written"] = written
    if server_cpu is not None:
        row["server_cpu_s"] = server_cpu
    if error:
        row["error"] = error
    return row


def run_all(args: argparse.Namespace, paths: list[Path]) -> list[dict[str, Any]]:
    import cellspec_sc as cs

    steps = args.steps.split(",")
    cohort = cs.open_cohort(paths)
    bucket = Bucket(paths) if set(steps) & set(BUCKET_STEPS) else None
    from_bucket = cs.open_cohort(bucket.urls, storage_options=bucket.options) if bucket else None
    counts = [int(w) for w in args.workers.split(",")]
    rows = []
    for step in steps:
        on_bucket = step in BUCKET_STEPS
        runs: dict[int, list[dict[str, Any]]] = {w: [] for w in counts}
        for _ in range(args.repeat):
            for workers in counts:  # 1 worker, then 2, then (with --repeat) 1 again...
                runs[workers].append(timed_run(workers, args.memory_limit, from_bucket if on_bucket else cohort,
                                               step, paths, args.data,
                                               dict(item.split("=", 1) for item in args.worker_env),
                                               bucket if on_bucket else None))
        for workers in counts:
            row = min(runs[workers], key=lambda r: (bool(r.get("error")), r["seconds"]))
            row.update(workers=workers, directories=len(paths), cells=cohort.n_cells,
                       all_seconds=[r["seconds"] for r in runs[workers]],
                       all_worker_cpu_s=[r["worker_cpu_s"] for r in runs[workers]], features=len(cohort.feature_ids),
                       memory_limit=args.memory_limit,
                       workers_restarted=sum(r["workers_restarted"] for r in runs[workers]))
            rows.append(row)
            print(markdown([row]).splitlines()[-1], flush=True)
    by_step = {(r["step"], r["workers"]): r for r in rows}
    for r in rows:
        one = by_step.get((r["step"], 1))
        if r["workers"] > 1 and one:
            r["speedup"] = one["seconds"] / r["seconds"]
            if r["step"] in GOAL_STEPS:
                r["goal_met"] = r["speedup"] >= SPEEDUP_GOAL and not r.get("error") and not r["workers_restarted"]
    return rows


def _mb(value: float) -> str:
    return f"{value / 2**20:,.0f}"


def _server_cpu(row: dict[str, Any]) -> str:
    return f"{row['server_cpu_s']:.3g}" if "server_cpu_s" in row else "—"


def markdown(rows: list[dict[str, Any]]) -> str:
    head = ("| step | workers | directories x cells x features | s | worker CPU s | machine CPU s | stolen CPU s "
            "| S3 server CPU s "
            "| cells/s "
            "| peak MB per worker "
            "| peak MB client "
            "| workers restarted | speedup vs 1 worker (goal >= 1.7) |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        speedup = f"{r['speedup']:.2f}" if "speedup" in r else "—"
        if r.get("error"):
            speedup += f" error: {r['error'][:80]}"
        lines.append(f"| {r['step']} | {r['workers']} | {r['directories']} x {r['cells'] // r['directories']:,} x "
                     f"{r['features']} | {r['seconds']:.3g} | {r.get('worker_cpu_s', math.nan):.3g} | "
                     f"{r.get('machine_cpu_s', math.nan):.3g} | {r.get('stolen_cpu_s', math.nan):.3g} | "
                     f"{_server_cpu(r)} | {r['cells_per_s']:,.0f} | "
                     f"{' / '.join(_mb(p) for p in r['worker_peak_bytes'])} | {_mb(r['client_peak_bytes'])} | "
                     f"{r['workers_restarted']} | {speedup} |")
    return "\n".join(lines)


def floor_line(floor: dict[str, Any] | None, rows: list[dict[str, Any]]) -> str:
    """One sentence: how long the disk alone takes for write_dataset's bytes, beside write_dataset's times."""
    if not floor:
        return "disk floor: not measured (write_dataset wrote nothing)"
    steps = ", ".join(f"{r['workers']} worker(s) {r['seconds']:.3g} s" for r in rows if r["step"] == "write_dataset")
    way = "around the page cache (O_DIRECT)" if floor.get("direct") else "through the page cache"
    return (f"disk floor: {floor['bytes'] / 2**30:.2f} GiB written {way} by {floor['writers']} thread(s) and "
            f"fsynced in {floor['seconds']:.3g} s ({floor['mb_per_s']:,.0f} MiB/s); write_dataset: {steps}")


def ceiling_line(rows: list[dict[str, Any]]) -> str:
    """One sentence: write_dataset's speedup beside the bare copy's (the most this machine gives) and the hashed
    copy's (a reference: the copy with write_dataset's hashing done the plain way)."""
    most = max(r["workers"] for r in rows)
    speedups = {r["step"]: r["speedup"] for r in rows if "speedup" in r and r["workers"] == most}
    if "bare_copy" not in speedups or "write_dataset" not in speedups:
        return "ceiling: not measured (bare_copy or write_dataset missing)"
    ours, bare = speedups["write_dataset"], speedups["bare_copy"]
    hashed = f" (the hashed copy's {speedups['hashed_copy']:.2f}x)" if "hashed_copy" in speedups else ""
    return (f"ceiling: the bare copy's speedup is {bare:.2f}x{hashed}, write_dataset's {ours:.2f}x "
            f"({ours / bare:.0%} of the ceiling)")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    info = describe_machine()  # before the run: its load average is the other work's, not ours
    args.data.mkdir(parents=True, exist_ok=True)
    paths = prepare(args.data, args.directories, args.cells, args.features)
    rows = run_all(args, paths)
    written = max((r.get("bytes_written", 0) for r in rows if r["step"] == "write_dataset"), default=0)
    floor = disk_floor(args.data / "cohort-scratch", written, max(r["workers"] for r in rows)) if written else None
    out = args.json or args.data / "cohort-results.json"
    document = {"created_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "worker_env": args.worker_env,
                "command": recorded_command("benchmarks.cohort", argv if argv is not None else sys.argv[1:]),
                "machine": info, "cpus": os.cpu_count(), "load_average_at_end": os.getloadavg(), "rows": rows,
                "disk_floor": floor}
    out.write_text(json.dumps(document, indent=1))
    text = markdown(rows)
    print("\n" + text + f"\n\n{floor_line(floor, rows)}\n{ceiling_line(rows)}\nJSON: {out}")
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0 if all(not r.get("error") and not r["workers_restarted"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
