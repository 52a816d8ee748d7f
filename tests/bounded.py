"""Run the command line in a child process whose memory and time are bounded (``resource`` limits), for tests
that crafted inputs are refused before they take the machine: a child over its bound fails instead of the
machine swapping, and the test sees how it ended."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

# what the child may take beyond an idle interpreter that imported the package, anndata and zarr (their threads'
# arenas count as data: about 1.5 GB on a 64-bit Linux with MALLOC_ARENA_MAX unset)
DATA_LIMIT = 3 * 1024**3

CHILD = """
import resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
resource.setrlimit(resource.RLIMIT_CPU, (int(sys.argv[2]), int(sys.argv[2])))
from cellspec_sc.cli.main import main
sys.exit(main(sys.argv[3:]))
"""


@dataclass(frozen=True)
class Ended:
    code: int
    err: str


def cellspec_bounded(argv: list[str], *, data_bytes: int = DATA_LIMIT, seconds: int = 60) -> Ended:
    """``cellspec ARGV`` in a child with at most ``data_bytes`` of data memory and ``seconds`` of CPU time."""
    env = {**os.environ, "MALLOC_ARENA_MAX": "2"}
    done = subprocess.run([sys.executable, "-c", CHILD, str(data_bytes), str(seconds), *argv], env=env,
                          capture_output=True, text=True, timeout=seconds * 3)
    return Ended(done.returncode, done.stderr)
