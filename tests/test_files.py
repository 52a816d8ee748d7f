"""Plain file facilities: ``read_at_most(handle, n)`` returns exactly what ``handle.read(n)`` returns, and a file's
SHA-256 is that of its bytes, each with a buffer sized by the file."""

from __future__ import annotations

import hashlib
import os
import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from cellspec_sc import _files
from cellspec_sc._files import file_digest, read_at_most, sha256_file


@given(data=st.binary(max_size=3000), skip=st.integers(0, 3100), n=st.integers(0, 5000), buffering=st.booleans())
@settings(max_examples=200, deadline=None)
def test_the_bytes_are_those_read_returns(tmp_path_factory, data, skip, n, buffering):
    path = tmp_path_factory.mktemp("f") / "file"
    path.write_bytes(data)
    with open(path, "rb", buffering=-1 if buffering else 0) as ours, open(path, "rb") as plain:
        ours.seek(skip)
        plain.seek(skip)
        assert read_at_most(ours, n) == plain.read(n)
        assert ours.tell() == plain.tell()


def test_a_file_that_grew_since_its_size_was_asked_is_read_on(tmp_path, monkeypatch):
    path = tmp_path / "growing"
    path.write_bytes(b"x" * 1000)
    real_fstat = os.fstat

    class Smaller:  # the size the file had before a writer appended to it
        def __init__(self, info):
            self.st_mode, self.st_size = info.st_mode, 10

    monkeypatch.setattr(_files.os, "fstat", lambda fd: Smaller(real_fstat(fd)))
    with open(path, "rb") as handle:
        assert read_at_most(handle, 600) == b"x" * 600
    with open(path, "rb") as handle:
        assert read_at_most(handle, 1 << 20) == b"x" * 1000


def test_a_pipe_is_read_as_read_reads_it():
    read_end, write_end = os.pipe()
    writer = threading.Thread(target=lambda: (os.write(write_end, b"abc" * 100), os.close(write_end)))
    writer.start()
    with open(read_end, "rb") as handle:
        assert read_at_most(handle, 1 << 20) == b"abc" * 100
    writer.join()


@given(data=st.binary(max_size=5000), chunk=st.integers(1, 1 << 22))
@settings(max_examples=100, deadline=None)
def test_a_file_hashes_as_its_bytes_do(tmp_path_factory, data, chunk):
    path = tmp_path_factory.mktemp("f") / "file"
    path.write_bytes(data)
    assert sha256_file(path, chunk_size=chunk) == hashlib.sha256(data).hexdigest()
    assert file_digest(path, chunk_size=chunk) == (hashlib.sha256(data).hexdigest(), len(data))


def test_a_file_that_grew_since_its_size_was_asked_is_hashed_whole(tmp_path, monkeypatch):
    path = tmp_path / "growing"
    path.write_bytes(bytes(range(256)) * 40)
    real_fstat = os.fstat

    class Smaller:
        def __init__(self, info):
            self.st_mode, self.st_size = info.st_mode, 3

    monkeypatch.setattr(_files.os, "fstat", lambda fd: Smaller(real_fstat(fd)))
    assert sha256_file(path) == hashlib.sha256(bytes(range(256)) * 40).hexdigest()
