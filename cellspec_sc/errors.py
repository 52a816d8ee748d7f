"""Exceptions. Every error cellspec_sc raises on purpose derives from :class:`CellspecError`."""

from __future__ import annotations

import errno as errno_module
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from importlib.util import find_spec
from typing import Any

__all__ = ["CellspecError", "FormatError", "InputError", "MissingExtraError", "Unstorable", "ValidationError",
           "WriteFailed", "needs_extra", "require_extra"]


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


class MissingExtraError(CellspecError, ImportError):
    """A function needs a package that an optional extra of cellspec_sc installs, and it is not installed.

    ``.function``, ``.extra`` (e.g. ``"anndata"``) and ``.module`` (the import that failed). Being an
    :class:`ImportError`, it is what ``from cellspec_sc import to_anndata`` raises on a core install.

    >>> print(MissingExtraError("cellspec_sc.to_anndata", "anndata", "anndata"))
    cellspec_sc.to_anndata needs the optional package 'anndata', which is not installed: \
pip install "cellspec_sc[anndata]"
    """

    def __init__(self, function: str, extra: str, module: str | None):
        self.function, self.extra, self.module = function, extra, module
        what = f"the optional package {module!r}" if module else "an optional package"
        super().__init__(f"{function} needs {what}, which is not installed: "
                         f'pip install "cellspec_sc[{extra}]"', name=module)

    def __reduce__(self):  # picklable (dask workers send errors back)
        return type(self), (self.function, self.extra, self.module)


@contextmanager
def needs_extra(extra: str, function: str) -> Iterator[None]:
    """Turn a missing third-party package, imported inside the block, into a :class:`MissingExtraError`.

    Nested uses name the outermost: the function the user called. A function that imports its dependencies in
    several places says which extra it needs with :func:`require_extra` as its first line instead.

    Parameters
    ----------
    extra
        The extra of cellspec_sc that installs what the block imports, e.g. ``"anndata"``; ``"all"`` when that
        depends on the input (an inner use then names the extra).
    function
        The public function the user called, as the message should name it, e.g. ``"cellspec_sc.to_anndata"``.

    Yields
    ------
    None
        The block runs as it is; a module of cellspec_sc itself that fails to import is re-raised unchanged.

    Raises
    ------
    MissingExtraError
        When a module the block imports is not installed.

    Examples
    --------
    >>> with needs_extra("anndata", "cellspec_sc.to_anndata"):
    ...     import a_package_that_is_not_installed
    Traceback (most recent call last):
    ...
    cellspec_sc.errors.MissingExtraError: cellspec_sc.to_anndata needs the optional package \
'a_package_that_is_not_installed', which is not installed: pip install "cellspec_sc[anndata]"
    """
    try:
        yield
    except MissingExtraError as error:  # raised by an inner use: name what the user called
        precise = error.extra if extra == "all" else extra  # "all": it depends on the input, the inner use knows
        raise MissingExtraError(function, precise, error.module) from error.__cause__
    except ModuleNotFoundError as error:
        if error.name is None or error.name.partition(".")[0] == "cellspec_sc":
            raise
        raise MissingExtraError(function, extra, error.name) from error


# the modules each extra of pyproject.toml installs that its functions import (tests/meta/test_wheel.py keeps the
# two in step)
EXTRA_MODULES = {
    "lazy": ("dask",),
    "anndata": ("anndata", "zarr", "numcodecs"),
    "spatialdata": ("anndata", "zarr", "spatialdata", "shapely", "geopandas"),
    "luxar": ("anndata", "luxar", "matplotlib", "shapely"),
    "widgets": ("ipywidgets", "matplotlib"),
    "cohort": ("anndata", "dask", "distributed"),
    "images": ("dask", "tifffile", "zarr"),
}


@cache
def _missing_module(extra: str) -> str | None:
    return next((module for module in EXTRA_MODULES.get(extra, ()) if find_spec(module) is None), None)


def require_extra(extra: str, function: str) -> None:
    """Raise :class:`MissingExtraError` unless the modules of ``extra`` are installed.

    The first line of a public function whose dependencies are imported where they are used, so that the error
    comes before any work, and names the function and the extra.

    Parameters
    ----------
    extra
        An extra of cellspec_sc (a key of ``EXTRA_MODULES``), e.g. ``"anndata"``.
    function
        The public function, as the message should name it, e.g. ``"cellspec_sc.to_anndata"``.

    Raises
    ------
    MissingExtraError
        When a module of ``extra`` is not installed.

    Examples
    --------
    >>> require_extra("no such extra", "f")  # an extra without modules needs nothing
    """
    module = _missing_module(extra)
    if module is not None:
        raise MissingExtraError(function, extra, module)
