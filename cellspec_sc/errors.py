"""Exceptions. Every error cellspec_sc raises on purpose derives from :class:`CellspecError`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cellspec_sc.validation.report import ValidationReport


class CellspecError(Exception):
    """Base class of every error this package raises on purpose.

    >>> try:
    ...     raise CellspecError("bad input")
    ... except CellspecError as err:
    ...     print(err)
    bad input
    """


class ValidationError(CellspecError):
    """An object failed structure validation; ``.report`` holds the full report."""

    def __init__(self, report: ValidationReport, context: str | None = None):
        self.report = report
        failed = ", ".join(r.name for r in report.failures)
        head = f"{context}: " if context else ""
        super().__init__(f"{head}cellspec validation failed ({failed})\n{report.format(only_problems=True)}")


class InputError(CellspecError):
    """Input that cannot be turned into a cellspec (a tool export, an AnnData, an argument)."""


class FormatError(CellspecError):
    """A file or directory that does not follow the cellspec directory format."""
