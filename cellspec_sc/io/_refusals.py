"""Refusals of the cellspec directory format (spec sections 9 and 11).

Each rule a directory can break has its own exception class, a subclass of
:class:`cellspec_sc.FormatError`; the message names the directory, the file and
the rule, and the same three are attributes for programs.

>>> err = IncompleteDirectory("/data/run1", "DONE", "file is missing")
>>> print(err)
/data/run1: DONE: file is missing [rule: a directory without DONE was not completely written]
>>> isinstance(err, FormatError), err.file
(True, 'DONE')
"""

from __future__ import annotations

import os
import warnings

from cellspec_sc.errors import CellspecWarning, FormatError, NotFound
from cellspec_sc.spec import SPEC_TYPES


class DirectoryRefusal(FormatError):
    """Base class: a cellspec directory (or a write into one) that breaks a rule of the format."""

    rule = "the cellspec directory format (spec section 9)"

    def __init__(self, directory: str | os.PathLike, file: str | None, detail: str):
        self.directory = str(directory)
        self.file = file
        self.detail = detail
        where = f"{self.directory}: {file}: " if file else f"{self.directory}: "
        super().__init__(f"{where}{detail} [rule: {self.rule}]")

    def __reduce__(self):  # picklable with its three arguments (dask workers send refusals back)
        return type(self), (self.directory, self.file, self.detail)


class NotACellspecDirectory(DirectoryRefusal):
    rule = "a cellspec directory is a directory holding DONE, MANIFEST.sha256, cellspec.json and a cells file"


class MissingDirectory(NotACellspecDirectory, NotFound):
    """A cellspec directory that does not exist: also a :class:`FileNotFoundError`.

    >>> err = MissingDirectory("/data/run1", None, "no such directory")
    >>> isinstance(err, FileNotFoundError), isinstance(err, FormatError), err.filename
    (True, True, '/data/run1')
    """

    def __init__(self, directory: str | os.PathLike, file: str | None, detail: str):
        super().__init__(directory, file, detail)
        self.filename = self.directory


def refusal_of_non_directory(path: str | os.PathLike) -> NotACellspecDirectory:
    """The refusal of ``path`` that is not a directory: :class:`MissingDirectory` when nothing is there."""
    if not os.path.lexists(path):
        return MissingDirectory(path, None, "no such directory")
    return NotACellspecDirectory(path, None, "is not a directory")


class IncompleteDirectory(DirectoryRefusal):
    rule = "a directory without DONE was not completely written"


class DoneMismatch(DirectoryRefusal):
    rule = "DONE holds the SHA-256 of MANIFEST.sha256"


class ManifestInvalid(DirectoryRefusal):
    rule = "MANIFEST.sha256 has one '<sha256>  <relative path>' line per file (sha256sum format)"


class UnsafePath(DirectoryRefusal):
    rule = "listed paths are relative and stay inside the directory (no '..', no symlinks pointing out)"


class ListedFileMissing(DirectoryRefusal):
    rule = "every file listed in MANIFEST.sha256 exists"


class ChecksumMismatch(DirectoryRefusal):
    rule = "every listed file has the SHA-256 recorded in MANIFEST.sha256"


class UnlistedDataFile(DirectoryRefusal):
    rule = "cellspec.json and every cells or adjacency data file are listed in MANIFEST.sha256, one cells file only"


class UnsupportedVersion(DirectoryRefusal):
    rule = "spec_version is MAJOR.MINOR.PATCH with major 1 and a minor version not newer than this reader's"


class InvalidJson(DirectoryRefusal):
    rule = "cellspec.json is UTF-8 JSON"


class SchemaViolation(DirectoryRefusal):
    rule = "cellspec.json validates against cellspec-1.0.0.schema.json"


class UndecodableData(DirectoryRefusal):
    rule = "cells and adjacency files decode as Parquet or as the TSV variant"


class ColumnMismatch(DirectoryRefusal):
    rule = ("column_types lists every column of the cells and adjacency files, in file order, features last in "
            "dictionary order, with the type the file stores")


class NotARegularFile(DirectoryRefusal):
    rule = "every file of the directory is a regular file (no named pipe, device, socket or directory in its place)"


class FileTooLarge(DirectoryRefusal):
    rule = ("DONE is at most 1 KiB, MANIFEST.sha256 at most 4 KiB per file in the directory, cellspec.json at most "
            "max_metadata_bytes (256 MiB), and a gzipped TSV inflates to (or a Parquet footer claims values of) "
            "at most max_inflation (100) times the file's size")


class UnreadableFile(DirectoryRefusal):
    rule = "every file of the directory can be opened and read"


class TargetExists(DirectoryRefusal):
    rule = ("a writer does not replace an existing path unless overwrite=True, and then only one of its own kind "
            "(for write(): a complete cellspec directory or an empty directory)")


class InvalidTarget(DirectoryRefusal):
    rule = ("a target path is UTF-8 text, each of its names at most the file system's name length and the whole "
            "within its path length (checked before anything is written)")


class OutlineMissing(DirectoryRefusal):
    rule = "every images.geometry_ref names an outline file inside the directory, listed in MANIFEST.sha256"


class Unwritable(DirectoryRefusal):
    rule = f"every column has a spec type ({', '.join(SPEC_TYPES)}) and JSON parts hold JSON values"


class ChangedSinceRead(DirectoryRefusal):
    rule = ("a directory must not be replaced while it is read, nor while the measurements of a lazy read "
            "(read(path, lazy=True)) are in use")


class StoredNonFinite(DirectoryRefusal):
    rule = ("a measurement column stores NA as null; NaN or infinite values stored as numbers violate "
            "measurements_finite and are never turned into NA")


class UnlistedFileWarning(CellspecWarning):
    """A file in a cellspec directory that MANIFEST.sha256 does not list (ignored)."""


def warn_unlisted(directory: str | os.PathLike, names: list[str]) -> None:
    """Warn once about files that are ignored because the manifest does not list them."""
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    warnings.warn(f"{directory}: ignoring {len(names)} file(s) not listed in MANIFEST.sha256: {shown}",
                  UnlistedFileWarning, stacklevel=3)


def all_refusals() -> list[type[DirectoryRefusal]]:
    """Every refusal class, for the docs table."""
    return [cls for cls in DirectoryRefusal.__subclasses__()]
