"""A damaged string chunk in an AnnData or SpatialData zarr store is refused before it is decoded.

numcodecs allocates as many strings as a chunk's header claims; a byte sweep over an AnnData store found one flip
(in ``obs/image_id/categories``) that claimed 2**31 strings and had the process killed for its memory. These
stores are real ``write_anndata_zarr``/``write_spatialdata`` output with that header changed to claim 50 million
strings (400 MB of object array before the fix: enough to see, not enough to hurt the machine).
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import zarr

import cellspec_sc as cs
from cellspec_sc.bridges._zarr import bounded_string_chunks
from cellspec_sc.bridges.anndata import write_anndata_zarr
from cellspec_sc.bridges.spatialdata import read_spatialdata, write_spatialdata
from cellspec_sc.cli._sources import load
from cellspec_sc.errors import CellspecError

CLAIMED = 50_000_000


def claim_strings(chunk: Path, first: str, count: int) -> None:
    """Make the two-string chunk whose first value is ``first`` claim ``count`` strings in its header."""
    data = chunk.read_bytes()
    value = first.encode()
    header = (2).to_bytes(4, "little") + len(value).to_bytes(4, "little") + value
    assert data.count(header) == 1, f"{chunk} is no longer stored uncompressed: zarr or numcodecs changed"
    at = data.index(header)
    chunk.write_bytes(data[:at] + count.to_bytes(4, "little") + data[at + 4:])


def refusal_and_peak(read, path: Path) -> tuple[CellspecError, int]:
    tracemalloc.start()
    try:
        with pytest.raises(CellspecError) as caught:
            read(path)
        return caught.value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("kind", ["anndata", "spatialdata"])
def test_a_string_chunk_claiming_millions_of_values_is_refused_without_allocating_them(kind, tmp_path):
    x = cs.example()
    first_image = str(x.images["image_id"].iloc[0])
    if kind == "anndata":
        store, read = write_anndata_zarr(x, tmp_path / "x.zarr"), load
        chunk = store / "obs" / "image_id" / "categories" / "c" / "0"
    else:
        store, read = write_spatialdata(x, tmp_path / "x.zarr"), read_spatialdata
        chunk = store / "tables" / "table" / "obs" / "image_id" / "categories" / "c" / "0"
    assert read(store).equals(x)
    claim_strings(chunk, first_image, CLAIMED)
    error, peak = refusal_and_peak(read, store)
    message = str(error)
    assert str(store) in message
    assert f"says it holds {CLAIMED:,} values where its array's chunk holds 2" in message
    assert peak < 100 << 20, f"{peak / 2**20:.0f} MiB traced while refusing the chunk"


def test_string_arrays_of_every_layout_still_read_inside_the_block(tmp_path):
    """Partial last chunks, shards and byte strings count their values as the check expects."""
    texts = zarr.create_array(tmp_path / "s.zarr" / "t", shape=(5,), chunks=(2,), dtype=str)
    texts[:] = np.array(["a", "bb", "", "d", "é"])
    sharded = zarr.create_array(tmp_path / "s.zarr" / "u", shape=(5, 3), chunks=(2, 2), shards=(4, 2), dtype=str)
    sharded[:] = np.array([["x", "yy", "zzz"]] * 5)
    with bounded_string_chunks():
        assert list(zarr.open_array(tmp_path / "s.zarr" / "t")[:]) == ["a", "bb", "", "d", "é"]
        assert zarr.open_array(tmp_path / "s.zarr" / "u")[:].tolist() == [["x", "yy", "zzz"]] * 5
    assert zarr.config.get("codecs.vlen-utf8") == "zarr.codecs.vlen_utf8.VLenUTF8Codec"  # restored after


def damage_format2_chunk(chunk: Path, first: str, count: int) -> None:
    """Make the format 2 string chunk whose first value is ``first`` claim ``count`` values (decompressed with
    the array's own compressor, changed, compressed again)."""
    import json

    import numcodecs

    meta = json.loads((chunk.parent / ".zarray").read_text())
    assert meta["zarr_format"] == 2 and [f["id"] for f in meta["filters"]] == ["vlen-utf8"]
    compressor = numcodecs.get_codec(meta["compressor"]) if meta["compressor"] else None
    raw = bytes(compressor.decode(chunk.read_bytes())) if compressor else chunk.read_bytes()
    assert raw[8:8 + len(first.encode())] == first.encode() and int.from_bytes(raw[:4], "little") == 2
    raw = count.to_bytes(4, "little") + raw[4:]
    chunk.write_bytes(bytes(compressor.encode(raw)) if compressor else raw)


def test_a_format2_string_chunk_claiming_millions_of_values_is_refused_without_allocating_them(tmp_path):
    """AnnData stores written in zarr format 2 (anndata before 0.12, or ``zarr_write_format=2``) use numcodecs'
    VLenUTF8 as a filter, which is not told the chunk's shape: the count is checked against the chunk's bytes."""
    import anndata as ad
    from numcodecs.registry import codec_registry

    x = cs.example()
    first_image = str(x.images["image_id"].iloc[0])
    adata = cs.to_anndata(x)
    store = tmp_path / "x.zarr"
    with ad.settings.override(zarr_write_format=2):
        adata.write_zarr(store)
    assert load(store).equals(x)
    damage_format2_chunk(store / "obs" / "image_id" / "categories" / "0", first_image, CLAIMED)
    original = codec_registry["vlen-utf8"]
    error, peak = refusal_and_peak(load, store)
    message = str(error)
    assert str(store) in message
    assert f"says it holds {CLAIMED:,} values where its" in message and "hold at most" in message
    assert peak < 100 << 20, f"{peak / 2**20:.0f} MiB traced while refusing the chunk"
    assert codec_registry["vlen-utf8"] is original  # numcodecs' registry as it was


def test_nested_and_concurrent_blocks_keep_the_check_until_the_last_one_ends():
    import threading

    from numcodecs.registry import codec_registry

    original = codec_registry["vlen-utf8"]
    inside, release = threading.Event(), threading.Event()

    def other_reader() -> None:
        with bounded_string_chunks():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other_reader)
    with bounded_string_chunks():
        thread.start()
        assert inside.wait(10)
        with bounded_string_chunks():
            assert codec_registry["vlen-utf8"] is not original
        assert codec_registry["vlen-utf8"] is not original  # the inner block ended, the outer still reads
    assert codec_registry["vlen-utf8"] is not original  # this thread's block ended, the other thread still reads
    release.set()
    thread.join()
    assert codec_registry["vlen-utf8"] is original
