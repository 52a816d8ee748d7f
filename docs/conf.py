"""Sphinx configuration of the cellspec_sc documentation site (``make docs``: ``sphinx-build -W docs docs/_build``).

The layout follows the scverse cookiecutter template: MyST Markdown pages, the notebooks rendered with their stored
outputs by myst-nb (never executed at docs time: ``make notebooks`` executes them and stores the outputs),
autosummary pages for every public name, numpydoc docstrings read by napoleon, the book theme.
"""

from __future__ import annotations

import posixpath
import re
import shutil
import sys
from datetime import date
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

project = "cellspec_sc"
author = "cellspec_sc maintainers"
copyright = f"{date.today().year}, {author}"  # noqa: A001 (Sphinx's name)
release = version("cellspec_sc")
version = release  # noqa: F811 (Sphinx reads both names)

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx_copybutton",
    "sphinxarg.ext",
]

# the pages: MyST Markdown as the test suite runs it; the notebooks are copied in from notebooks/ (see below)
root_doc = "index"
# .rst first: autosummary writes its pages with the first suffix
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "_templates", "_ext", "**.ipynb_checkpoints", "*.py"]
# an illustrative JSON block holds "..."; sphinx-argparse's domain cannot resolve MyST's "any" references
suppress_warnings = ["misc.highlighting_failure", "myst.domains"]
templates_path = ["_templates"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # outputs are stored by `make notebooks`
nb_merge_streams = True

# the API reference
autosummary_generate = True
autodoc_member_order = "groupwise"
autodoc_typehints = "description"
autodoc_default_options = {"members": False}
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = True
napoleon_use_param = True
napoleon_custom_sections = [("Yields", "returns_style")]

html_theme = "sphinx_book_theme"
html_title = "cellspec_sc"
html_static_path: list[str] = []
html_theme_options = {"use_download_button": False, "show_toc_level": 2}


def copy_notebooks(app) -> None:
    """Copy notebooks/*.ipynb to docs/tutorials/, where the tutorial pages are built from.

    The copy is ignored by git: notebooks/ stays the one place a notebook is edited and executed.
    """
    target = HERE / "tutorials"
    target.mkdir(exist_ok=True)
    for notebook in sorted((HERE.parent / "notebooks").glob("*.ipynb")):
        copy = target / notebook.name
        if not copy.exists() or copy.read_bytes() != notebook.read_bytes():
            shutil.copyfile(notebook, copy)


# a link from a page to a Markdown file of the repository outside docs/ (``../benchmarks/RESULTS.md``): the page
# keeps it (it is right on a code host), the site shows a copy of the file under docs/repository/, which mirrors the
# repository's layout (so the copies' links among themselves hold), and the copies' links to docs/ pages are
# pointed back at those pages
REPO = HERE.parent
MD_LINK = re.compile(r"\]\((?P<path>[\w./-]+?\.md)(?P<anchor>#[\w-]*)?\)")


def copy_outside_pages(app) -> None:
    """Copy the repository's Markdown files that docs pages link to (and those they link to) into docs/repository/."""
    todo, seen = sorted(HERE.glob("*.md")), set()
    while todo:
        page = todo.pop()
        for found in MD_LINK.finditer(page.read_text(encoding="utf-8")):
            target = (page.parent / found["path"]).resolve()
            if target in seen or not target.is_file() or target.is_relative_to(HERE) \
                    or not target.is_relative_to(REPO):
                continue
            seen.add(target)
            copy = HERE / "repository" / target.relative_to(REPO)
            if not copy.exists() or copy.read_bytes() != target.read_bytes():
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(target, copy)
            todo.append(target)


def link_outside_pages(app, docname: str, source: list[str]) -> None:
    """Point a page's links to ``../X.md`` at the copy ``repository/X.md``, a copy's links back at the pages.

    A copy is an orphan page: reached by its links, not by the table of contents.
    """
    if "/" not in docname:
        source[0] = MD_LINK.sub(lambda m: f"](repository/{m['path'][3:]}{m['anchor'] or ''})"
                                if m["path"].startswith("../") else m.group(0), source[0])
    elif docname.startswith("repository/"):
        folder = posixpath.dirname(docname.removeprefix("repository/"))

        def to_docs(m: re.Match) -> str:
            target = posixpath.normpath(posixpath.join(folder, m["path"]))
            if not target.startswith("docs/"):
                return m.group(0)
            relative = posixpath.relpath(target.removeprefix("docs/"), posixpath.dirname(docname) or ".")
            return f"]({relative}{m['anchor'] or ''})"

        source[0] = "---\norphan: true\n---\n" + MD_LINK.sub(to_docs, source[0])


def setup(app) -> None:
    """Connect the copies of notebooks and outside pages, and the link rewriting, to the build."""
    app.connect("builder-inited", copy_notebooks)
    app.connect("builder-inited", copy_outside_pages)
    app.connect("source-read", link_outside_pages)
