"""Every notebook in notebooks/ is executed by the test suite (each capability ships one), in place: a notebook
writes its outputs to a temporary folder that its last cell removes, so it runs again in place and leaves nothing
behind in notebooks/."""

from __future__ import annotations

import subprocess
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

FOLDER = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(FOLDER.glob("*.ipynb"))
WRITES_NOTHING = {"foundation.ipynb"}  # only looks at the example object


def git_status() -> list[str]:
    """``git status --porcelain notebooks/`` (untracked files listed one by one)."""
    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "notebooks/"],
                          cwd=FOLDER.parent, capture_output=True, text=True, check=True)
    return sorted(done.stdout.splitlines())


def run_in_place(path: Path) -> nbformat.NotebookNode:
    """Execute a notebook with notebooks/ as its working directory; the file itself is not rewritten."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(FOLDER)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, "\n".join(f"{e.ename}: {e.evalue}" for e in errors)
    return nb


def last_result(nb: nbformat.NotebookNode) -> str:
    cell = [c for c in nb.cells if c.cell_type == "code"][-1]
    return "".join(o["data"]["text/plain"] for o in cell.outputs if o.output_type == "execute_result")


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no notebook"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_in_place_and_leaves_nothing(path):
    before = git_status()
    runs = 2 if path.name == "anndata.ipynb" else 1  # the second run used to stop at TargetExists
    for _ in range(runs):
        nb = run_in_place(path)
        assert git_status() == before, f"{path.name} left files in notebooks/"
    if path.name not in WRITES_NOTHING:
        source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        assert "tempfile.mkdtemp(" in source and "shutil.rmtree(work)" in source
        assert last_result(nb) == "False", "the last cell removes the temporary folder and shows work.exists()"
