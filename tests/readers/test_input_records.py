"""Provenance's record of every input names the size and SHA-256 of the same bytes: those the reader read, also
when the file grows after the read and before the record is made (a size looked up later would describe other
bytes than the digest)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import cellspec_sc as cs
import cellspec_sc.readers._pipeline as pipeline
import cellspec_sc.readers._table as table
from cellspec_sc.readers.halo._adapter import HaloAdapter
from cellspec_sc.readers.steinbock._adapter import SteinbockAdapter
from tool_layouts import HALO_HEAD, HALO_ROWS, write_halo, write_mcmicro, write_steinbock


def appended_after_the_parse(monkeypatch, adapter: type, files: list[Path]) -> dict[Path, bytes]:
    """Have ``adapter.tables`` (which runs once every file was read) first append a row to each of ``files``;
    their bytes before that."""
    before = {path: path.read_bytes() for path in files}
    tables = adapter.tables

    def grow_then_tables(self, *args, **kwargs):
        for path in files:
            with open(path, "ab") as handle:
                handle.write(b"appended later\n")
        return tables(self, *args, **kwargs)
    monkeypatch.setattr(adapter, "tables", grow_then_tables)
    return before


def assert_records_describe(record: dict, data: bytes) -> None:
    assert record["bytes"] == len(data)
    assert record["sha256"] == hashlib.sha256(data).hexdigest()


def halo_in_pieces(folder: Path) -> Path:
    """A HALO table of more than a megabyte, which is read in pieces and hashed after its parse."""
    path = folder / "Total_Object_Results.csv"
    first = HALO_ROWS[0]
    rows = [",".join(HALO_HEAD)] + [",".join([*first[:3], str(i), *first[4:]]) for i in range(12_000)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert path.stat().st_size > table.SMALL_TABLE_BYTES
    return path


@pytest.mark.parametrize("write", [write_halo, halo_in_pieces], ids=["one piece", "in pieces"])
def test_an_export_grown_after_its_read_is_recorded_as_read(tmp_path, monkeypatch, write):
    path = write(tmp_path)
    before = appended_after_the_parse(monkeypatch, HaloAdapter, [path])
    x = cs.read_halo(path, pixel_size=0.5)
    assert path.stat().st_size > len(before[path])
    assert_records_describe(x.provenance["inputs"][0], before[path])


def test_a_gzip_export_is_recorded_as_its_compressed_bytes_were_read(tmp_path, monkeypatch):
    stored = write_mcmicro(tmp_path)
    before = {stored: stored.read_bytes()}
    decompressed = pipeline.decompressed

    def decompressed_then_grown(path, folder):
        out = decompressed(path, folder)
        with open(path, "ab") as handle:
            handle.write(b"appended later")
        return out
    monkeypatch.setattr(pipeline, "decompressed", decompressed_then_grown)
    x = cs.read_mcmicro(stored, pixel_size=0.65)
    record = x.provenance["inputs"][0]
    assert record["path_basename"] == stored.name
    assert_records_describe(record, before[stored])


@pytest.mark.parametrize("grown", ["panel.csv", "images.csv", "intensities/P1_001.csv", "regionprops/P1_001.csv"])
def test_a_folder_file_grown_after_its_read_is_recorded_as_read(tmp_path, monkeypatch, grown):
    folder = write_steinbock(tmp_path)
    before = appended_after_the_parse(monkeypatch, SteinbockAdapter, [folder / grown])
    x = cs.read_steinbock(folder, neighbors_method="mask_touching")
    records = {r["path_basename"]: r for r in x.provenance["inputs"]}
    assert_records_describe(records[grown], before[folder / grown])
