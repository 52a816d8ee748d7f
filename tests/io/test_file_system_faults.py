"""Faults of the file system while writing: disk full, read-only, too many open files.

Each becomes :class:`cellspec_sc.errors.WriteFailed` naming the target (and the file when the system
names it), leaves no staging behind and the old content intact. Disk full is a 1 MiB tmpfs and
read-only a read-only bind mount, both mounted here when the machine allows it (root in a container
that may mount); otherwise the test is skipped and says why.
"""

from __future__ import annotations

import errno
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import cellspec_sc as cs
from cellspec_sc.bridges.anndata import read_h5ad, write_h5ad
from cellspec_sc.errors import WriteFailed


def _mount(args: list[str]) -> str | None:
    result = subprocess.run(["mount", *args], capture_output=True, text=True)
    return None if result.returncode == 0 else (result.stderr.strip() or f"mount exited {result.returncode}")


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.fixture
def tiny_disk(tmp_path):
    """A 1 MiB tmpfs."""
    where = tmp_path / "tiny"
    where.mkdir()
    problem = _mount(["-t", "tmpfs", "-o", "size=1m", f"cellspec-test-{uuid.uuid4().hex[:6]}", str(where)])
    if problem:
        pytest.skip(f"cannot mount a small tmpfs here ({problem}); disk-full behaviour is not tested")
    yield where
    _umount(where)


@pytest.fixture
def read_only(tmp_path):
    """(writable folder, the same folder mounted read-only)."""
    source, view = tmp_path / "rw", tmp_path / "ro"
    source.mkdir()
    view.mkdir()
    problem = _mount(["--bind", str(source), str(view)]) or _mount(["-o", "remount,ro,bind", str(view)])
    if problem:
        _umount(view)
        pytest.skip(f"cannot make a read-only bind mount here ({problem}); read-only behaviour is not tested")
    yield source, view
    _umount(view)


def staging_left(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".cellspec-" in p.name)


BIG = {"n_cells": 20_000, "n_features": 20}  # several MiB in any format


@pytest.mark.parametrize("fmt", ["parquet", "tsv"])
def test_disk_full_directory(tiny_disk, fmt):
    small = cs.example(n_cells=10)
    target = cs.write(small, tiny_disk / "run")
    with pytest.raises(WriteFailed) as caught:
        cs.write(cs.example(**BIG), target, format=fmt, overwrite=True)
    assert caught.value.errno == errno.ENOSPC and caught.value.target == str(target)
    assert "No space left" in str(caught.value) and str(target) in str(caught.value)
    assert cs.read(target).equals(small) and staging_left(tiny_disk) == []
    with pytest.raises(WriteFailed):
        cs.write(cs.example(**BIG), tiny_disk / "new", format=fmt)
    assert not (tiny_disk / "new").exists() and staging_left(tiny_disk) == []


def test_disk_full_h5ad(tiny_disk):
    small = cs.example(n_cells=10)
    target = write_h5ad(small, tiny_disk / "x.h5ad")
    with pytest.raises(WriteFailed) as caught:
        write_h5ad(cs.example(**BIG), target, overwrite=True)
    assert str(target) in str(caught.value)
    assert read_h5ad(target).equals(small) and staging_left(tiny_disk) == []


def test_read_only_file_system(read_only):
    source, view = read_only
    x = cs.example(n_cells=10)
    cs.write(x, source / "run")
    assert cs.read(view / "run").equals(x)  # reading works
    for write in (lambda: cs.write(x, view / "run", overwrite=True), lambda: cs.write(x, view / "new"),
                  lambda: write_h5ad(x, view / "x.h5ad")):
        with pytest.raises(WriteFailed) as caught:
            write()
        assert caught.value.errno == errno.EROFS and str(view) in str(caught.value)
    assert cs.read(view / "run").equals(x) and staging_left(source) == []


EMFILE_CHILD = """
import os, resource, sys, tempfile, pathlib
import cellspec_sc as cs
from cellspec_sc.errors import WriteFailed
x = cs.example(n_cells=50)
target = pathlib.Path(sys.argv[1]) / "run"
cs.write(x, pathlib.Path(tempfile.mkdtemp()) / "warm")  # load every module a write needs
# no descriptor left (listing /proc/self/fd holds one of its own while it counts)
resource.setrlimit(resource.RLIMIT_NOFILE,
                   (len(os.listdir("/proc/self/fd")) - 1, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
try:
    cs.write(x, target)
except WriteFailed as err:
    print("WriteFailed", err.errno, err)
"""


def test_too_many_open_files(tmp_path):
    out = subprocess.run([sys.executable, "-c", EMFILE_CHILD, str(tmp_path)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"WriteFailed {errno.EMFILE} "), out.stdout
    assert str(tmp_path / "run") in out.stdout
    assert not (tmp_path / "run").exists() and staging_left(tmp_path) == []
