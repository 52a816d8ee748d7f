"""Crash-safe publication primitives: a sibling staging directory, fsync, atomic renames.

A writer builds everything in ``.<name>.cellspec-staging-<pid>-<token>`` next to
the target and renames it to the target only when complete. Replacing an
existing directory swaps the two atomically (``renameat2(RENAME_EXCHANGE)`` on
Linux), so the target name always holds a complete directory or nothing.
Leftovers of writers that died are recognised by their name and removed by the
next write to the same target; the process-private scratch folders
(:func:`cellspec_sc._files.scratch_folder`) follow the same rule. Writers use these through
:func:`cellspec_sc.io._publish.publishing`, which also checks the target.

>>> staging_prefix(Path("/data/run1"))
'.run1.cellspec-staging-'
>>> len(staging_prefix(Path("/data/" + "n" * 250)))
48
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import hashlib
import os
import secrets
import shutil
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from cellspec_sc._background import daemon
from cellspec_sc._files import pid_alive, writer_pid

_AT_FDCWD = -100
_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2
_BACKUP = "cellspec-old-"


def _short_name(target: Path) -> str:
    """``target``'s name, cut and tagged with a hash when a sibling name built on it would pass the
    file system's 255-byte limit."""
    name = target.name
    if len(os.fsencode(name)) <= 32:
        return name
    return f"{name[:16]}~{hashlib.sha256(os.fsencode(name)).hexdigest()[:12]}"


def staging_prefix(target: Path) -> str:
    """Name prefix of the staging directories of ``target``."""
    return f".{_short_name(target)}.cellspec-staging-"


def _backup_prefix(target: Path) -> str:
    return f".{_short_name(target)}.{_BACKUP}"


def fsync_file(path: Path) -> None:
    """Flush a file's data to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_SYNC_FILE_RANGE_WRITE = 2


@functools.cache
def _sync_file_range() -> Callable[..., int] | None:
    """libc's sync_file_range (Linux), None where the system has none."""
    fn = getattr(ctypes.CDLL(None, use_errno=True), "sync_file_range", None)
    if fn is not None:
        fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    return fn


def start_writeback(path: Path) -> None:
    """Ask the kernel to start writing a complete file's data to disk now, without waiting for it.

    Linux ``sync_file_range(SYNC_FILE_RANGE_WRITE)``; nothing elsewhere. Only a hint: durability still
    comes from :func:`fsync_file` at publication (errors surface there), but a writer that starts each
    file's writeback as soon as the file is complete keeps the disk busy while it computes the next one,
    instead of stopping in fsync until the disk drains, and leaves little for the final fsync.
    """
    fn = _sync_file_range()
    if fn is None:
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        fn(fd, 0, 0, _SYNC_FILE_RANGE_WRITE)
    finally:
        os.close(fd)


@contextlib.contextmanager
def flushing_behind(path: Path, interval: float = 0.1) -> Iterator[None]:
    """While the block writes the file ``path``, a thread starts writing what is written so far to disk
    every ``interval`` seconds (:func:`start_writeback` of what the writer has added; ``fdatasync`` where
    the system has no ``sync_file_range``), so the disk works while the writer does and the
    :func:`fsync_file` before publishing finds little left. It adds no guarantee and replaces no fsync;
    a failed flush is raised when the block ends (the kernel reports a write-back error once, so it
    must not be lost here).

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "f"
    >>> with flushing_behind(path):
    ...     _ = path.write_bytes(b"x" * 1_000_000)
    >>> path.stat().st_size
    1000000
    """
    stop, failed = threading.Event(), []

    def flush() -> None:
        fd = None
        try:
            while not stop.wait(interval):
                if fd is None:
                    fd = _open_regular(path)
                if fd is not None:
                    _flush_started(fd)
        except OSError as err:
            failed.append(err)
        finally:
            if fd is not None:
                os.close(fd)

    flusher = daemon(flush, name="cellspec-flush-behind")
    try:
        yield
    finally:
        stop.set()
        flusher.join()
    if failed:
        raise failed[0]


def _open_regular(path: Path) -> int | None:
    """A read-only descriptor of ``path`` when it is a regular file by now, else None (also when it cannot be
    opened, e.g. no descriptor is left: flushing early is only a head start, the final fsync does not need it)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def _flush_started(fd: int) -> None:
    """Start writeback of ``fd``'s dirty data (sync_file_range), else flush it (fdatasync, or fsync on macOS)."""
    fn = _sync_file_range()
    if fn is None:
        _datasync(fd)
    elif fn(fd, 0, 0, _SYNC_FILE_RANGE_WRITE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


_datasync = getattr(os, "fdatasync", os.fsync)  # macOS has no fdatasync


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries (new names, renames) to disk."""
    with contextlib.suppress(OSError):  # some filesystems refuse fsync on directories
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def fsync_tree(root: Path) -> None:
    """fsync every file and directory below ``root`` (directories after their contents)."""
    for folder, _, files in os.walk(root, topdown=False):
        for name in files:
            fsync_file(Path(folder) / name)
        fsync_dir(Path(folder))


def clean_stale(target: Path) -> list[Path]:
    """Remove staging directories of ``target`` left by dead writers; restore an interrupted swap.

    Returns the removed paths. A backup (old directory moved aside by the
    two-rename fallback) is moved back when the target is missing, else removed.
    """
    removed = []
    parent = target.parent
    if not parent.is_dir():
        return removed
    for entry in sorted(parent.iterdir()):
        for prefix in (staging_prefix(target), _backup_prefix(target)):
            if not entry.name.startswith(prefix):
                continue
            pid = writer_pid(entry.name, prefix)
            if pid is None or pid_alive(pid):
                continue
            if prefix == _backup_prefix(target) and not target.exists():
                os.rename(entry, target)
                continue
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


@contextlib.contextmanager
def staging_directory(target: Path) -> Iterator[Path]:
    """A fresh sibling directory to build ``target`` in; removed if the block fails or is interrupted."""
    stage = target.parent / f"{staging_prefix(target)}{os.getpid()}-{secrets.token_hex(4)}"
    stage.mkdir()
    try:
        yield stage
    finally:
        if stage.exists():  # still there: the block failed, or the swap left the old directory here
            shutil.rmtree(stage, ignore_errors=True)


def _renameat2(src: Path, dst: Path, flags: int) -> bool:
    """renameat2(2) through libc; False when the system or filesystem does not offer it."""
    libc = ctypes.CDLL(None, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        return False
    if fn(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(dst))


# Tests switch this off to exercise the portable two-rename path.
USE_RENAMEAT2 = True


def publish(payload: Path, target: Path, *, replace: bool) -> None:
    """Move the complete ``payload`` (a file or a directory) to ``target`` in one step.

    ``replace=False``: raises FileExistsError if anything is at ``target``, also something that
    appeared a moment ago (``renameat2(RENAME_NOREPLACE)``; else ``link()`` for a file, and for a
    directory ``rename()``, which POSIX lets fail on a file or a non-empty directory).
    ``replace=True``: an existing directory is swapped with ``payload`` (the old one is left at
    ``payload``'s name for the caller to remove), an existing file replaced (``rename()``).
    """
    if payload.is_dir():
        fsync_dir(payload)
    if replace and (target.exists() or target.is_symlink()):
        _replace(payload, target)
    else:
        try:
            _rename_noreplace(payload, target)
        except FileExistsError:
            if not replace:
                raise
            _replace(payload, target)
    fsync_dir(target.parent)


def _rename_noreplace(source: Path, target: Path) -> None:
    if USE_RENAMEAT2 and _renameat2(source, target, _RENAME_NOREPLACE):
        return
    if not source.is_dir():
        os.link(source, target)  # FileExistsError when anything is there
        os.unlink(source)
        return
    try:
        os.rename(source, target)
    except OSError as err:
        if err.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
            raise FileExistsError(errno.EEXIST, "exists", str(target)) from None
        raise


def _replace(payload: Path, target: Path) -> None:
    if payload.is_dir():
        _swap(payload, target)
    else:
        os.replace(payload, target)


def _swap(stage: Path, target: Path) -> None:
    if USE_RENAMEAT2 and _renameat2(stage, target, _RENAME_EXCHANGE):
        return
    # Portable fallback: move the old directory aside under a recognisable name, move the new one
    # in, then put the old one where the caller removes it. A crash between the two renames leaves
    # no target; clean_stale() moves the backup back.
    backup = target.parent / f"{_backup_prefix(target)}{os.getpid()}-{secrets.token_hex(4)}"
    os.rename(target, backup)
    os.rename(stage, target)
    os.rename(backup, stage)
