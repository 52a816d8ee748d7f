"""Exceptions. Every error cellspec_sc raises on purpose derives from :class:`CellspecError`."""

from __future__ import annotations

import errno as errno_module
import math
import numbers
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from importlib.util import find_spec
from typing import Any

__all__ = ["CellspecError", "CellspecWarning", "FormatError", "ImageError", "InputError", "MissingExtraError",
           "MissingImage", "MissingPath", "NotFound", "ReadOnlyError", "Unstorable", "ValidationError",
           "WriteFailed", "argument_error", "is_count", "is_positive_number", "needs_extra", "require_extra"]


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


class InputError(CellspecError, ValueError):
    """Input that cannot be turned into a cellspec (a tool export, an AnnData, an argument).

    Also a :class:`ValueError`, so ``except ValueError`` catches it as with other scientific Python libraries.

    >>> import cellspec_sc as cs
    >>> try:
    ...     cs.example(n_cells=-1)
    ... except ValueError as err:
    ...     print(err)
    example: n_cells must be an integer >= 0, not -1
    """


class NotFound(CellspecError, FileNotFoundError):
    """Mixed into a refusal of a path that does not exist, so that ``except FileNotFoundError`` catches it.

    ``.errno`` is ``ENOENT`` and ``.filename`` the path; the message stays the refusal's own.
    """

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.errno = errno_module.ENOENT
        self.strerror = os.strerror(errno_module.ENOENT)

    def __str__(self) -> str:  # OSError's "[Errno 2] ..." form would hide the refusal's message
        return str(self.args[0]) if self.args else ""


class MissingPath(InputError, NotFound):
    """A file or directory given as input that does not exist.

    >>> err = MissingPath("/data/run1.tsv")
    >>> print(err)
    /data/run1.tsv: no such file or directory
    >>> isinstance(err, FileNotFoundError), isinstance(err, InputError), err.filename
    (True, True, '/data/run1.tsv')
    """

    def __init__(self, path: str | os.PathLike, message: str | None = None):
        self.path = str(path)
        super().__init__(message or f"{self.path}: no such file or directory")
        self.filename = self.path

    def __reduce__(self):  # picklable with its arguments (dask workers send errors back)
        return type(self), (self.path, str(self))


class CellspecWarning(UserWarning):
    """Base class of every warning this package issues (something renamed, left out or worth a look).

    ``warnings.filterwarnings("ignore", category=cs.CellspecWarning)`` silences them all.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("a column was renamed", CellspecWarning)
    >>> caught[0].category.__name__
    'CellspecWarning'
    """


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
    "anndata": ("anndata", "zarr", "numcodecs", "h5py"),
    "spatialdata": ("anndata", "zarr", "spatialdata", "shapely", "geopandas"),
    "luxar": ("anndata", "luxar", "matplotlib", "shapely"),
    "widgets": ("ipywidgets", "matplotlib"),
    "cohort": ("anndata", "dask", "distributed"),
    "images": ("dask", "tifffile", "zarr"),
    "cloud": ("fsspec",),
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


def argument_error(function: str, name: str, value: Any, expected: str) -> InputError:
    """Make the refusal of an argument: it names the function, the argument, what it must be and what it was.

    >>> print(argument_error("example", "n_cells", -1, "an integer >= 0"))
    example: n_cells must be an integer >= 0, not -1
    """
    return InputError(f"{function}: {name} must be {expected}, not {value!r}")


def is_count(value: Any, minimum: int = 0) -> bool:
    """Whether ``value`` is an integer (not a bool) of at least ``minimum``.

    >>> is_count(3), is_count(-1), is_count(True), is_count(2.0)
    (True, False, False, False)
    """
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= minimum


def is_positive_number(value: Any) -> bool:
    """Whether ``value`` is a finite real number above zero (not a bool).

    >>> is_positive_number(0.5), is_positive_number(0), is_positive_number(float("inf")), is_positive_number("1")
    (True, False, False, False)
    """
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value) and value > 0


class ImageError(InputError):
    """An image that cannot be opened or does not belong to the object it is used with.

    A damaged or non-image file, or a mismatch with the object's ``images`` and ``channels`` tables (size,
    pixel size, channel count, SHA-256) or an ``image_id`` the object does not have. The message names the
    image id (when known), the file, and both values of a mismatch.
    """


class MissingImage(ImageError, NotFound):
    """An image path that does not exist: an :class:`ImageError` that is also a ``FileNotFoundError``.

    >>> err = MissingImage("slide.ome.tiff: cannot open the image: No such file or directory")
    >>> isinstance(err, FileNotFoundError), isinstance(err, ImageError)
    (True, True)
    """

