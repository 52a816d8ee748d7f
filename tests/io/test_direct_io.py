"""Files written around the page cache (O_DIRECT): every byte lands in order at block boundaries and in the
unaligned tail, hashed on the way; only local disk file systems are chosen for it."""

from __future__ import annotations

import hashlib
import mmap
import os
from pathlib import Path

import pytest

from cellspec_sc.io import BLOCK, DirectFile, HashingFile, suits_direct_io
from cellspec_sc.io._direct import filesystem_of, page_aligned

SIZES = [0, 1, 4095, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK + 4097]


def _pieces(size: int, seed: int) -> list[bytes]:
    """``size`` random bytes cut in pieces of 1 byte to 3 MB, as a Parquet writer hands them over."""
    data = os.urandom(size)
    cuts, at, step = [], 0, seed
    while at < size:
        step = (step * 7919 + 13) % (3 << 20) + 1
        cuts.append(data[at:at + step])
        at += step
    return cuts


@pytest.mark.parametrize("size", SIZES)
def test_every_byte_lands_in_order_around_the_page_cache(tmp_path, size):
    path = tmp_path / "f.bin"
    pieces = _pieces(size, size)
    with DirectFile(path) as out:
        assert out.direct == suits_direct_io(tmp_path)
        assert all(out.write(p) == len(p) for p in pieces)
    assert out.closed and path.read_bytes() == b"".join(pieces)


def test_hashing_file_digest_equals_the_file_read_back_direct_or_not(tmp_path):
    pieces = _pieces(BLOCK * 2 + 12345, 3)
    for direct in (True, False):
        path = tmp_path / f"{direct}.bin"
        with HashingFile(path, direct=direct) as out:
            for p in pieces:
                out.write(memoryview(p))
        assert out.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()
        assert path.read_bytes() == b"".join(pieces)
    with HashingFile(tmp_path / "open.bin") as out, pytest.raises(ValueError, match="close the file"):
        out.hexdigest()


def test_tmpfs_is_not_chosen_for_o_direct_and_a_file_there_is_whole_either_way():
    shm = Path("/dev/shm")
    if filesystem_of(shm) != "tmpfs" or not os.access(shm, os.W_OK):
        pytest.skip("no writable tmpfs at /dev/shm here: that O_DIRECT is not chosen on tmpfs, and that a file written "
                    "there is whole, are not tested")
    path = shm / f"cellspec-direct-test-{os.getpid()}"
    try:
        assert not suits_direct_io(shm)  # memory already: nothing to go around
        pieces = _pieces(BLOCK + 77, 5)
        with DirectFile(path) as out:  # recent kernels accept O_DIRECT on tmpfs, older ones refuse it
            for p in pieces:
                out.write(p)
        assert path.read_bytes() == b"".join(pieces)
    finally:
        path.unlink(missing_ok=True)


def test_the_file_system_of_a_path_is_its_deepest_mount(tmp_path):
    assert filesystem_of("/proc/self") == "proc"
    assert filesystem_of(tmp_path) is not None
    assert suits_direct_io("/proc") is False


def test_a_file_written_after_a_longer_one_holds_only_its_own_bytes(tmp_path):
    """The blocks of a closed file are handed to the next file: nothing of the first may reach the second."""
    long, short = os.urandom(3 * BLOCK + 999), os.urandom(BLOCK + 5)
    for name, data in (("long.bin", long), ("short.bin", short), ("tiny.bin", b"xyz")):
        with DirectFile(tmp_path / name) as out:
            out.write(data)
    assert (tmp_path / "long.bin").read_bytes() == long
    assert (tmp_path / "short.bin").read_bytes() == short
    assert (tmp_path / "tiny.bin").read_bytes() == b"xyz"


def test_hashing_file_takes_a_big_buffer_in_pieces_and_hashes_all_of_it(tmp_path):
    data = os.urandom(2 * BLOCK + 4097)
    with HashingFile(tmp_path / "f.bin", direct=True) as out:
        assert out.write(memoryview(data)) == len(data)
        assert out.write(b"") == 0
    assert out.hexdigest() == hashlib.sha256(data).hexdigest() == hashlib.sha256(
        (tmp_path / "f.bin").read_bytes()).hexdigest()


@pytest.mark.parametrize("size", SIZES)
def test_an_unchanged_buffer_lands_whole_from_aligned_and_unaligned_memory_mixed_with_copied_writes(tmp_path, size):
    data = os.urandom(size)
    aligned = mmap.mmap(-1, max(size, 1) + mmap.PAGESIZE)
    aligned[:size] = data
    view = memoryview(aligned)
    assert page_aligned(view) and not page_aligned(view[1:])
    with DirectFile(tmp_path / "aligned.bin") as out:
        assert out.write_unchanged(view[:size]) == size
    with DirectFile(tmp_path / "mixed.bin") as out:  # a copied head, then unaligned memory, then aligned again
        out.write(b"head")
        assert out.write_unchanged(view[1:size + 1]) == size
        out.write_unchanged(view[:BLOCK] if size >= BLOCK else view[:size])
    with HashingFile(tmp_path / "hashed.bin", direct=True) as hashed:
        hashed.write_unchanged(view[:size])
    assert (tmp_path / "aligned.bin").read_bytes() == data
    tail = bytes(view[:BLOCK]) if size >= BLOCK else data
    assert (tmp_path / "mixed.bin").read_bytes() == b"head" + bytes(view[1:size + 1]) + tail
    assert hashed.hexdigest() == hashlib.sha256(data).hexdigest() == hashlib.sha256(
        (tmp_path / "hashed.bin").read_bytes()).hexdigest()
    view.release()
    aligned.close()
