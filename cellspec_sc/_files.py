"""Plain file facilities every layer may use: the SHA-256 of a file and process-private scratch folders.

>>> import hashlib, tempfile
>>> path = Path(tempfile.mkdtemp()) / "f.bin"
>>> _ = path.write_bytes(b"abc" * 1000)
>>> sha256_file(path, chunk_size=7) == hashlib.sha256(b"abc" * 1000).hexdigest()
True
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["FileDigest", "file_digest", "hash_from", "pid_alive", "read_at_most", "scratch_folder", "sha256_file",
           "writer_pid"]


def sha256_file(path: str | os.PathLike, chunk_size: int = 1 << 22) -> str:
    """Hex SHA-256 of a file, read in chunks (constant memory).

    Parameters
    ----------
    path
        The file.
    chunk_size
        Bytes read at a time.

    Returns
    -------
    str
        The 64 hex digits.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "empty"
    >>> _ = path.write_bytes(b"")
    >>> sha256_file(path)[:16]
    'e3b0c44298fc1c14'
    """
    digest = hashlib.sha256()
    with open(path, "rb", buffering=0) as handle:
        hash_from(handle, digest, chunk_size)
    return digest.hexdigest()


class FileDigest(NamedTuple):
    """The SHA-256 of a file's bytes as one read took them, and how many bytes that read took: a provenance record
    made from both describes the same bytes, even when the file changed after the read.

    >>> FileDigest.of(b"abc").size, FileDigest.of(b"abc").sha256[:8]
    (3, 'ba7816bf')
    """

    sha256: str
    size: int

    @classmethod
    def of(cls, data: bytes | memoryview) -> FileDigest:
        """The digest of ``data``, a whole file's bytes."""
        return cls(hashlib.sha256(data).hexdigest(), len(data))


def file_digest(path: str | os.PathLike, chunk_size: int = 1 << 22, seen: Callable[[int], Any] | None = None
                ) -> FileDigest:
    """:class:`FileDigest` of a file, read once in chunks (constant memory): its size is what was hashed; ``seen``
    is told each chunk's bytes (a progress bar's ``update``).

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "f"
    >>> _ = path.write_bytes(b"abc")
    >>> file_digest(path) == FileDigest.of(b"abc")
    True
    """
    digest = hashlib.sha256()
    with open(path, "rb", buffering=0) as handle:
        size = hash_from(handle, digest, chunk_size, seen=seen)
    return FileDigest(digest.hexdigest(), size)


def hash_from(handle: Any, digest: Any, chunk_size: int = 1 << 22, stop: Callable[[], bool] | None = None,
              seen: Callable[[int], Any] | None = None) -> int:
    """Feed ``digest`` what is left of the binary file ``handle`` (until ``stop()`` is true, if given), read into
    one buffer again and again, telling ``seen`` (a progress bar's ``update``) each chunk's bytes; returns the bytes
    hashed. A new ``bytes`` per chunk would be fresh memory each time where malloc hands large blocks back to the
    system at once (``MALLOC_TRIM_THRESHOLD_``, which dask's worker processes set): a page fault and the zeroing of
    every page, as much kernel time as the hash.
    """
    left = _left_in(handle)
    buffer = bytearray(chunk_size if left is None else max(1, min(chunk_size, left + 1)))  # a small file: a small one
    view = memoryview(buffer)
    total = 0
    while not (stop is not None and stop()) and (count := handle.readinto(buffer)):
        digest.update(view[:count])
        total += count
        if seen is not None:
            seen(count)
    return total


def read_at_most(handle: Any, n: int) -> bytes:
    """``handle.read(n)`` of a binary file, with a buffer sized by what is left of a regular file.

    ``read(n)`` allocates ``n`` bytes before it reads: a limit of a megabyte or more (the sample of a table, the
    most a side file may hold) filled with a few hundred kilobytes costs about 0.1 ms more than the read itself
    (fresh pages, then the buffer shrunk), once per file a reader opens. The bytes are the same: a file that grew
    since its size was asked is read on up to ``n``; anything but a regular file is read as ``read(n)`` does.

    Parameters
    ----------
    handle
        A binary file open for reading.
    n
        The most bytes to read.

    Returns
    -------
    bytes
        What ``handle.read(n)`` returns.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "f"
    >>> _ = path.write_bytes(b"abcdef")
    >>> with open(path, "rb") as handle:
    ...     handle.read(1), read_at_most(handle, 1 << 20), read_at_most(handle, 1 << 20)
    (b'a', b'bcdef', b'')
    """
    left = _left_in(handle)
    if left is None or left + 1 >= n:
        return handle.read(n)
    data = handle.read(left + 1)  # one byte more than the file held: a file that grew shows it
    if len(data) > left:
        data += handle.read(n - len(data))
    return data


def _left_in(handle: Any) -> int | None:
    """The bytes left after ``handle``'s position in a regular file (None for anything else)."""
    try:
        info = os.fstat(handle.fileno())
        return max(info.st_size - handle.tell(), 0) if stat.S_ISREG(info.st_mode) else None
    except (AttributeError, OSError, ValueError):  # no file descriptor, or not seekable
        return None


def pid_alive(pid: int) -> bool:
    """Whether the process ``pid`` exists (also when another user owns it).

    >>> pid_alive(os.getpid())
    True
    """
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def writer_pid(name: str, prefix: str) -> int | None:
    """The process id written right after ``prefix`` in a file name (``<prefix><pid>-...``), None if absent.

    >>> writer_pid("cellspec-x-123-abc", "cellspec-x-"), writer_pid("cellspec-x-abc", "cellspec-x-")
    (123, None)
    """
    head = name[len(prefix):].split("-", 1)[0]
    return int(head) if head.isdigit() else None


def scratch_folder(purpose: str) -> Path:
    """A new folder in the temporary directory for this process's files, removed when it exits.

    The name carries the process id, so that folders of processes that were killed (no exit
    handler ran) are recognised and removed by the next call for the same purpose.

    Parameters
    ----------
    purpose
        A word naming what the folder holds; part of its name.

    Returns
    -------
    Path
        The new, empty folder.

    Examples
    --------
    >>> folder = scratch_folder("doctest")
    >>> folder.is_dir(), folder.name.startswith(f"cellspec-doctest-{os.getpid()}-")
    (True, True)
    """
    prefix = f"cellspec-{purpose}-"
    for entry in Path(tempfile.gettempdir()).glob(f"{prefix}*"):
        pid = writer_pid(entry.name, prefix)
        if pid is not None and not pid_alive(pid):
            shutil.rmtree(entry, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
