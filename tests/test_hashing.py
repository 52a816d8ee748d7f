"""SHA-256 on a second core: the digest of a file hashed while it is written equals hashlib's of the result."""

from __future__ import annotations

import hashlib
import os
import threading

import pyarrow.parquet as pq
import pytest

import cellspec_sc as cs
from cellspec_sc.io import hashing
from cellspec_sc.io import parquet as parquet_io
from cellspec_sc.io.hashing import BackgroundHash, FollowingHash


def test_following_a_writer_thread_gives_the_digest_of_the_whole_file(tmp_path, monkeypatch):
    monkeypatch.setattr(hashing, "_CHUNK", 1000)  # many short reads that catch up with the writer
    monkeypatch.setattr(hashing, "_SYNC_EVERY", 5000)  # and the write-back path
    path = tmp_path / "growing.bin"
    pieces = [os.urandom(n) for n in (1, 999, 4096, 0, 70_000, 3, 123_457)]
    with open(path, "wb") as out:
        hasher = FollowingHash(path)

        def write() -> None:
            for piece in pieces:
                out.write(piece)
                out.flush()
                hasher.wrote()

        writer = threading.Thread(target=write)
        writer.start()
        writer.join()
    assert hasher.finish() == hashlib.sha256(b"".join(pieces)).hexdigest()


def test_errors_of_the_hashing_thread_reach_the_caller(tmp_path):
    hasher = FollowingHash(tmp_path / "never-created.bin")
    with pytest.raises(FileNotFoundError):
        hasher.finish()
    with pytest.raises(FileNotFoundError):
        BackgroundHash(tmp_path / "missing").result()


def test_background_hash_is_the_files_digest_and_can_be_cancelled(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(3 * (1 << 22) + 17))  # several chunks and a short tail
    assert BackgroundHash(path).result() == hashlib.sha256(path.read_bytes()).hexdigest()
    cancelled = BackgroundHash(path)
    cancelled.cancel()
    with pytest.raises(RuntimeError, match="cancelled"):
        cancelled.result()


def test_written_manifest_digest_is_the_files_digest(tmp_path, monkeypatch):
    monkeypatch.setattr(parquet_io, "_ROW_GROUP_BYTES", 1 << 15)  # many row groups, many hasher wake-ups
    path = cs.write(cs.example(n_cells=5000, n_features=30), tmp_path / "x")
    listed = dict(line.split("  ")[::-1] for line in (path / "MANIFEST.sha256").read_text().splitlines())
    assert listed["cells.parquet"] == hashlib.sha256((path / "cells.parquet").read_bytes()).hexdigest()
    assert pq.ParquetFile(path / "cells.parquet").metadata.num_row_groups == 5  # 1,024-row groups
