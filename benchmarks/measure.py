"""Timing and peak memory of one operation inside a worker process.

Peak memory is the process's resident high-water mark (``VmHWM``) during the
operation: Linux lets a process reset it by writing ``5`` to
``/proc/self/clear_refs``, so each repetition is measured on its own. Where the
reset is not available, the high-water mark of the whole (fresh) worker
process is reported instead, which includes its setup.

>>> t = time_operation(lambda i: sum(range(1000)), repeat=2)
>>> len(t["times"]), t["peak_bytes"] > 0
(2, True)
"""

from __future__ import annotations

import gc
import os
import re
import time
from collections.abc import Callable
from typing import Any

_STATUS = "/proc/self/status"


def _status_kib(field: str) -> int:
    with open(_STATUS) as handle:
        match = re.search(rf"^{field}:\s+(\d+) kB", handle.read(), re.M)
    return int(match.group(1)) if match else 0


def resident_bytes() -> int:
    """Current resident set size of this process."""
    return _status_kib("VmRSS") * 1024


def peak_bytes() -> int:
    """Resident high-water mark of this process since the last :func:`reset_peak`."""
    return _status_kib("VmHWM") * 1024


def free_bytes() -> int:
    """Memory the kernel has free right now (``MemFree``: not counting the page cache it would first have to
    reclaim, which a fresh allocation pays for)."""
    with open("/proc/meminfo") as handle:
        match = re.search(r"^MemFree:\s+(\d+) kB", handle.read(), re.M)
    return int(match.group(1)) * 1024 if match else 0


def reset_peak() -> bool:
    """Reset the high-water mark to the current RSS; False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def time_operation(run: Callable[[int], Any], repeat: int, cleanup: Callable[[int], Any] | None = None,
                   inspect: Callable[[Any], dict[str, Any]] | None = None,
                   timer: Callable[[], float] | None = None) -> dict[str, Any]:
    """Run ``run(i)`` ``repeat`` times: wall and CPU times (all threads of this process), the highest peak
    RSS, the RSS before the operation and the largest growth (peak minus RSS before) of one repetition.

    ``inspect`` is called (untimed) on the first result, before it is dropped; its facts are merged in.
    ``timer``, when given, returns the time to record for the repetition just run instead of its wall
    time (for an operation that times a part of itself).
    """
    times, cpu, peaks, before, growth, facts = [], [], [], [], [], {}
    load, free = [], []  # what the machine was doing: to tell noise from a change
    for i in range(repeat):
        gc.collect()
        load.append(os.getloadavg()[0])
        free.append(free_bytes())
        per_operation = reset_peak()
        before.append(resident_bytes())
        start, start_cpu = time.perf_counter(), time.process_time()
        result = run(i)
        wall = time.perf_counter() - start
        cpu.append(time.process_time() - start_cpu)
        times.append(timer() if timer is not None else wall)
        peaks.append(peak_bytes())
        growth.append(peaks[-1] - before[-1])
        if i == 0 and inspect is not None:
            facts = inspect(result)
        del result
        if cleanup is not None:
            cleanup(i)
    return {"times": times, "cpu_times": cpu, "peak_bytes": max(peaks), "rss_before_bytes": min(before),
            "peak_growth_bytes": max(growth),
            "peak_is_per_operation": per_operation, "load_before": load, "free_bytes_before": free, **facts}
