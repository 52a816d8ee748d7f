"""Gzipped TSV bombs (valid rows, or nothing but newlines, repeated to gigabytes) are refused by the reader while
its memory stays within a bound tied to the file's size (max_inflation times its compressed size): the read runs in
a child process whose address space is limited to 1.5 GiB over what it used before reading, and its resident memory
may grow by at most that bound (and a little slack)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

import cellspec_sc as cs
from dirhelpers import reseal

HEADROOM = 1536 << 20  # bytes of address space the read may add to the child's baseline
SLACK = 128 << 20  # resident memory a read may use beyond the file's bound (libraries' working buffers)
INFLATED = 4 << 30  # what each bomb inflates to

CHILD = r"""
import json, os, resource, sys
import cellspec_sc as cs

def address_space():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))

cs.read(sys.argv[3])  # the baseline holds the libraries a read loads (a small directory of the same format)
resident = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
limit = address_space() + int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    cs.read(sys.argv[1])
    print(json.dumps({"outcome": "read"}))
except cs.CellspecError as err:
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - resident
    print(json.dumps({"outcome": "refused", "type": type(err).__name__, "message": str(err), "grown": grown}))
except MemoryError:
    print(json.dumps({"outcome": "memory"}))
sys.stdout.flush()
# the verdict is in; Arrow's idle threads may not end cleanly at exit under an address-space limit
os._exit(0)
"""


def gzip_member(data: bytes) -> bytes:
    """One gzip member holding ``data`` (a gzip file may be several members one after another)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    return compressor.compress(data) + compressor.flush()


def write_bomb(directory: Path, line: bytes) -> int:
    """Replace cells.tsv.gz with its header and then ``line`` repeated to INFLATED bytes; the compressed
    block is made once and written again and again, so this takes well under a second. Returns the size."""
    path = directory / "cells.tsv.gz"
    with gzip.open(path, "rb") as f:
        header = f.read().split(b"\n")[0] + b"\n"
    block = line * ((16 << 20) // len(line))
    member = gzip_member(block)
    with path.open("wb") as out:
        out.write(gzip_member(header))
        for _ in range(INFLATED // len(block)):
            out.write(member)
    reseal(directory)
    return path.stat().st_size


@pytest.fixture(scope="module")
def tsv_directory(tmp_path_factory):
    x = cs.example(n_cells=60, n_features=6)
    return cs.write(x, tmp_path_factory.mktemp("tsv") / "base", format="tsv")


def first_row(directory: Path) -> bytes:
    with gzip.open(directory / "cells.tsv.gz", "rb") as f:
        return f.read().split(b"\n")[1] + b"\n"


def long_row(row: bytes) -> bytes:
    """``row`` with a 4,000-character classification: repeated, it compresses about 1,000 to 1."""
    fields = row.split(b"\t")
    fields[6] = b"T" * 4000
    return b"\t".join(fields)


def read_in_child(directory: Path, small: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(directory), str(HEADROOM), str(small)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kind", ["valid rows", "newlines"])
def test_gzip_bomb_is_refused_within_bounded_memory(kind, tsv_directory, tmp_path):
    import shutil

    directory = Path(shutil.copytree(tsv_directory, tmp_path / "bomb"))
    line = long_row(first_row(directory)) if kind == "valid rows" else b"\n"
    size = write_bomb(directory, line)
    limit = max(64 << 20, 100 * size)
    assert limit < INFLATED  # the bomb inflates beyond the default bound
    verdict = read_in_child(directory, tsv_directory)
    assert verdict["outcome"] == "refused", verdict
    assert "cells.tsv.gz" in verdict["message"]
    assert verdict["grown"] <= limit + SLACK, verdict["grown"]
    if kind == "newlines":  # empty rows are refused as soon as they are converted, before the size bound
        assert verdict["type"] == "UndecodableData", verdict
        assert "CSV conversion error to double: invalid value ''" in verdict["message"]
        return
    assert verdict["type"] == "FileTooLarge", verdict
    assert f"to more than {limit} bytes" in verdict["message"]
    assert "(over 100 times its compressed size)" in verdict["message"]
