"""SHA-256 on a second core: the digest of a file hashed while it is written equals hashlib's of the result."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import cellspec_sc as cs
from cellspec_sc._files import hash_from, sha256_file
from cellspec_sc.errors import InputError
from cellspec_sc.io import _hashing as hashing
from cellspec_sc.io import _parquet as parquet_io
from cellspec_sc.io._hashing import BackgroundHash, FollowingHash
from cellspec_sc.readers import _table as table

DATA = Path(__file__).parent.parent / "data" / "qupath"


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


def test_piece_hash_of_a_file_that_grew_while_read_is_an_input_error_naming_it(tmp_path):
    path = tmp_path / "export.csv"
    path.write_bytes(b"a,b\n1,2\n3,4\n")
    hasher = hashing.PieceHash(path, 4)
    hasher.add((4, 8), b"1,2\n")
    hasher.add((8, 12), b"3,4\n")
    with open(path, "ab") as out:  # the exporting tool appends a row after the pieces were read
        out.write(b"5,6\n")
    with pytest.raises(InputError, match=r"export\.csv: the file changed while it was read \(12 bytes read, 16"):
        hasher.result()


def test_a_piece_parses_while_another_piece_is_being_hashed_instead_of_waiting(tmp_path):
    path = tmp_path / "export.csv"
    path.write_bytes(b"a,b\n1,2\n3,4\n")
    hasher = hashing.PieceHash(path, 4)
    hashing_first, done_hashing = threading.Event(), threading.Event()

    def first_piece_being_hashed():  # the thread of the first piece holds the digest while it feeds it
        with hasher._turn:
            hashing_first.set()
            done_hashing.wait(10)
    first = threading.Thread(target=first_piece_being_hashed)
    first.start()
    hashing_first.wait(10)
    answers = []
    second = threading.Thread(target=lambda: answers.append(hasher.add_if_next((8, 12), b"3,4\n")))
    second.start()
    second.join(5)
    waited = second.is_alive()
    done_hashing.set()
    first.join()
    second.join()
    assert not waited and answers == [False]  # told to parse first and hand its bytes in later
    hasher.add((4, 8), b"1,2\n")
    hasher.add((8, 12), b"3,4\n")
    assert hasher.result() == (hashlib.sha256(path.read_bytes()).hexdigest(), 12)


@pytest.mark.parametrize("hashed", ["as parsed", "after the parse"])
def test_a_qupath_export_appended_to_during_the_read_is_refused_by_name(tmp_path, monkeypatch, hashed):
    source = tmp_path / "detections.tsv"
    header, *rows = (DATA / "v04_cell_detection.tsv").read_bytes().splitlines(keepends=True)
    # more than the first megabyte, which is parsed from the one read that samples its encoding: the rest is read
    # in pieces, between which the second process appends
    copies = (1 << 20) // len(b"".join(rows)) + 2
    source.write_bytes(header + b"".join(rows) * copies)
    read_piece = table.piece_bytes

    def read_then_append(path, span):  # a second process writing the export while it is read
        data = read_piece(path, span)
        with open(source, "ab") as out:
            out.write(rows[-1])
        return data

    monkeypatch.setattr(table, "piece_bytes", read_then_append)
    if hashed == "as parsed":
        monkeypatch.setattr(table, "HASH_LATER_MAX_BYTES", 0)
    with pytest.raises(InputError, match="detections.tsv: the file changed while it was read"):
        cs.read_qupath(source, pixel_size=0.5)


@pytest.mark.parametrize("size", [0, 1, (1 << 16) - 1, 1 << 16, (1 << 16) + 1, 5 * (1 << 16) + 3])
def test_sha256_file_reads_into_one_buffer_and_gives_the_files_digest_at_every_chunk_boundary(tmp_path, size):
    path = tmp_path / "data.bin"
    data = os.urandom(size)
    path.write_bytes(data)
    assert sha256_file(path, chunk_size=1 << 16) == hashlib.sha256(data).hexdigest()
    digest = hashlib.sha256(b"head")
    with open(path, "rb", buffering=0) as handle:
        assert hash_from(handle, digest, 1 << 16) == size
    assert digest.hexdigest() == hashlib.sha256(b"head" + data).hexdigest()


def test_hash_from_stops_when_asked_and_says_how_much_it_hashed(tmp_path):
    path = tmp_path / "data.bin"
    data = os.urandom(10 * 4096)
    path.write_bytes(data)
    calls = []
    digest = hashlib.sha256()
    with open(path, "rb", buffering=0) as handle:
        hashed = hash_from(handle, digest, 4096, stop=lambda: calls.append(1) or len(calls) > 3)
    assert hashed == 3 * 4096 and digest.hexdigest() == hashlib.sha256(data[:3 * 4096]).hexdigest()
