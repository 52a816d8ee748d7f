"""Opening the files of a directory safely: regular files only, with stated size bounds.

A named pipe, a device or a directory where a file belongs would make a plain
``open()`` wait forever or read without end; a huge ``DONE`` would be read whole.
Files are opened with ``O_NONBLOCK`` (so opening a FIFO cannot wait), checked
with ``fstat`` on the open descriptor (so the file checked is the file read), and
refused unless they are regular files within their bound.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "DONE").write_text("abc\\n")
>>> read_bounded(folder / "DONE", folder, "DONE", DONE_MAX_BYTES)
b'abc\\n'
>>> try:
...     read_bounded(folder / "DONE", folder, "DONE", 2)
... except FileTooLarge as err:
...     print(err.detail)
is 4 bytes; the limit for this file is 2 bytes
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa

from cellspec_sc._files import read_at_most
from cellspec_sc.io._refusals import FileTooLarge, NotARegularFile

DONE_MAX_BYTES = 1024  # 64 hex digits and a newline
MANIFEST_LINE_MAX_BYTES = 4096 + 68  # a path of PATH_MAX bytes after the digest and two spaces
DEFAULT_MAX_METADATA_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_INFLATION = 100  # a gzipped TSV may inflate to 100 times its size (or 64 MiB, if more)
INFLATION_FLOOR_BYTES = 64 * 1024 * 1024

@dataclass(frozen=True)
class ReadLimits:
    """Size bounds of a read (``read(path, max_metadata_bytes=..., max_inflation=...)``)."""

    max_metadata_bytes: int = DEFAULT_MAX_METADATA_BYTES
    max_inflation: float = DEFAULT_MAX_INFLATION


DEFAULT_LIMITS = ReadLimits()  # the default of the readers' ``limits=`` (frozen, so one instance serves every call)


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` is, in words."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path: Path, directory: Path | str, file: str, max_bytes: int | None = None) -> BinaryIO:
    """``path`` opened for reading in binary mode if it is a regular file of at most ``max_bytes``."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(directory, file, f"is {file_kind(info.st_mode)}, not a regular file")
        if max_bytes is not None and info.st_size > max_bytes:
            raise FileTooLarge(directory, file, _too_large(info.st_size, max_bytes))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: Path, directory: Path | str, file: str, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (also if it grows while being read)."""
    with open_regular(path, directory, file, max_bytes) as handle:
        data = read_at_most(handle, max_bytes + 1)
    if len(data) > max_bytes:
        raise FileTooLarge(directory, file, f"grew past the limit for this file ({max_bytes} bytes) while read")
    return data


def _too_large(size: int, limit: int) -> str:
    return f"is {size} bytes; the limit for this file is {limit} bytes"


class InflationGuard:
    """A binary stream that refuses to deliver more than ``limit`` bytes (for gzip bombs), and refuses to go on
    once the bytes delivered plus what Arrow allocated since the stream was opened (what its reader made of them:
    a file of empty lines parses into many rows) pass ``limit``.

    Wraps a decompressing stream; ``limit`` is usually ``max(INFLATION_FLOOR_BYTES,
    ratio * compressed size)``.
    """

    def __init__(self, stream: BinaryIO, limit: int, directory: Path | str, file: str, ratio: float):
        self.stream, self.limit, self.directory, self.file, self.ratio = stream, limit, directory, file, ratio
        self.delivered = 0
        self.closed = False
        self.arrow_at_start = pa.total_allocated_bytes()

    def check_decoded(self) -> None:
        """Raise FileTooLarge when the bytes delivered and the Arrow memory allocated since the stream was opened
        pass ``limit``."""
        grown = pa.total_allocated_bytes() - self.arrow_at_start
        if self.delivered + grown > self.limit:
            raise FileTooLarge(self.directory, self.file,
                               f"inflates and decodes to more than {self.limit} bytes in memory (over "
                               f"{self.ratio:g} times its compressed size); if the file is genuine, read it with "
                               "max_inflation= set higher")

    def read(self, size: int = -1) -> bytes:
        self.check_decoded()
        wanted = (self.limit + 1 - self.delivered if size is None or size < 0
                  else min(size, self.limit + 1 - self.delivered))
        data = self.stream.read(max(wanted, 1))
        self.delivered += len(data)
        if self.delivered > self.limit:
            raise FileTooLarge(self.directory, self.file,
                               f"inflates to more than {self.limit} bytes (over {self.ratio:g} times its compressed "
                               f"size); if the file is genuine, read it with max_inflation= set higher")
        return data

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True
        self.stream.close()

    def __enter__(self) -> InflationGuard:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
