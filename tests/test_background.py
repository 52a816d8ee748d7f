"""Background work runs on threads kept for reuse: a call never waits for a free thread (nested work cannot hang),
idle threads end, a forked child starts with none, and work still running at exit is finished first."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import threading
import time

import pytest

from cellspec_sc import _background
from cellspec_sc._background import ThreadCache, as_completed_map, in_background, ordered_map, usable_cpus

needs_two_cpus = pytest.mark.skipif(usable_cpus() < 2, reason="with one CPU the work runs in the caller's thread")


def test_a_thread_that_finished_its_work_runs_the_next_call():
    cache = ThreadCache()
    first = cache.submit(threading.current_thread, name="cellspec-test").result(timeout=10)
    cache.wait_idle()
    assert cache.submit(threading.current_thread, name="cellspec-test").result(timeout=10) is first
    assert first is not threading.current_thread()


@needs_two_cpus
def test_background_work_runs_on_the_module_s_kept_threads():
    thread = in_background(threading.current_thread).result(timeout=10)
    assert thread.daemon and thread is not threading.current_thread()
    _background.THREADS.wait_idle()
    assert thread.is_alive()  # kept, waiting for the next call


@needs_two_cpus
def test_work_that_waits_for_work_it_handed_over_does_not_hang():
    # every item of a two-thread map waits on a two-thread map of its own, and on a third level below that
    def inner(i: int) -> int:
        return sum(ordered_map(lambda j: in_background(pow, i, j).result(timeout=20), range(3), threads=2))

    done = in_background(lambda: list(ordered_map(inner, range(6), threads=2)))
    assert done.result(timeout=60) == [sum(i ** j for j in range(3)) for i in range(6)]


def test_a_thread_idle_for_longer_than_its_limit_ends():
    cache = ThreadCache(idle_seconds=0.05)
    thread = cache.submit(threading.current_thread, name="cellspec-test").result(timeout=10)
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert cache.submit(pow, 3, 3, name="cellspec-test").result(timeout=10) == 27  # a new thread for the next call


def test_a_running_thread_is_named_after_its_work():
    cache = ThreadCache()
    assert cache.submit(lambda: threading.current_thread().name, name="cellspec-parse").result(timeout=10) == \
        "cellspec-parse"


def test_leaving_a_map_early_cancels_what_has_not_started_and_waits_for_what_has():
    started, finished = [], []

    def slow(i: int) -> int:
        started.append(i)
        time.sleep(0.05)
        finished.append(i)
        return i

    results = ordered_map(slow, range(100), threads=2)
    assert next(results) == 0
    results.close()  # the caller stops iterating
    assert sorted(started) == sorted(finished)  # every started item ran to its end before close returned
    assert len(started) < 10
    order = [i for i, _ in as_completed_map(slow, range(3), threads=2)]
    assert sorted(order) == [0, 1, 2]


def _answer_in_child(queue) -> None:
    queue.put(in_background(pow, 2, 5).result(timeout=20))


@needs_two_cpus
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_hands_work_to_threads_of_its_own():
    in_background(pow, 2, 2).result(timeout=10)  # the parent has a waiting thread, which the child does not
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_answer_in_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    assert queue.get(timeout=5) == 32


@needs_two_cpus
def test_work_still_running_at_exit_is_finished_first(tmp_path):
    target = tmp_path / "written.txt"
    code = ("import time\n"
            "from cellspec_sc._background import in_background\n"
            "def write():\n"
            "    time.sleep(0.5)\n"
            f"    open({str(target)!r}, 'w').write('complete')\n"
            "in_background(write)\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert target.read_text() == "complete"
