"""Directories on object storage, against a local S3 server (moto's server mode in a process of its own).

Each side starts the server in its setup (untimed), uploads the benchmark slide to a bucket and then times:

- ``read from S3``: ``cs.read(url)`` (every file fetched once and hashed as it streams, decoded, validated)
  beside the baseline: the same objects fetched whole with s3fs's ``cat_file`` and hashed, nothing decoded.
  Both sides make the same requests: ranged GETs of s3fs's ``default_block_size`` (50 MiB),
  ``max_concurrency`` (10) in flight, which is the plan ``cs.read`` takes from the store client
  (:func:`cellspec_sc.io._remote.piece_plan`). moto answers each ranged GET by reading the whole object
  (``FakeKey.value``), so at 1,000,000 x 100 the server's CPU is most of either side's time: the row
  records it (``ours_server_cpu_s``, ``baseline_server_cpu_s``: CPU seconds of the server process during the
  first repetition), and on a 2-core machine it competes with the client for the same cores;
- ``read from S3, one GET per object``: the same two sides with ``default_block_size`` larger than any file
  (one request per object on both sides), for information: the fetch without moto's cost per ranged
  read, so the ratio shows the client's own work (decoding, validating) beside fetching and hashing;
- ``info from S3``: ``read_header(url)`` (DONE, the manifest, cellspec.json and the Parquet footer), beside
  fetching the whole directory; its row reports the share of the directory it transferred.
"""

from __future__ import annotations

import atexit
import hashlib
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .cases import Case, Env, Op, describe_object

OPTIONS_KEYS = {"key": "benchmark", "secret": "benchmark"}
ONE_GET = {"default_block_size": 1 << 40}  # a block larger than any file: one request per object
SERVERS: list[subprocess.Popen] = []  # the servers this process started


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server() -> dict[str, Any]:
    """A moto S3 server on 127.0.0.1 in its own process (stopped when this process exits); storage options."""
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    atexit.register(server.kill)
    SERVERS.append(server)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    return {**OPTIONS_KEYS, "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}


def server_cpu_seconds() -> float:
    """CPU seconds (user + system) the servers this process started have used so far."""
    import psutil

    return sum(sum(psutil.Process(s.pid).cpu_times()[:2]) for s in SERVERS if s.poll() is None)


def uploaded_slide(env: Env) -> tuple[str, dict[str, Any]]:
    """The benchmark slide uploaded to a fresh server: (its URL, the storage options)."""
    import boto3
    import fsspec

    options = start_server()
    boto3.client("s3", endpoint_url=options["client_kwargs"]["endpoint_url"], region_name="us-east-1",
                 aws_access_key_id=options["key"],
                 aws_secret_access_key=options["secret"]).create_bucket(Bucket="bench")
    fs = fsspec.filesystem("s3", **options)
    url = "s3://bench/slide"
    for path in sorted(Path(env.slide).iterdir()):
        for attempt in range(3):  # moto's server loses a multipart upload now and then under load
            try:
                fs.put_file(str(path), f"{url}/{path.name}")
                break
            except FileNotFoundError:
                if attempt == 2:
                    raise
    return url, options


def fetch_and_hash(url: str, options: dict[str, Any]) -> dict[str, str]:
    import fsspec

    fs = fsspec.filesystem("s3", **options)
    return {path: hashlib.sha256(fs.cat_file(path)).hexdigest() for path in sorted(fs.find(url))}


def with_server_cpu(run: Any, inspect: Any = None) -> Op:
    """An Op of ``run`` whose first result also reports the server's CPU seconds during that repetition."""
    spent: list[float] = []

    def timed(i: int) -> Any:
        before = server_cpu_seconds()
        result = run(i)
        spent.append(server_cpu_seconds() - before)
        return result

    def facts(result: Any) -> dict[str, Any]:
        return {**(inspect(result) if inspect else {}), "server_cpu_s": spent[0]}

    return Op(timed, inspect=facts)


def read_ours(env: Env, extra: dict[str, Any] | None = None) -> Op:
    import cellspec_sc as cs

    url, options = uploaded_slide(env)
    options = {**options, **(extra or {})}
    return with_server_cpu(lambda i: cs.read(url, storage_options=options), describe_object)


def read_baseline(env: Env, extra: dict[str, Any] | None = None) -> Op:
    url, options = uploaded_slide(env)
    options = {**options, **(extra or {})}
    return with_server_cpu(lambda i: fetch_and_hash(url, options))


def read_ours_one_get(env: Env) -> Op:
    return read_ours(env, ONE_GET)


def read_baseline_one_get(env: Env) -> Op:
    return read_baseline(env, ONE_GET)


def info_ours(env: Env) -> Op:
    from cellspec_sc.io import Transfer, read_header

    url, options = uploaded_slide(env)

    def run(i: int) -> Transfer:
        transfer = Transfer()
        read_header(url, options, transfer)
        return transfer

    def inspect(transfer: Transfer) -> dict[str, Any]:
        return {"transferred_bytes": transfer.bytes, "directory_bytes": transfer.total,
                "transferred_share": transfer.bytes / transfer.total}

    return with_server_cpu(run, inspect)


CASES = [
    Case("read from S3 (local server)", "s3fs fetch + SHA-256 of the same objects (same ranged GETs)", read_ours,
         read_baseline, "time <= 1.3x", lambda row: row["ratio"] <= 1.3, requires=("s3fs", "moto")),
    Case("read from S3, one GET per object (local server)", "s3fs fetch + SHA-256, one GET per object",
         read_ours_one_get, read_baseline_one_get, "information: the client's work without moto's cost per "
         "ranged GET", requires=("s3fs", "moto")),
    Case("info from S3 (local server)", "s3fs fetch + SHA-256 of the same objects", info_ours, read_baseline,
         "transfers < 1% of the directory", lambda row: row.get("transferred_share", 1.0) < 0.01,
         requires=("s3fs", "moto")),
]
