"""``cellspec cohort validate|summary|dataset PATHS...``: cohort operations from the shell.

``PATHS`` are cellspec directories, a folder holding them, or a glob (quote
it). ``--scheduler`` picks where the work runs: ``local`` (default: a dask
``LocalCluster`` with one single-threaded worker process per core, started and
stopped by the command), ``threads`` (this process only), or the address of a
running dask scheduler (``tcp://host:8786``, e.g. started by dask-jobqueue on
a cluster). A progress bar counts finished directories on stderr.

Exit codes: 0 ok; 1 validation failed or a directory failed; 2 usage error or
a cohort that cannot be opened.

>>> import tempfile, pathlib
>>> from cellspec_sc.cohort.example import write_example_cohort
>>> from cellspec_sc.cli.main import main
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> _ = write_example_cohort(root / "slides", 2, n_cells=20)
>>> main(["cohort", "summary", str(root / "slides"), "-o", str(root / "s.csv"), "--scheduler", "threads"])
0
>>> (root / "s.csv").read_text().splitlines()[0][:33]
'directory,image_id,feature_id,n,n'
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from distributed import Client, LocalCluster

from cellspec_sc.cli._sources import add_storage_options, storage_options_of
from cellspec_sc.cohort import CohortError, open_cohort
from cellspec_sc.errors import InputError

EXIT_OK, EXIT_FAILED = 0, 1


@contextlib.contextmanager
def scheduler_client(scheduler: str) -> Iterator[Any]:
    """A ``distributed.Client`` for ``scheduler`` (``local``: a LocalCluster sized to the machine, closed
    afterwards), or None for ``threads``."""
    if scheduler == "threads":
        yield None
        return
    if scheduler == "local":
        with LocalCluster(n_workers=os.cpu_count() or 1, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            yield client
        return
    with Client(scheduler, timeout="30s") as client:
        yield client


def _open(args: argparse.Namespace) -> Any:
    paths = args.paths[0] if len(args.paths) == 1 else args.paths
    return open_cohort(paths, features=args.features, storage_options=storage_options_of(args))


def cmd_validate(args: argparse.Namespace) -> int:
    cohort = _open(args)
    with scheduler_client(args.scheduler) as client:
        report = cohort.validate(client)
    print(report.format())
    return EXIT_OK if report.ok else EXIT_FAILED


def cmd_summary(args: argparse.Namespace) -> int:
    out = Path(args.output)
    writers = {".parquet": lambda f: f.to_parquet(out, index=False), ".csv": lambda f: f.to_csv(out, index=False),
               ".tsv": lambda f: f.to_csv(out, sep="\t", index=False)}
    if out.suffix not in writers:
        raise InputError(f"-o {out}: the summary is written as .parquet, .csv or .tsv")
    cohort = _open(args)
    with scheduler_client(args.scheduler) as client:
        try:
            frame = cohort.summary(client)
        except CohortError as err:
            print(f"cellspec: {err}", file=sys.stderr)
            return EXIT_FAILED
    writers[out.suffix](frame)
    print(f"wrote {out} ({len(frame):,} rows)", file=sys.stderr)
    return EXIT_OK


def cmd_dataset(args: argparse.Namespace) -> int:
    if len(args.paths) < 2:
        raise InputError("cellspec cohort dataset PATHS... OUT: give the directories, then the output folder")
    *paths, out = args.paths
    args.paths = paths
    cohort = _open(args)
    with scheduler_client(args.scheduler) as client:
        try:
            written = cohort.write_dataset(out, partition_by=args.partition_by, client=client,
                                           storage_options=storage_options_of(args))
        except CohortError as err:
            print(f"cellspec: {err}", file=sys.stderr)
            return EXIT_FAILED
    print(f"wrote {written} ({cohort.n_cells:,} cells from {len(cohort)} directories)", file=sys.stderr)
    return EXIT_OK


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--features", choices=("strict", "intersection", "union"), default="strict",
                   help="how dictionaries combine (default strict: every directory has the same one)")
    p.add_argument("--scheduler", default="local", metavar="ADDRESS",
                   help="'local' (default: a LocalCluster with one worker per core), 'threads', or a dask "
                        "scheduler address such as tcp://host:8786")
    add_storage_options(p)


def register(p: argparse.ArgumentParser) -> None:
    verbs = p.add_subparsers(dest="verb", metavar="VERB")

    p = verbs.add_parser("validate", help="validate every directory plus the cohort checks")
    p.add_argument("paths", nargs="+", metavar="PATHS", help="directories, a folder holding them, or a glob")
    _common(p)
    p.set_defaults(func=cmd_validate)

    p = verbs.add_parser("summary", help="per image and feature: n, na, mean, sd, min, quantiles, max")
    p.add_argument("paths", nargs="+", metavar="PATHS", help="directories, a folder holding them, or a glob")
    p.add_argument("-o", "--output", required=True, help="summary file: .parquet, .csv or .tsv")
    _common(p)
    p.set_defaults(func=cmd_summary)

    p = verbs.add_parser("dataset", help="write one hive-partitioned Parquet dataset (PATHS... OUT)")
    p.add_argument("paths", nargs="+", metavar="PATHS... OUT", help="directories (or a folder or glob), then OUT")
    p.add_argument("--partition-by", nargs="+", default=["sample_id"], metavar="COLUMN",
                   help="character cells columns to partition by (default sample_id)")
    _common(p)
    p.set_defaults(func=cmd_dataset)
