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
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from contextlib import contextmanager
from queue import Empty, SimpleQueue
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

    The thread is one of :data:`_WORKERS`: an idle one when there is one, else a new one. With one usable CPU the call
    runs at once in the caller's thread (a second thread would only take turns).
    """
    done: Future[T] = Future()
    if usable_cpus() < 2:
        _run(done, fn, args)
        return done
    _WORKERS.submit(done, fn, args, name)
    return done


def _run(done: Future[Any], fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    if not done.set_running_or_notify_cancel():
        return
    try:
        result = fn(*args)
    except BaseException as err:  # noqa: BLE001 - handed to the caller through .result(), like a thread's
        done.set_exception(err)
    else:
        done.set_result(result)


class _Workers:
    """Threads for :func:`in_background` that wait :data:`IDLE_SECONDS` for the next call before they end.

    Starting a thread costs the caller 0.1-0.3 ms on a small virtual machine (``Thread.start`` waits until the new
    thread runs), about what a read of a few thousand rows hands to other threads twice (a piece to parse, a file
    to hash); a thread that waits for work takes a call in a few microseconds. There is no limit on the threads: a
    call never waits for another to finish (one background call may wait for another that it started), and idle
    threads end by themselves. They are daemon threads, so an idle one never holds up the end of the program, and a
    forked child starts with none (its parent's threads do not exist there). A waiting thread costs its stack's
    address space for a second at most; the malloc arena a thread used outlives it whether it waits or ends.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...], str]] = SimpleQueue()
        self._idle = 0  # threads waiting for a call that no call has been handed to yet

    def submit(self, done: Future[Any], fn: Callable[..., Any], args: tuple[Any, ...], name: str) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1
                self._calls.put((done, fn, args, name))
                return
        threading.Thread(target=self._work, args=((done, fn, args, name),), name=name, daemon=True).start()

    def _work(self, call: tuple[Future[Any], Callable[..., Any], tuple[Any, ...], str]) -> None:
        while True:
            done, fn, args, name = call
            threading.current_thread().name = name
            _run(done, fn, args)
            del done, fn, args  # nothing of a finished call is kept alive while waiting
            with self._lock:
                self._idle += 1
            try:
                call = self._calls.get(timeout=IDLE_SECONDS)
            except Empty:
                with self._lock:
                    try:
                        call = self._calls.get_nowait()  # handed over just as the wait ended
                    except Empty:
                        self._idle -= 1
                        return

    def _forget(self) -> None:
        self.__init__()


# How long a background thread waits for the next call before it ends.
IDLE_SECONDS = 1.0
_WORKERS = _Workers()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WORKERS._forget)


def ordered_map[T, R](fn: Callable[[T], R], items: Iterable[T], *, threads: int,
                   name: str = "cellspec-map") -> Iterator[R]:
    """``fn`` over ``items`` on up to ``threads`` threads, results in order, at most ``2 * threads`` in flight.

    Leaving early (an error, or the caller stops iterating) cancels the items not started and waits for the
    started ones."""
    if threads <= 1:
        yield from map(fn, items)
        return
    lanes = _Lanes(fn, threads, name)
    pending: deque[Future[R]] = deque()
    try:
        for item in items:
            pending.append(lanes.add(item))
            if len(pending) >= 2 * threads:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        lanes.close()


class _Lanes[T, R]:
    """``fn`` over items handed in one by one, on at most ``threads`` background calls at once: each call (a lane)
    takes items until none is left, so a map runs on the threads waiting in :data:`_WORKERS` instead of starting
    threads of its own.

    >>> lanes = _Lanes(lambda v: v + 1, 2, "doctest-lanes")
    >>> futures = [lanes.add(v) for v in range(5)]
    >>> [f.result() for f in futures]
    [1, 2, 3, 4, 5]
    >>> lanes.close()
    """

    def __init__(self, fn: Callable[[T], R], threads: int, name: str) -> None:
        self._fn, self._threads, self._name = fn, threads, name
        self._lock = threading.Lock()
        self._todo: deque[tuple[Future[R], T]] = deque()
        self._running = 0  # lanes at work
        self._lanes: list[Future[None]] = []

    def add(self, item: T) -> Future[R]:
        """Hand ``item`` in; a lane starts when fewer than ``threads`` are at work."""
        future: Future[R] = Future()
        with self._lock:
            self._todo.append((future, item))
            start = self._running < self._threads
            self._running += start
        if start:
            self._lanes.append(in_background(self._lane, name=self._name))
        return future

    def close(self) -> None:
        """Cancel the items not started and wait for the lanes to end (the items they started included)."""
        with self._lock:
            for future, _ in self._todo:
                future.cancel()
            self._todo.clear()
        wait(self._lanes)

    def _lane(self) -> None:
        while True:
            with self._lock:
                if not self._todo:
                    self._running -= 1
                    return
                future, item = self._todo.popleft()
            _run(future, self._fn, (item,))


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
