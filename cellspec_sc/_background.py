"""Work beside the main thread: the one place that starts threads.

Reading, hashing and writing overlap (a file is hashed while it is parsed, a block is written while the next is
encoded). Every such overlap goes through these few functions, so that the number of threads, their names and how
an error crosses back to the caller are decided once.

The threads are kept for reuse (:class:`ThreadCache`): a call takes a thread that is waiting for work or starts one,
so a small read no longer starts (and joins) a thread per overlap, about 0.1 ms each. A call never waits for a
thread to be free: work handed over from inside other background work (a table parsed in pieces while the images of
a folder are parsed on every core) gets a thread of its own, so nested waits cannot hang.

>>> in_background(sum, [1, 2]).result()
3
>>> list(ordered_map(lambda v: v * v, range(5), threads=2))
[0, 1, 4, 9, 16]
>>> sorted((i, done.result()) for i, done in as_completed_map(len, ["ab", "c"], threads=2))
[(0, 2), (1, 1)]
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from contextlib import contextmanager
from typing import Any

__all__ = ["Future", "ThreadCache", "as_completed_map", "daemon", "in_background", "in_order", "in_turn",
           "ordered_map", "usable_cpus"]


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
    return THREADS.submit(fn, *args, name=name)


def ordered_map[T, R](fn: Callable[[T], R], items: Iterable[T], *, threads: int,
                   name: str = "cellspec-map") -> Iterator[R]:
    """``fn`` over ``items`` on up to ``threads`` threads, results in order, at most ``2 * threads`` in flight.

    Leaving early (an error, or the caller stops iterating) cancels the items not started and waits for the
    started ones."""
    if threads <= 1:
        yield from map(fn, items)
        return
    lanes = Lanes(fn, threads, name)
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


def as_completed_map[T, R](fn: Callable[[T], R], items: Iterable[T], *, threads: int,
                        name: str = "cellspec-map") -> Iterator[tuple[int, Future[R]]]:
    """``fn`` over ``items``, every item handed over at once to up to ``threads`` threads; ``(index, future)`` of
    each as it finishes, in the order they finish (``.result()`` returns or raises what ``fn`` did)."""
    lanes = Lanes(fn, max(threads, 1), name)
    try:
        pending = {lanes.add(item): i for i, item in enumerate(items)}
        for done in as_completed(pending):
            yield pending[done], done
    finally:
        lanes.close()


class Lanes[T, R]:
    """``fn`` over items handed in one by one, on at most ``threads`` threads of :data:`THREADS` at once, each
    item's result in its own Future (what :func:`ordered_map` and :func:`as_completed_map` run on).

    >>> lanes = Lanes(lambda v: v + 1, 2, "doctest-lanes")
    >>> futures = [lanes.add(v) for v in range(5)]
    >>> [f.result() for f in futures]
    [1, 2, 3, 4, 5]
    >>> lanes.close()
    """

    def __init__(self, fn: Callable[[T], R], threads: int, name: str) -> None:
        self._fn, self._threads, self._name = fn, threads, name
        self._lock = threading.Lock()
        self._todo: deque[tuple[Future[R], T]] = deque()
        self._running = 0  # lanes at work: each takes items until none is left
        self._futures: list[Future[R]] = []

    def add(self, item: T) -> Future[R]:
        """Hand ``item`` in; a lane starts when fewer than ``threads`` are at work."""
        future: Future[R] = Future()
        with self._lock:
            self._todo.append((future, item))
            self._futures.append(future)
            start = self._running < self._threads
            self._running += start
        if start:
            THREADS.submit(self._lane, name=self._name)
        return future

    def close(self) -> None:
        """Cancel the items not started and wait for those started."""
        with self._lock:
            for future, _ in self._todo:
                if future.cancel():
                    future.set_running_or_notify_cancel()  # what a waiter on it is told (a lane never takes it)
            self._todo.clear()
        wait(self._futures)
        self._futures = []

    def _lane(self) -> None:
        while True:
            with self._lock:
                if not self._todo:
                    self._running -= 1
                    return
                future, item = self._todo.popleft()
            if future.set_running_or_notify_cancel():
                _run(future, self._fn, item)


def _run(future: Future[Any], fn: Callable[..., Any], *args: Any) -> None:
    try:
        result = fn(*args)
    except BaseException as err:  # noqa: BLE001 - handed to the caller through .result(), as a thread pool does
        future.set_exception(err)
    else:
        future.set_result(result)


class ThreadCache:
    """Threads that run the calls handed to :meth:`submit` and are kept, waiting, for the next ones.

    A call goes to a waiting thread, or to a new one when none waits: never queued behind other work, so work that
    waits for work it handed over cannot hang. A thread that waits longer than ``idle_seconds`` ends. The threads
    are daemons; at exit, the calls still running are waited for (as a thread pool's are). A child process made by
    ``fork`` starts with no threads.

    >>> cache = ThreadCache()
    >>> cache.submit(pow, 2, 10, name="doctest-cache").result()
    1024
    """

    def __init__(self, idle_seconds: float = 10.0) -> None:
        self.idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...], str]] = \
            queue.SimpleQueue()
        self._waiting = 0  # threads waiting for a call that no call handed in has counted on
        self._busy = 0  # calls handed in and not ended (what exit waits for)
        self._idle = threading.Condition(self._lock)

    def submit[R](self, fn: Callable[..., R], *args: Any, name: str) -> Future[R]:
        """Run ``fn(*args)`` on a thread named ``name`` while it runs; the Future gives its result or error."""
        future: Future[R] = Future()
        with self._lock:
            start = not self._waiting
            self._waiting -= not start
            self._busy += 1
        if start:
            try:
                threading.Thread(target=self._work, name=name, daemon=True).start()
            except BaseException:  # no thread (a limit, or the interpreter shutting down): nothing was handed in
                with self._lock:
                    self._busy -= 1
                raise
        self._calls.put((future, fn, args, name))
        return future

    def wait_idle(self) -> None:
        """Wait until every call handed in has ended."""
        with self._idle:
            self._idle.wait_for(lambda: not self._busy)

    def _work(self) -> None:
        thread = threading.current_thread()
        while True:
            try:
                future, fn, args, name = self._calls.get(timeout=self.idle_seconds)
            except queue.Empty:
                with self._lock:
                    if self._waiting:  # no call counts on this thread
                        self._waiting -= 1
                        return
                continue  # a call counted on a waiting thread: it is on its way
            thread.name = name
            try:
                if future.set_running_or_notify_cancel():
                    _run(future, fn, *args)
            finally:
                del future, fn, args  # nothing of the call outlives it while the thread waits
                thread.name = "cellspec-waiting"
                with self._lock:
                    self._busy -= 1
                    self._waiting += 1
                    self._idle.notify_all()


THREADS = ThreadCache()
"""The threads every function of this module runs its work on."""


def _new_cache_in_child() -> None:
    global THREADS
    THREADS = ThreadCache()  # the parent's threads do not exist in a forked child


os.register_at_fork(after_in_child=_new_cache_in_child)
atexit.register(lambda: THREADS.wait_idle())  # background work finishes, as a thread pool's does at exit


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
