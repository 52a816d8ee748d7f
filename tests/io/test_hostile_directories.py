"""Hostile directories: every one is refused with a CellspecError or read correctly; none hangs or eats memory.

Each case is judged by a worker process with an address-space limit (``RLIMIT_AS``) and a per-case
alarm, running ``cs.read`` and ``cellspec validate`` (in-process ``main``); the parent gives up on a
case after a second, longer timeout and starts a new worker. The limit is the address space the worker
reached reading and validating the intact directories first, plus :data:`GROWTH`: what the libraries
reserve up front (allocator arenas, thread stacks: about 1.8 GB for a 60-cell directory, little of it
resident) is then in place, and a hostile case may add at most GROWTH to it. Fixed cases cover what was
seen to fail (FIFOs, huge DONE/manifest/cellspec.json, gzip bombs, hostile JSON); hypothesis mutates directories
at random (truncate, flip bytes, swap files, change JSON types, resealed or not).
"""

from __future__ import annotations

import gzip
import json
import os
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cellspec_sc as cs
from dirhelpers import reseal

GROWTH = 256 << 20  # bytes of address space a case may add to what reading intact directories took
CASE_SECONDS = 20  # alarm inside the worker
PARENT_SECONDS = 60  # the parent's own limit, should the alarm not fire
WARM_ROUNDS = 3  # reads and validations of each intact directory before the limit is set
# glibc gives each thread that allocates an arena of its own, up to eight per CPU, each reserving 64 MB of address
# space whenever a new thread first allocates: two arenas keep that from growing after the warm-up
WORKER_ENV = {"MALLOC_ARENA_MAX": "2"}

# the limits go in as the worker's first line: the code below has braces of its own, so no str.format
WORKER = f"GROWTH, CASE_SECONDS, WARM_ROUNDS = {GROWTH}, {CASE_SECONDS}, {WARM_ROUNDS}\n" + r"""
import contextlib, io, json, resource, signal, sys
import cellspec_sc as cs
from cellspec_sc.cli.main import main


class Timeout(BaseException):
    pass


def on_alarm(*_):
    raise Timeout()


signal.signal(signal.SIGALRM, on_alarm)


def judged(call):
    try:
        return "ok", call()
    except cs.CellspecError as err:
        return "refused", type(err).__name__
    except Timeout:
        return "timeout", None
    except MemoryError:
        return "memory", None
    except BaseException as err:
        return "crash", f"{type(err).__name__}: {err}"[:500]


def validate_cli(path):
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["validate", path])
    return code, err.getvalue()


def address_space_peak():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) << 10 for line in status if line.startswith("VmPeak:"))


for path in json.loads(sys.stdin.readline()) * WARM_ROUNDS:
    verdicts = judged(lambda: cs.read(path).n_cells), judged(lambda: validate_cli(path))
    if verdicts[0][0] != "ok" or verdicts[1][0] != "ok":
        sys.exit(print(json.dumps({"intact": path, "verdicts": verdicts}), flush=True))
limit = address_space_peak() + GROWTH
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
print("ready", flush=True)
for line in sys.stdin:
    path = json.loads(line)
    signal.alarm(CASE_SECONDS)
    read, detail = judged(lambda: cs.read(path).n_cells)
    cli, cli_detail = judged(lambda: validate_cli(path))
    signal.alarm(0)
    print(json.dumps({"read": read, "read_detail": detail, "cli": cli, "cli_detail": cli_detail}), flush=True)
"""


class Judge:
    """A worker process that reads and validates directories under limits, once it has read ``intact`` ones."""

    def __init__(self, intact: list[Path]):
        self.process = None
        self.intact = [str(path) for path in intact]

    def start(self):
        self.process = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env={**os.environ, **WORKER_ENV})
        self.process.stdin.write(json.dumps(self.intact) + "\n")
        self.process.stdin.flush()
        started = self.process.stdout.readline().strip()
        assert started == "ready", f"the worker could not read an intact directory: {started}"

    def stop(self):
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def __call__(self, path: Path) -> dict:
        if self.process is None:
            self.start()
        self.process.stdin.write(json.dumps(str(path)) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], PARENT_SECONDS)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            self.stop()
            return {"read": "timeout" if not ready else "died", "cli": "unknown"}
        return json.loads(line)


@pytest.fixture(scope="module")
def judge(bases):
    j = Judge(list(bases.values()))
    yield j
    j.stop()


def assert_refused_or_read(verdict: dict, case: str) -> None:
    assert verdict["read"] in ("ok", "refused"), (case, verdict)
    assert verdict["cli"] == "ok", (case, verdict)
    code, err = verdict["cli_detail"]
    assert code in (0, 1, 2), (case, verdict)
    if code == 2:
        assert err.startswith("cellspec: error: ") and err.count("\n") == 1, (case, err)  # one line, no traceback


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    root = tmp_path_factory.mktemp("bases")
    x = cs.example(n_cells=60, n_features=6, adjacency=True)
    return {fmt: cs.write(x, root / fmt, format=fmt) for fmt in ("parquet", "tsv")}


def copy_of(base: Path, where: Path) -> Path:
    target = where / f"case-{len(list(where.iterdir()))}"
    shutil.copytree(base, target, symlinks=True)
    return target


# -- fixed cases: what was seen to hang, eat memory or raise raw exceptions ---------------------
def fifo_at(name):
    def make(d: Path):
        (d / name).unlink()
        os.mkfifo(d / name)
    return make


def sparse(name, size):
    def make(d: Path):
        with open(d / name, "r+b") as f:
            f.truncate(size)
    return make


def json_text(text, resealed=True):
    def make(d: Path):
        (d / "cellspec.json").write_text(text, encoding="utf-8")
        if resealed:
            reseal(d)
    return make


def json_edit(change):
    def make(d: Path):
        doc = json.loads((d / "cellspec.json").read_text("utf-8"))
        change(doc)
        (d / "cellspec.json").write_text(json.dumps(doc), encoding="utf-8")
        reseal(d)
    return make


def symlink(name, to):
    def make(d: Path):
        (d / name).unlink()
        (d / name).symlink_to(to)
    return make


def gzip_bomb(d: Path):
    with gzip.open(d / "cells.tsv.gz", "rb") as f:
        header, first = f.read().split(b"\n")[:2]
    with gzip.open(d / "cells.tsv.gz", "wb", compresslevel=9) as f:
        f.write(header + b"\n")
        row = first + b"\n"
        chunk = row * max(1, (1 << 20) // len(row))
        for _ in range(80):  # 80 MiB of valid-looking rows
            f.write(chunk)
    reseal(d)


def newline_manifest(d: Path):
    with open(d / "MANIFEST.sha256", "ab") as f:
        f.truncate(8 << 30)  # 8 GiB (sparse): read whole, this alone passed the memory limit


def provenance(field, value):
    return json_edit(lambda doc: doc["provenance"].__setitem__(field, value))


def counts(value):
    return json_edit(lambda doc: doc["provenance"]["counts"].__setitem__("rows_read", value))


FIXED = {
    "DONE is a FIFO": ("parquet", fifo_at("DONE")),
    "MANIFEST is a FIFO": ("parquet", fifo_at("MANIFEST.sha256")),
    "cellspec.json is a FIFO": ("parquet", fifo_at("cellspec.json")),
    "cells.parquet is a FIFO": ("parquet", fifo_at("cells.parquet")),
    "DONE is a directory": ("parquet", lambda d: ((d / "DONE").unlink(), (d / "DONE").mkdir())),
    "DONE of 8 GiB": ("parquet", sparse("DONE", 8 << 30)),
    "MANIFEST of 8 GiB": ("parquet", newline_manifest),
    "cellspec.json of 300 MiB": ("parquet", sparse("cellspec.json", 300 << 20)),
    "DONE links to /dev/zero": ("parquet", symlink("DONE", "/dev/zero")),
    "cells.parquet links to /dev/zero": ("parquet", symlink("cells.parquet", "/dev/zero")),
    "MANIFEST links outside": ("parquet", symlink("MANIFEST.sha256", "/etc/hostname")),
    "gzip bomb cells.tsv.gz": ("tsv", gzip_bomb),
    "cellspec.json nested 100000 deep": ("parquet", json_text('{"x": ' + "[" * 100_000 + "]" * 100_000 + "}")),
    "cellspec.json integer of 5000 digits": ("parquet",
                                             json_text('{"spec_version": "1.0.0", "x": ' + "9" * 5000 + "}")),
    "cellspec.json NaN": ("parquet", json_edit(lambda doc: doc.__setitem__("extra", float("nan")))),
    "cellspec.json Infinity": ("parquet", json_edit(lambda doc: doc.__setitem__("extra", float("inf")))),
    "cellspec.json duplicate spec_version": ("parquet", lambda d: json_text(
        '{"spec_version": "9.0.0", ' + (d / "cellspec.json").read_text("utf-8").lstrip()[1:])(d)),
    "provenance.counts is a string": ("parquet", provenance("counts", "many")),
    "provenance.counts is null": ("parquet", provenance("counts", None)),
    "provenance.counts.rows_read is text": ("parquet", counts("12")),
    "provenance.created_utc is 'x'": ("parquet", provenance("created_utc", "x")),
    "provenance.inputs holds a number": ("parquet", provenance("inputs", [5])),
    "provenance.history holds text": ("parquet", provenance("history", ["renamed"])),
}

MUST_BE_REFUSED = set(FIXED)  # none of these is a directory the format allows


@pytest.mark.parametrize("case", sorted(FIXED))
def test_fixed_hostile_case_is_refused(case, judge, bases, tmp_path):
    fmt, make = FIXED[case]
    d = copy_of(bases[fmt], tmp_path)
    make(d)
    verdict = judge(d)
    assert_refused_or_read(verdict, case)
    assert verdict["read"] == "refused", (case, verdict)


# -- random damage (hypothesis) ------------------------------------------------------------------
FILES = ["DONE", "MANIFEST.sha256", "cellspec.json", "cells", "adjacency"]
JSON_VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                                     st.text(max_size=5)),
                           lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                           max_leaves=6)


def file_of(d: Path, name: str) -> Path:
    if name in ("cells", "adjacency"):
        return next(d.glob(f"{name}.*"))
    return d / name


def damage(d: Path, data) -> str:
    op = data.draw(st.sampled_from(["truncate", "flip", "swap", "retype"]), label="op")
    name = data.draw(st.sampled_from(FILES), label="file")
    path = file_of(d, name)
    touched = {name}
    raw = path.read_bytes()
    if op == "truncate":
        path.write_bytes(raw[:data.draw(st.integers(0, max(0, len(raw) - 1)), label="keep")])
    elif op == "flip":
        at = data.draw(st.integers(0, len(raw) - 1), label="at")
        path.write_bytes(raw[:at] + bytes([raw[at] ^ data.draw(st.integers(1, 255), label="xor")]) + raw[at + 1:])
    elif op == "swap":
        other_name = data.draw(st.sampled_from([f for f in FILES if f != name]), label="other")
        touched.add(other_name)
        other = file_of(d, other_name)
        a, b = path.read_bytes(), other.read_bytes()
        path.write_bytes(b)
        other.write_bytes(a)
    else:
        doc = json.loads((d / "cellspec.json").read_text("utf-8"))
        key = data.draw(st.sampled_from(sorted(doc)), label="key")
        if isinstance(doc[key], dict) and doc[key] and data.draw(st.booleans(), label="inner"):
            inner = data.draw(st.sampled_from(sorted(doc[key])), label="inner key")
            doc[key][inner] = data.draw(JSON_VALUES, label="value")
        else:
            doc[key] = data.draw(JSON_VALUES, label="value")
        (d / "cellspec.json").write_text(json.dumps(doc), encoding="utf-8")
        name = "cellspec.json"
    if data.draw(st.booleans(), label="reseal") and not touched & {"DONE", "MANIFEST.sha256"}:
        reseal(d)  # as a careless tool would: the damage then reaches the parsers
    return f"{op} {name}"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(data=st.data())
def test_random_damage_is_refused_or_read(data, judge, bases, tmp_path):
    fmt = data.draw(st.sampled_from(sorted(bases)), label="format")
    d = copy_of(bases[fmt], tmp_path)
    case = damage(d, data)
    assert_refused_or_read(judge(d), case)
