"""Bytes of an .h5ad file and of the metadata of an AnnData .zarr store flipped in turn, on disk: each damaged file
is either refused with a CellspecError or read back to the very object written, never read as something else and
never a raw error. Every byte of the record's metadata files is flipped where that stays within the time bound; the
rest is a fixed, evenly spread sample."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import cellspec_sc as cs
from cellspec_sc.bridges.anndata import read_anndata_zarr, read_h5ad, write_anndata_zarr, write_h5ad
from cellspec_sc.errors import CellspecError

MAX_FLIPS_PER_STORE = 240  # keeps each sweep well under half a minute
METADATA_FILES = ("zarr.json", ".zattrs", ".zarray", ".zgroup")


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    x = cs.example(n_cells=6, n_samples=1, markers=["CD3e"])
    root = tmp_path_factory.mktemp("sweep")
    return x, write_h5ad(x, root / "x.h5ad"), write_anndata_zarr(x, root / "x.zarr")


def spread(n: int, k: int) -> list[int]:
    """At most ``k`` offsets spread evenly over ``range(n)``."""
    return sorted(set(np.linspace(0, n - 1, num=min(n, k), dtype=int).tolist()))


def judged(read, path: Path, x) -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            back = read(path)
    except CellspecError:
        return "refused"
    return "same" if back.equals(x) else "different"


def flip_at(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_flipped_bytes_of_an_h5ad_file_are_refused_or_harmless(written, tmp_path):
    x, h5ad, _ = written
    size = h5ad.stat().st_size
    found = {}
    for offset in spread(size, MAX_FLIPS_PER_STORE):
        damaged = tmp_path / "d.h5ad"
        shutil.copyfile(h5ad, damaged)
        flip_at(damaged, offset)
        found[offset] = judged(read_h5ad, damaged, x)
    assert not [o for o, v in found.items() if v == "different"], found
    assert "refused" in found.values() and "same" in found.values()


def metadata_bytes(store: Path) -> list[tuple[Path, int]]:
    """(file, offset) of every byte of the store's metadata files, the record's (uns/cellspec) first."""
    files = sorted((p for p in store.rglob("*") if p.name in METADATA_FILES),
                   key=lambda p: ("uns/cellspec" not in p.as_posix(), p.as_posix()))
    return [(p.relative_to(store), i) for p in files for i in range(p.stat().st_size)]


def test_flipped_bytes_of_anndata_zarr_metadata_are_refused_or_harmless(written, tmp_path):
    x, _, store = written
    every = metadata_bytes(store)
    found = {}
    for k in spread(len(every), MAX_FLIPS_PER_STORE):
        file, offset = every[k]
        damaged = tmp_path / f"d{k}.zarr"
        shutil.copytree(store, damaged)
        flip_at(damaged / file, offset)
        try:
            found[(str(file), offset)] = judged(read_anndata_zarr, damaged, x)
        finally:
            shutil.rmtree(damaged)
    assert not [o for o, v in found.items() if v == "different"], found
    assert "refused" in found.values()
