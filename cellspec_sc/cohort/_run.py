"""Running per-directory work on dask, and what goes wrong in it.

**Running.** No scheduler or worker pool of our own: with a ``distributed.Client`` the tasks
are submitted with ``client.compute`` and gathered as they finish; without one
each directory's graph runs on dask's synchronous scheduler in local threads
(:func:`cellspec_sc._background.as_completed_map`). Results come back in the cohort's order; a task that
could not run (a worker died, an exception that escaped) becomes a :class:`Failure` naming its
directory. A progress bar counts finished directories (stderr in a terminal, a
widget in a notebook, nothing on a pipe). ``on_result(i, result)``, when given,
is called in this process as each directory's result arrives (in the order they
finish), so that the caller can start work on it while other tasks still run.

>>> import dask
>>> run([dask.delayed(sum)([1, 2]), dask.delayed(len)("abc")], ["a", "b"], "adding", client=None)
[3, 3]

**Failures.** Worker tasks never raise (:func:`guarded`): they return a :class:`Failure` naming the
directory, so one broken directory is reported while the others finish.

>>> f = Failure("runs/s1", "ChecksumMismatch", "cells.parquet: SHA-256 is ...")
>>> print(CohortError("summary failed for 1 directory", [f]))
summary failed for 1 directory
  runs/s1: ChecksumMismatch: cells.parquet: SHA-256 is ...
"""

from __future__ import annotations

import math
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import TYPE_CHECKING, Any

import dask

from cellspec_sc._background import as_completed_map
from cellspec_sc.errors import CellspecError
from cellspec_sc.progress import progress

if TYPE_CHECKING:
    from tqdm import tqdm


@dataclass(frozen=True)
class Failure:
    """One directory's failure: the check (or exception class) and its message.

    Parameters
    ----------
    directory
        The directory as given to :func:`~cellspec_sc.open_cohort` (several, comma-separated, for a cohort check).
    check
        The check that failed, or the class of the refusal.
    message
        What failed, naming file, column, rows and rule.
    detail
        The traceback of an unexpected exception (empty for refusals).

    Examples
    --------
    >>> from cellspec_sc.cohort import Failure
    >>> str(Failure("run1", "cells_key_unique", "2 duplicated keys"))
    'run1: cells_key_unique: 2 duplicated keys'
    """

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



def current_client(client: Any = None) -> Any:
    """``client``, else the current ``distributed.Client`` (the last one created), else None."""
    if client is not None:
        return client
    try:
        from distributed import default_client
    except ImportError:  # pragma: no cover - distributed is a dependency
        return None
    try:
        return default_client()
    except ValueError:  # no client in this process
        return None


def worker_threads(client: Any = None) -> int:
    """Threads that run tasks: those of the workers of ``client`` (else of the current client), else this
    machine's cores (dask's local threads).

    >>> worker_threads() == (os.cpu_count() or 1)
    True
    """
    client = current_client(client)
    if client is None:
        return os.cpu_count() or 1
    return max(1, sum(client.nthreads().values()))


def run(tasks: list[Any], labels: list[str], description: str, *, client: Any = None,
        progress_bar: bool | None = None, on_result: Callable[[int, Any], None] | None = None) -> list[Any]:
    """Compute one dask ``Delayed`` per directory; results in order, failures as :class:`Failure`.

    The bar counting directories (:func:`cellspec_sc.progress.progress`) is shown on a terminal unless the
    verbosity is quiet (a directory is big work), always with ``progress_bar=True``, never with False.
    ``on_result(i, result)``: called here for each directory as its result (or Failure) arrives."""
    client = current_client(client)
    arrived = on_result or (lambda i, result: None)
    with progress(len(tasks), description, unit="dir", size=math.inf, show=progress_bar) as bar:
        if client is None:
            return _run_local(tasks, labels, bar, arrived)
        return _run_distributed(client, tasks, labels, bar, arrived)


def _run_distributed(client: Any, tasks: list[Any], labels: list[str], bar: tqdm,
                     arrived: Callable[[int, Any], None]) -> list[Any]:
    from distributed import as_completed as finished

    futures = client.compute(tasks)
    position = {future.key: i for i, future in enumerate(futures)}
    results: list[Any] = [None] * len(tasks)
    for future in finished(futures, loop=client.loop):  # this client's loop, also when it is not the default
        i = position[future.key]
        try:
            results[i] = future.result()
        except Exception as err:  # noqa: BLE001 - e.g. KilledWorker: reported for this directory
            results[i] = failure_of(labels[i], err)
        future.release()
        arrived(i, results[i])
        bar.update(1)
    return results


def _run_local(tasks: list[Any], labels: list[str], bar: tqdm, arrived: Callable[[int, Any], None]) -> list[Any]:
    results: list[Any] = [None] * len(tasks)
    for i, done in as_completed_map(_compute_here, tasks, threads=os.cpu_count() or 1, name="cohort"):
        try:
            results[i] = done.result()
        except Exception as err:  # noqa: BLE001 - reported for this directory
            results[i] = failure_of(labels[i], err)
        arrived(i, results[i])
        bar.update(1)
    return results


def _compute_here(task: Any) -> Any:
    """One directory's graph on dask's synchronous scheduler, in the calling thread."""
    return task.compute(scheduler="sync")
