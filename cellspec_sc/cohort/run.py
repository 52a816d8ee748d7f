"""Running cohort tasks on dask: the given Client, else the current one, else local threads.

No scheduler or worker pool of our own: with a ``distributed.Client`` the tasks
are submitted with ``client.compute`` and gathered as they finish; without one
each directory's graph runs on dask's synchronous scheduler in a local thread
pool. Results come back in the cohort's order; a task that could not run (a
worker died, an exception that escaped) becomes a :class:`Failure` naming its
directory. A progress bar counts finished directories (stderr in a terminal, a
widget in a notebook, nothing on a pipe). ``on_result(i, result)``, when given,
is called in this process as each directory's result arrives (in the order they
finish), so that the caller can start work on it while other tasks still run.

>>> import dask
>>> run([dask.delayed(sum)([1, 2]), dask.delayed(len)("abc")], ["a", "b"], "adding", client=None)
[3, 3]
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor, as_completed
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cellspec_sc.cohort.failures import failure_of
from cellspec_sc.progress import progress

if TYPE_CHECKING:
    from tqdm import tqdm


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
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="cohort") as pool:
        pending = {pool.submit(task.compute, scheduler="sync"): i for i, task in enumerate(tasks)}
        for done in as_completed(pending):
            i = pending[done]
            try:
                results[i] = done.result()
            except Exception as err:  # noqa: BLE001
                results[i] = failure_of(labels[i], err)
            arrived(i, results[i])
            bar.update(1)
    return results
