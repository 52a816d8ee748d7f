"""What a benchmark ran on: cores, memory, the kind of machine, the commit and the load, for every results JSON.

>>> info = describe_machine()
>>> info["cpus"] > 0 and info["memory_gb"] > 0 and info["kind"] in ("virtual machine", "bare metal")
True
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["available_gb", "describe_machine", "machine_kind"]

ROOT = Path(__file__).resolve().parent.parent


def available_gb() -> float:
    """Memory the kernel can hand out now (``MemAvailable``), in GiB."""
    with open("/proc/meminfo") as handle:
        info = dict(line.split(":", 1) for line in handle)
    return int(info["MemAvailable"].split()[0]) / 2**20


def machine_kind(cpuinfo: str | None = None) -> str:
    """``"virtual machine"`` when the CPU flags name a hypervisor, else ``"bare metal"``.

    >>> machine_kind("flags : fpu vme hypervisor sse")
    'virtual machine'
    >>> machine_kind("flags : fpu vme sse")
    'bare metal'
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    flags = {word for line in cpuinfo.splitlines() if line.startswith("flags")
             for word in line.split(":", 1)[1].split()}
    return "virtual machine" if "hypervisor" in flags else "bare metal"


def describe_machine() -> dict[str, Any]:
    """Cores, memory, kind, commit, load average and library versions, as the results JSON records them."""
    import numpy
    import pyarrow

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return {"cpus": os.cpu_count(),
            "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "kind": machine_kind(), "available_gb_at_start": round(available_gb(), 1),
            "load_average_at_start": os.getloadavg(), "python": platform.python_version(),
            "numpy": numpy.__version__, "pyarrow": pyarrow.__version__, "commit": commit.stdout.strip() or None}


def recorded_command(module: str, argv: list[str]) -> str:
    """The command line as a figures file records it: the data folder as ``DATA`` and an output file by its name
    only, so that no machine's paths reach the repository.

    >>> recorded_command("benchmarks.run", ["--sizes", "10", "--data", "scratch/d", "--json", "out/r.json"])
    'python -m benchmarks.run --sizes 10 --data DATA --json r.json'
    """
    words = [f"python -m {module}"]
    for i, word in enumerate(argv):
        previous = argv[i - 1] if i else ""
        words.append("DATA" if previous == "--data" else Path(word).name if previous == "--json" else word)
    return " ".join(words)
