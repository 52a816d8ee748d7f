"""What goes wrong in a cohort operation: a :class:`Failure` per directory, and :class:`CohortError`.

Worker tasks never raise: they return a :class:`Failure` naming the directory,
so one broken directory is reported while the others finish.

>>> f = Failure("runs/s1", "ChecksumMismatch", "cells.parquet: SHA-256 is ...")
>>> print(CohortError("summary failed for 1 directory", [f]))
summary failed for 1 directory
  runs/s1: ChecksumMismatch: cells.parquet: SHA-256 is ...
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

import dask

from cellspec_sc.errors import CellspecError


@dataclass(frozen=True)
class Failure:
    """One directory's failure: the check (or exception class) and its message."""

    directory: str
    check: str
    message: str
    detail: str = ""  # traceback of an unexpected exception (empty for refusals)

    def __str__(self) -> str:
        return f"{self.directory}: {self.check}: {self.message}"


class CohortError(CellspecError):
    """A cohort refused, or an operation that failed for some directories (``failures``); ``result``
    holds what the other directories produced."""

    def __init__(self, message: str, failures: list[Failure] | None = None, result: Any = None):
        self.failures = list(failures or [])
        self.result = result
        lines = [message] + [f"  {f}" for f in self.failures]
        super().__init__("\n".join(lines))
        self.message = message

    def __reduce__(self):
        return type(self), (self.message, self.failures, self.result)


def failure_of(label: str, err: BaseException) -> Failure:
    """A Failure for an exception raised while working on directory ``label``."""
    expected = isinstance(err, (CellspecError, OSError))
    detail = "" if expected else "".join(traceback.format_exception(err))
    message = str(err) if not isinstance(err, OSError) else f"{err.filename}: {err.strerror or err}"
    return Failure(label, type(err).__name__, message, detail)


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Make a task ``fn(member, ...)`` return a Failure instead of raising; a Failure among its
    arguments (from a task it depends on) is passed on unchanged."""

    @wraps(fn)
    def task(member: Any, *args: Any, **kwargs: Any) -> Any:
        earlier = first_failure(args)
        if earlier is not None:
            return earlier
        try:
            with dask.config.set(scheduler="sync"):  # a dask array inside a task is computed in the task
                return fn(member, *args, **kwargs)
        except Exception as err:  # noqa: BLE001 - reported per directory, never aborts the others
            return failure_of(member.label, err)

    return task


def first_failure(values: Any) -> Failure | None:
    """The first Failure in ``values`` (nested lists and tuples searched)."""
    for value in values:
        if isinstance(value, Failure):
            return value
        if isinstance(value, (list, tuple)):
            found = first_failure(value)
            if found is not None:
                return found
    return None
