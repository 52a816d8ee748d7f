"""Work beside the main thread: the one place that starts threads.

Reading, hashing and writing overlap (a file is hashed while it is parsed, a block is written while the next is
encoded). Every such overlap goes through these few functions, so that the number of threads, their names and how
an error crosses back to the caller are decided once.

>>> in_background(sum, [1, 2]).result()
3
>>> list(ordered_map(lambda v: v * v, range(5), threads=2))
[0, 1, 4, 9, 16]
>>> sorted((i, done.result()) for i, done in as_completed_map(len, ["ab", "c"], threads=2))
[(0, 2), (1, 1)]
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any

__all__ = ["Future", "as_completed_map", "daemon", "in_background", "in_order", "in_turn", "ordered_map",
           "usable_cpus"]


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def in_background[T](fn: Callable[..., T], *args: Any, name: str = "cellspec-background") -> Future[T]:
    """Run ``fn(*args)`` on another thread while the caller goes on; ``.result()`` waits and raises what it raised.

    With one usable CPU the call runs at once in the caller's thread (a second thread would only take turns).
    """
    if usable_cpus() < 2:
        done: Future[T] = Future()
        try:
            done.set_result(fn(*args))
        except BaseException as err:  # noqa: BLE001 - handed to the caller through .result(), like a thread's
            done.set_exception(err)
        return done
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
    try:
        return pool.submit(fn, *args)
    finally:
        pool.shutdown(wait=False)  # the thread ends when fn returns


def ordered_map[T, R](fn: Callable[[T], R], items: Iterable[T], *, threads: int,
                   name: str = "cellspec-map") -> Iterator[R]:
    """``fn`` over ``items`` on up to ``threads`` threads, results in order, at most ``2 * threads`` in flight."""
    if threads <= 1:
        yield from map(fn, items)
        return
    pending: deque[Future[R]] = deque()
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name) as pool:
        try:
            for item in items:
                pending.append(pool.submit(fn, item))
                if len(pending) >= 2 * threads:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def as_completed_map[T, R](fn: Callable[[T], R], items: Iterable[T], *, threads: int,
                        name: str = "cellspec-map") -> Iterator[tuple[int, Future[R]]]:
    """``fn`` over ``items``, every item submitted at once to up to ``threads`` threads; ``(index, future)`` of
    each as it finishes, in the order they finish (``.result()`` returns or raises what ``fn`` did)."""
    with ThreadPoolExecutor(max_workers=max(threads, 1), thread_name_prefix=name) as pool:
        pending = {pool.submit(fn, item): i for i, item in enumerate(items)}
        try:
            for done in as_completed(pending):
                yield pending[done], done
        finally:
            for future in pending:
                future.cancel()


def in_order(name: str) -> ThreadPoolExecutor:
    """One thread that runs the blocks submitted to it one after the other, in the order given (a writer that
    hands each full block to the disk while the caller fills the next); ``submit`` returns a Future,
    ``shutdown(wait=True)`` waits for the last block and ends the thread.

    >>> writer = in_order("doctest-writer")
    >>> done = [writer.submit(pow, 2, n) for n in range(4)]
    >>> writer.shutdown(wait=True)
    >>> [f.result() for f in done]
    [1, 2, 4, 8]
    """
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)


@contextmanager
def in_turn(*, name: str) -> Iterator[Callable[..., Future[Any]]]:
    """One thread that runs the calls handed to it one after another, in the order given, beside the caller.

    Yields ``submit(fn, *args) -> Future``; leaving the block waits for every call handed in.

    >>> with in_turn(name="cellspec-example") as submit:
    ...     futures = [submit(pow, 2, k) for k in range(3)]
    >>> [f.result() for f in futures]
    [1, 2, 4]
    """
    pool = in_order(name)
    try:
        yield pool.submit
    finally:
        pool.shutdown(wait=True)


def daemon(target: Callable[[], None], *, name: str) -> threading.Thread:
    """Start ``target`` on a daemon thread (one that follows a file or flushes behind a writer) and return it."""
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread
