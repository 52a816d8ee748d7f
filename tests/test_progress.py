"""Progress bars and logging (cellspec_sc.progress): a bar on a terminal, nothing on a pipe or below the
size threshold, a widget in a notebook, one INFO line per operation under the ``cellspec_sc`` logger."""

import doctest
import fcntl
import logging
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import nbformat
import pytest
from nbclient import NotebookClient

import cellspec_sc as cs
import cellspec_sc.progress
from cellspec_sc.cli.main import main
from cellspec_sc.spec import vocabulary

WRITE_EXAMPLE = """
import sys, cellspec_sc as cs, cellspec_sc.progress as p
p.QUIET_BELOW = int(sys.argv[1])
x = cs.example(n_cells=5000)
cs.read(cs.write(x, sys.argv[2]))
"""


def run_on_terminal(args: list[str]) -> tuple[int, str]:
    """Run ``python args`` with stderr on a pseudo-terminal 100 columns wide; (exit code, what it showed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen([sys.executable, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=slave)
    os.close(slave)
    shown = bytearray()
    while True:
        try:
            data = os.read(master, 1 << 16)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        shown += data
    os.close(master)
    return proc.wait(timeout=120), shown.decode("utf-8", "replace")


def test_docstring_examples():
    result = doctest.testmod(cellspec_sc.progress, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_terminal_shows_bars_above_the_threshold(tmp_path):
    code, shown = run_on_terminal(["-c", WRITE_EXAMPLE, "1", str(tmp_path / "a")])
    assert code == 0
    for step in ("writing cells.parquet", "validating", "reading cells.parquet"):
        assert f"{step}:" in shown, shown
    assert "rows/s]" in shown and "|" in shown


def test_terminal_stays_quiet_below_the_threshold(tmp_path):
    code, shown = run_on_terminal(["-c", WRITE_EXAMPLE, str(10**9), str(tmp_path / "a")])
    assert code == 0
    assert shown == ""


def test_pipe_gets_no_bar(tmp_path):
    done = subprocess.run([sys.executable, "-c", WRITE_EXAMPLE, "1", str(tmp_path / "a")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0
    assert done.stderr == ""


def test_quiet_hides_and_verbose_shows_whatever_the_size(tmp_path):
    script = ("import sys, cellspec_sc as cs, cellspec_sc.progress as p\n"
              "p.set_verbosity(sys.argv[1])\n"
              "cs.write(cs.example(), sys.argv[2])\n")
    code, shown = run_on_terminal(["-c", script, "verbose", str(tmp_path / "v")])
    assert code == 0 and "writing cells.parquet:" in shown
    code, shown = run_on_terminal(["-c", script.replace("cs.example()", "cs.example(n_cells=5000)")
                                   .replace("p.set_verbosity", "p.QUIET_BELOW = 1; p.set_verbosity"),
                                   "quiet", str(tmp_path / "q")])
    assert code == 0 and shown == ""


def test_each_operation_logs_one_line(tmp_path, caplog):
    x = cs.example()
    with caplog.at_level(logging.INFO, logger="cellspec_sc"):
        cs.read(cs.write(x, tmp_path / "a"))
    messages = [r.getMessage() for r in caplog.records if r.name == "cellspec_sc"]
    assert any(m.startswith("writing cells.parquet: 80 rows in ") for m in messages), messages
    assert any(m.startswith("reading cells.parquet: 80 rows in ") for m in messages), messages
    n_checks = len(vocabulary().checks) + 1  # and the portability note
    assert any(m.startswith(f"validating: {n_checks} checks in ") for m in messages), messages


def test_tsv_reading_counts_compressed_bytes(tmp_path, caplog):
    path = cs.write(cs.example(n_cells=300), tmp_path / "t", format="tsv")
    size = (path / "cells.tsv.gz").stat().st_size
    with caplog.at_level(logging.INFO, logger="cellspec_sc"):
        assert cs.read(path).n_cells == 300
    assert any(r.getMessage().startswith(f"reading cells.tsv.gz: {size:,} B in ") for r in caplog.records)


def test_notebook_shows_a_widget_bar(tmp_path):
    path = cs.write(cs.example(n_cells=2000), tmp_path / "a")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import cellspec_sc as cs\n"
        "from cellspec_sc.progress import set_verbosity\n"
        "set_verbosity('verbose')\n"
        f"x = cs.read({str(path)!r})")])
    NotebookClient(nb, timeout=240, kernel_name="python3").execute()
    kinds = [kind for out in nb.cells[0].outputs for kind in out.get("data", {})]
    assert "application/vnd.jupyter.widget-view+json" in kinds, nb.cells[0].outputs


@pytest.mark.parametrize("argv", [["-v", "convert", "example", "{out}"], ["convert", "example", "{out}", "-v"]])
def test_cli_verbose_logs_each_step_on_stderr(tmp_path, capsys, argv):
    out = str(tmp_path / "run1")
    assert main([a.format(out=out) for a in argv]) == 0
    captured = capsys.readouterr()
    assert "cellspec: writing cells.parquet: 80 rows in " in captured.err
    assert captured.out.startswith(f"wrote {out} (cellspec directory)")
    assert not logging.getLogger("cellspec_sc").handlers[1:], "the command's log handler was left behind"


def test_cli_quiet_and_default_log_nothing(tmp_path, capsys):
    assert main(["convert", "example", str(tmp_path / "a")]) == 0
    assert main(["-q", "convert", "example", str(tmp_path / "b")]) == 0
    assert capsys.readouterr().err == ""


def test_cli_quiet_and_verbose_exclude_each_other(capsys):
    assert main(["-q", "-v", "info", "example"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_cli_verbose_shows_a_bar_on_a_terminal(tmp_path):
    cli = ["-m", "cellspec_sc.cli.main"]
    code, shown = run_on_terminal([*cli, "convert", "example", str(tmp_path / "a"), "-v"])
    assert code == 0 and "writing cells.parquet:" in shown and "rows/s]" in shown
    code, shown = run_on_terminal([*cli, "convert", "example", str(tmp_path / "b")])
    assert code == 0 and shown == ""


def test_validate_problems_prints_only_what_failed_or_warned(capsys):
    assert main(["validate", "example", "--area-range", "1", "50"]) == 0
    full = capsys.readouterr().out.splitlines()
    assert main(["validate", "example", "--area-range", "1", "50", "--problems"]) == 0
    problems = capsys.readouterr().out.splitlines()
    assert problems[0] == full[0] and "1 warn" in problems[0]
    assert [line.split()[0] for line in problems[1:]] == ["WARN"]
    assert problems[1].split() in [line.split() for line in full]  # the same line (columns are narrower)
    assert any(line.split()[0] == "PASS" for line in full[1:])


COHORT_RUN = """
import sys, dask, cellspec_sc.progress as p
from cellspec_sc.cohort._run import run
p.set_verbosity(sys.argv[1])
show = {"none": None, "on": True, "off": False}[sys.argv[2]]
print(run([dask.delayed(len)("ab"), dask.delayed(len)("c")], ["a", "b"], "counting dirs", client=None,
          progress_bar=show), file=sys.stdout)
"""


@pytest.mark.parametrize(("verbosity", "show", "expected"), [
    ("normal", "none", True),  # a directory is big work: a bar on a terminal whatever its count
    ("quiet", "none", False),  # -q hides the cohort bar like every other one
    ("quiet", "on", True),     # cohort.validate(progress=True) asks for it
    ("verbose", "off", False),  # and progress=False hides it
])
def test_cohort_tasks_count_directories_with_the_one_progress_bar(verbosity, show, expected):
    code, shown = run_on_terminal(["-c", COHORT_RUN, verbosity, show])
    assert code == 0
    assert bool(re.search(r"counting dirs: .*\| [0-2]/2 ", shown)) == expected, shown
