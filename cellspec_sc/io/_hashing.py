"""SHA-256 of data files while they are written or read: on a second core, or on their way to disk.

Hashing a slide's Parquet file costs about as much CPU as encoding it. Both
:class:`FollowingHash` (writing: hashes the bytes a writer has appended so far,
following it through the file) and :func:`hash_later` (reading: hashes a file
while the caller decodes it) run ``hashlib`` in a thread; ``hashlib`` releases
the GIL on large buffers, so on two cores the hash comes almost for free.
:class:`HashingFile` hashes the bytes as a writer hands them to the file, for
work that already uses every core (one task per core on a dask worker): the
file is never read back.

>>> import tempfile, pathlib, hashlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "f.bin"
>>> with open(path, "wb") as out:
...     hasher = FollowingHash(path)
...     _ = out.write(b"abc"); out.flush(); hasher.wrote()
...     _ = out.write(b"def")
>>> hasher.finish() == hashlib.sha256(b"abcdef").hexdigest()
True
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any

from cellspec_sc._background import daemon
from cellspec_sc._files import FileDigest, hash_from
from cellspec_sc.errors import InputError
from cellspec_sc.io._direct import DirectFile

_CHUNK = 1 << 22  # 4 MB reads
_SYNC_EVERY = 1 << 28  # start writing back every 256 MB, so the final fsync has little left to do


class FollowingHash:
    """Hashes a file that another thread is appending to, reading behind the writer.

    Valid for files written strictly sequentially and never rewritten (a Parquet file: its footer
    comes last). Call :meth:`wrote` after each flushed write, :meth:`finish` after closing the file;
    the returned digest covers every byte of the finished file. The thread also flushes what it has
    read to disk as it goes (``fdatasync``), so durability costs little at the end.
    """

    def __init__(self, path: str | os.PathLike):
        self._path = Path(path)
        self._more = threading.Event()
        self._closed = False
        self._digest = hashlib.sha256()
        self._error: BaseException | None = None
        self._thread = daemon(self._follow, name=f"sha256 {self._path.name}")

    def wrote(self) -> None:
        """The writer has appended (and flushed) more bytes."""
        self._more.set()

    def finish(self) -> str:
        """Hex SHA-256 of the whole file; call after the writer closed it."""
        self._closed = True
        self._more.set()
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._digest.hexdigest()

    def _follow(self) -> None:
        try:
            with open(self._path, "rb") as handle:
                synced = 0
                while True:
                    closed = self._closed  # read before the last pass: nothing is written after closing
                    while chunk := handle.read(_CHUNK):
                        self._digest.update(chunk)
                        if handle.tell() - synced >= _SYNC_EVERY:
                            os.fdatasync(handle.fileno())
                            synced = handle.tell()
                    if closed:
                        return
                    self._more.wait()
                    self._more.clear()
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread by finish()
            self._error = err


class BackgroundHash:
    """SHA-256 of a file computed in a thread while the caller decodes or parses it.

    :meth:`result` waits for the hex digest (re-raising the thread's OSError); :meth:`cancel` stops
    the thread early, for when the caller failed and will never ask.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._stop = threading.Event()
        self._digest: str | None = None
        self._error: BaseException | None = None
        self._thread = daemon(self._hash, name=f"sha256 {self.path.name}")

    def _hash(self) -> None:
        try:
            digest = hashlib.sha256()
            with open(self.path, "rb", buffering=0) as handle:
                hash_from(handle, digest, _CHUNK, self._stop.is_set)
            self._digest = digest.hexdigest()
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread by result()
            self._error = err

    def cancel(self) -> None:
        self._stop.set()

    def result(self) -> str:
        self._thread.join()
        if self._error is not None:
            raise self._error
        if self._stop.is_set() or self._digest is None:
            raise RuntimeError(f"hashing {self.path.name} was cancelled")
        return self._digest


class PieceHash:
    """SHA-256 of a file whose pieces are read by several threads (a parse cut at line boundaries): each
    thread hands in the bytes it read, and they are hashed in file order, so the file is read once.

    ``start`` bytes from the beginning (the header; ``head`` when the caller read them) are hashed at once.
    :meth:`add` waits until the pieces before its own are in; a thread that could not read its piece calls
    :meth:`fail`, so that no thread waits for it. A piece is only ever waited for by pieces after it, which
    started later (a thread pool runs work in order), so nothing waits forever.

    >>> import tempfile, pathlib, hashlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "f.csv"
    >>> _ = path.write_bytes(b"a,b\\n1,2\\n3,4\\n")
    >>> h = PieceHash(path, 4)
    >>> h.add((4, 8), b"1,2\\n"); h.add((8, 12), b"3,4\\n")
    >>> h.result() == (hashlib.sha256(path.read_bytes()).hexdigest(), 12)
    True
    """

    def __init__(self, path: str | os.PathLike, start: int, head: bytes | None = None):
        self.path = Path(path)
        if head is None or len(head) != start:  # else the first bytes as the caller read them already
            with open(self.path, "rb") as handle:
                head = handle.read(start)
        self._digest = hashlib.sha256(head)
        self._next = len(head)
        self._failed = False
        self._turn = threading.Condition()

    def add(self, span: tuple[int, int], data: bytes) -> None:
        """Hash ``data``, the bytes ``span = (a, b)`` of the file, after the pieces before it."""
        with self._turn:
            self._turn.wait_for(lambda: self._next == span[0] or self._failed)
            if not self._failed:
                self._digest.update(data)
                self._next = span[1]
            self._turn.notify_all()

    def add_if_next(self, span: tuple[int, int], data: bytes) -> bool:
        """Hash ``data`` now if every piece before it is in (then True), else leave it for :meth:`add` (False):
        a thread whose piece is not next parses it first instead of waiting its turn to hash.

        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "f.csv"
        >>> _ = path.write_bytes(b"a\\n1\\n2\\n")
        >>> h = PieceHash(path, 2)
        >>> h.add_if_next((4, 6), b"2\\n"), h.add_if_next((2, 4), b"1\\n")
        (False, True)
        """
        if not self._turn.acquire(blocking=False):  # another piece is being hashed: parse this one meanwhile
            return False
        try:
            if self._next != span[0] or self._failed:
                return False
            self._digest.update(data)
            self._next = span[1]
            self._turn.notify_all()
        finally:
            self._turn.release()
        return True

    def fail(self) -> None:
        """A piece will never come: stop waiting for it (the digest is then unavailable)."""
        with self._turn:
            self._failed = True
            self._turn.notify_all()

    def result(self, size: int | None = None) -> FileDigest:
        """The SHA-256 of the whole file (every piece added) and its size; ``size``: the file's size when the last
        piece was read, if it was asked then (else it is asked now)."""
        size = self.path.stat().st_size if size is None else size
        if self._failed:
            raise RuntimeError(f"{self.path.name}: a piece was not read, so the file has no digest")
        if self._next != size:
            raise InputError(f"{self.path}: the file changed while it was read ({self._next:,} bytes read, "
                             f"{size:,} bytes now); read it again once whatever writes it has finished")
        return FileDigest(self._digest.hexdigest(), self._next)


class HashingFile:
    """A binary file (created, or truncated) that feeds every byte written to it to SHA-256 on the way to disk,
    for writers that accept a file object (``pyarrow.parquet.ParquetWriter``): the digest of the file without
    reading it back. Only for files written from start to end (no seek); close it (or leave the ``with``
    block) before :meth:`hexdigest`. ``direct=True`` writes it around the page cache
    (:class:`~cellspec_sc.io._direct.DirectFile`).

    >>> import tempfile, pathlib, hashlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "f.bin"
    >>> with HashingFile(path) as out:
    ...     _ = out.write(b"abc"); _ = out.write(memoryview(b"def"))
    >>> out.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()
    True
    >>> out.hexdigest() == hashlib.sha256(b"abcdef").hexdigest()
    True
    """

    def __init__(self, path: str | os.PathLike, *, direct: bool = False):
        self._file = DirectFile(path) if direct else open(path, "wb")  # noqa: SIM115 - closed by close()
        self._digest = hashlib.sha256()

    def write(self, data: bytes | memoryview) -> int:
        """Hash and write ``data``, a big buffer in pieces of 4 MB: each piece is hashed while the one before
        it goes to disk."""
        return self._hash_and_write(data, self._file.write)

    def write_unchanged(self, data: bytes | memoryview) -> int:
        """:meth:`write` for a buffer left unchanged until :meth:`close`: with ``direct=True`` its page-aligned
        blocks go to disk without a copy (:meth:`~cellspec_sc.io._direct.DirectFile.write_unchanged`)."""
        return self._hash_and_write(data, getattr(self._file, "write_unchanged", self._file.write))

    def _hash_and_write(self, data: bytes | memoryview, write: Any) -> int:
        view = memoryview(data).cast("B")
        for start in range(0, len(view), _CHUNK):
            piece = view[start:start + _CHUNK]
            self._digest.update(piece)
            write(piece)
        return len(view)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    @property
    def closed(self) -> bool:
        return self._file.closed

    def writable(self) -> bool:
        return True

    def hexdigest(self) -> str:
        """Hex SHA-256 of everything written (the whole file once it is closed)."""
        if not self._file.closed:
            raise ValueError("close the file before asking for its digest")
        return self._digest.hexdigest()

    def __enter__(self) -> HashingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
