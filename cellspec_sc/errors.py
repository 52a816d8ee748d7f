"""Exceptions. Every error cellspec_sc raises on purpose derives from :class:`CellspecError`."""

from __future__ import annotations

import errno as errno_module
import os
import re
from typing import Any

__all__ = ["CellspecError", "FormatError", "ImageError", "InputError", "Unstorable", "ValidationError", "WriteFailed"]


class CellspecError(Exception):
    """Base class of every error this package raises on purpose.

    >>> try:
    ...     raise CellspecError("bad input")
    ... except CellspecError as err:
    ...     print(err)
    bad input
    """


class ValidationError(CellspecError):
    """An object failed structure validation.

    ``.report`` holds the full :class:`~cellspec_sc.ValidationReport` (typed loosely: the report lives in a
    higher layer).
    """

    def __init__(self, report: Any, context: str | None = None):
        self.report = report
        failed = ", ".join(r.name for r in report.failures)
        head = f"{context}: " if context else ""
        super().__init__(f"{head}cellspec validation failed ({failed})\n{report.format(only_problems=True)}")
        self.context = context

    def __reduce__(self):  # picklable with its report (dask workers send errors back)
        return type(self), (self.report, self.context)


class InputError(CellspecError):
    """Input that cannot be turned into a cellspec (a tool export, an AnnData, an argument)."""


class ReadOnlyError(CellspecError, ValueError):
    """An attempt to change a :class:`~cellspec_sc.CellSpec` in place; its values stay as measured.

    >>> import cellspec_sc as cs
    >>> x = cs.example()
    >>> x.measurements = x.measurements * 2
    Traceback (most recent call last):
    ...
    cellspec_sc.errors.ReadOnlyError: x.measurements cannot be set: make a changed object with ...
    """


class FormatError(CellspecError):
    """A file or directory that does not follow the cellspec directory format."""


class WriteFailed(CellspecError):
    """The operating system refused a write (disk full, read-only file system, permissions, too many open files).

    Nothing was published: the target holds what it held before and no staging is left behind.
    ``.target``, ``.file`` (relative to the target, when known) and ``.errno``.

    >>> import errno
    >>> print(WriteFailed("/data/run1", OSError(errno.ENOSPC, "No space left on device"), "cells.parquet"))
    ... # doctest: +NORMALIZE_WHITESPACE
    /data/run1: cells.parquet: cannot write: No space left on device (ENOSPC); nothing was published,
    the target is as it was
    """

    def __init__(self, target: str | os.PathLike, err: OSError, file: str | None = None):
        found = re.search(r"errno (\d+)", str(err))  # pyarrow's OSErrors carry it only in the text
        self.target, self.file = str(target), file
        self.errno = err.errno or (int(found.group(1)) if found else None)
        code = f" ({errno_module.errorcode.get(self.errno, self.errno)})" if self.errno else ""
        where = f"{self.target}: {file}: " if file else f"{self.target}: "
        super().__init__(f"{where}cannot write: {err.strerror or err}{code}; nothing was published, "
                         "the target is as it was")


class Unstorable(InputError):
    """A value the spec allows but the target format cannot store; refused before anything is written.

    For example a NUL character in text for ``.h5ad``, or a name longer than a file name may be for zarr.
    """


class ImageError(InputError):
    """An image that cannot be opened or does not belong to the object it is used with.

    A damaged or non-image file, or a mismatch with the object's ``images`` and ``channels`` tables (size,
    pixel size, channel count, SHA-256) or an ``image_id`` the object does not have. The message names the
    image id (when known), the file, and both values of a mismatch.
    """
