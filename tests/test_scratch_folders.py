"""Scratch folders (outline files of ``example(outlines=True)`` and of SpatialData stores): removed at exit,
and the leftovers of a killed process removed by the next process that makes one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import cellspec_sc as cs

CHILD = textwrap.dedent("""
    import os, sys, time
    import cellspec_sc as cs
    from pathlib import Path
    import tempfile
    cs.example(n_cells=12, outlines=True)
    print(next(Path(tempfile.gettempdir()).glob(f"cellspec-example-outlines-{os.getpid()}-*")), flush=True)
    if sys.argv[1] == "hang":
        time.sleep(600)
""")


def _child(mode: str) -> tuple[subprocess.Popen, Path]:
    child = subprocess.Popen([sys.executable, "-c", CHILD, mode], stdout=subprocess.PIPE, text=True)
    return child, Path(child.stdout.readline().strip())


def _outline_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_folder_of_a_process_that_exits_is_removed():
    child, folder = _child("exit")
    assert child.wait(timeout=120) == 0
    assert folder.name.startswith(f"cellspec-example-outlines-{child.pid}-")
    assert not folder.exists()


def test_folder_of_a_killed_process_is_removed_by_the_next_one_and_a_live_ones_is_kept():
    killed, left = _child("hang")
    assert _outline_files(left), "the child wrote its outline files"
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=60)
    assert left.exists(), "SIGKILL runs no exit handler: the folder is left behind"
    alive, kept = _child("hang")
    try:
        assert not left.exists(), "the next process removed the folder of the killed one"
        x = cs.example(n_cells=12, outlines=True)  # this process, while the other child still runs
        assert kept.exists() and _outline_files(kept), "a running process keeps its folder"
        ours = list(Path(tempfile.gettempdir()).glob(f"cellspec-example-outlines-{os.getpid()}-*"))
        assert ours and all(_outline_files(f) for f in ours)
        assert x.n_cells == 12
    finally:
        alive.kill()
        alive.wait(timeout=60)
