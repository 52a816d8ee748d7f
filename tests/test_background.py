"""Background calls: a thread that finished a call takes the next one, a call may wait for another it started, idle
threads end by themselves, and a forked child runs background calls on threads of its own."""

from __future__ import annotations

import os
import threading
import time

import pytest

from cellspec_sc import _background
from cellspec_sc._background import in_background, usable_cpus

pytestmark = pytest.mark.skipif(usable_cpus() < 2, reason="with one usable CPU background calls run in the caller")


def _thread_of_call() -> int:
    return threading.get_ident()


def _own_workers(monkeypatch) -> _background._Workers:
    workers = _background._Workers()
    monkeypatch.setattr(_background, "_WORKERS", workers)
    return workers


def _until(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)


def test_a_thread_that_finished_a_call_takes_the_next_one(monkeypatch):
    workers = _own_workers(monkeypatch)
    first = in_background(_thread_of_call).result()
    _until(lambda: workers._idle == 1)  # back waiting for a call
    assert in_background(_thread_of_call).result() == first != threading.get_ident()


def test_calls_given_at_once_run_on_threads_of_their_own():
    both_running = threading.Barrier(3, timeout=10)
    calls = [in_background(both_running.wait) for _ in range(2)]
    both_running.wait()  # would time out if the second call waited for the first to finish
    assert len({call.result(timeout=10) for call in calls}) == 2  # each passed the barrier


def test_a_background_call_may_wait_for_another_it_started():
    def outer() -> int:
        return in_background(sum, [1, 2, 3]).result() * 10

    assert in_background(outer).result(timeout=10) == 60


def test_a_call_raises_in_the_caller_what_it_raised():
    with pytest.raises(ZeroDivisionError):
        in_background(lambda: 1 / 0).result(timeout=10)


def test_the_thread_is_named_after_its_current_call():
    in_background(_thread_of_call, name="cellspec-first").result()
    assert in_background(lambda: threading.current_thread().name, name="cellspec-second").result() == "cellspec-second"


def test_idle_threads_end_after_waiting(monkeypatch):
    monkeypatch.setattr(_background, "IDLE_SECONDS", 0.05)
    workers = _own_workers(monkeypatch)
    ident = in_background(_thread_of_call).result()
    _until(lambda: not any(t.ident == ident for t in threading.enumerate()))
    assert not any(t.ident == ident for t in threading.enumerate())
    assert workers._idle == 0
    assert in_background(sum, [4, 5]).result(timeout=10) == 9  # a new thread for the next call


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this system")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")  # the idle worker
def test_a_forked_child_runs_background_calls_on_threads_of_its_own():
    in_background(sum, [1]).result()  # the parent has an idle worker, which the child does not inherit
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report the result, or nothing if the call never ran
        try:
            os.write(writer, str(in_background(sum, [20, 22]).result(timeout=5)).encode())
        finally:
            os._exit(0)
    os.close(writer)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(reader, "rb") as pipe:
        assert pipe.read() == b"42" and status == 0


def test_a_map_runs_on_the_waiting_threads(monkeypatch):
    workers = _own_workers(monkeypatch)

    def threads_of(items: range) -> set[int]:
        both = threading.Barrier(2, timeout=10)  # the first two items run at once: one on each lane

        def call(i: int) -> int:
            if i < 2:
                both.wait()
            return _thread_of_call()

        return set(_background.ordered_map(call, items, threads=2))

    first = threads_of(range(40))
    _until(lambda: workers._idle == 2)
    assert len(first) == 2 and threads_of(range(40)) == first  # the same two threads the second time


def test_a_map_left_early_waits_for_the_items_it_started_and_starts_no_more():
    started, finished = [], []

    def slow(i: int) -> int:
        started.append(i)
        time.sleep(0.02)
        finished.append(i)
        return i

    results = _background.ordered_map(slow, range(100), threads=2)
    assert next(results) == 0
    results.close()  # the caller stops iterating
    assert sorted(finished) == sorted(started) and len(started) <= 5  # two lanes, four in flight
    time.sleep(0.1)
    assert len(started) == len(finished) <= 5  # nothing started after the map ended
