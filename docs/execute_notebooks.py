"""Execute the notebooks and store their outputs in them, for the docs site.

The site shows every plot and widget picture without running anything (``make notebooks`` runs this; the site is
built with myst-nb's execution off).

    python docs/execute_notebooks.py                   # every notebook in notebooks/
    python docs/execute_notebooks.py preview.ipynb     # some of them

Each notebook runs with notebooks/ as its working directory (as the test suite runs it). Widget state is left out
of the stored notebook (a static page cannot draw it; the notebooks show each view as a PNG as well), and so are
execution counts' timing metadata, so that executing twice stores the same file.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

FOLDER = Path(__file__).resolve().parent.parent / "notebooks"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# paths of the machine that ran the notebook, as stored outputs show them: the temporary folder a notebook made
# (tempfile.mkdtemp: a prefix and 8 random characters), and the files of Python and its packages in warnings
MACHINE_PATHS = [
    (re.compile(r"/tmp/(?P<prefix>[\w.-]*?)[a-z0-9_]{8}(?=[/'\"\s<]|$)"), r"<tmp>/\g<prefix>"),
    (re.compile(r"(?:/[\w.+-]+)+/(?P<tail>site-packages|lib/python3\.\d+)/"), r".../\g<tail>/"),
    # the checkout itself (a warning raised inside the package names its file): relative to the repository
    (re.compile(re.escape(str(FOLDER.parent)) + "/"), ""),
]


def execute(path: Path) -> nbformat.NotebookNode:
    """Run ``path`` in notebooks/ and return it with its outputs (raises on the first failing cell)."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(FOLDER)}},
                   record_timing=False).execute()
    return nb


def static(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Drop what a static page cannot show, or should not: widget views and state, the machine's paths.

    A widget's text/plain stays; text outputs keep their words with the paths replaced by neutral names.
    """
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            data.pop(WIDGET_VIEW, None)
            for key in [k for k in data if k.startswith("text/")]:
                data[key] = without_machine_paths(data[key])
            if "text" in output:
                output["text"] = without_machine_paths(output["text"])
    return nb


def without_machine_paths(text: str | list[str]) -> str:
    """``text`` with the machine's temporary folders and Python paths replaced by neutral names."""
    text = "".join(text) if isinstance(text, list) else text
    for pattern, neutral in MACHINE_PATHS:
        text = pattern.sub(neutral, text)
    return text


def main(names: list[str]) -> int:
    """Execute the notebooks named (all when none) and store each with its outputs."""
    paths = [FOLDER / name for name in names] if names else sorted(FOLDER.glob("*.ipynb"))
    for path in paths:
        print(f"executing {path.name}", flush=True)
        nbformat.write(static(execute(path)), path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
