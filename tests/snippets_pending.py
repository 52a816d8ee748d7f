"""Snippets are tests: every Python and shell block of README.md and docs/*.md runs as written.

Blocks of one page share state in order (one namespace, one temporary folder); see tests/snippets.py for
the rules, including the only way to leave a block out (a visible ``<!-- not run: reason -->``).
"""

import doctest
import os

import matplotlib
import pytest

import snippets
from snippets import RUN, blocks_of, pages, run_python, run_shell

matplotlib.use("Agg")

KNOWN = {*RUN, "text", "json"}


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_page_runs_as_written(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__snippet__"}
    for block in blocks_of(page.read_text(encoding="utf-8")):
        if block.skip is not None or block.language not in RUN:
            continue
        if RUN[block.language] == "python":
            run_python(block, page, namespace)
        else:
            done = run_shell(block, page, tmp_path)
            assert done.returncode == 0, (f"{page.name}:{block.line}: shell block exited {done.returncode}\n"
                                          f"{done.stdout}\n{done.stderr}")
    os.chdir(tmp_path)  # a block that changed directory must not leak into the next page


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_every_fence_names_a_known_language(page):
    for block in blocks_of(page.read_text(encoding="utf-8")):
        assert block.language in KNOWN, (f"{page.name}:{block.line}: fence language {block.language!r}; "
                                         f"use one of {sorted(KNOWN)} ('text' for output and layouts)")


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_blocks_left_out_say_why(page):
    for block in blocks_of(page.read_text(encoding="utf-8")):
        if block.skip is not None:
            assert block.language in RUN, f"{page.name}:{block.line}: a 'not run' marker on a block that never runs"
            assert len(block.skip) >= 10, f"{page.name}:{block.line}: 'not run' needs a reason, got {block.skip!r}"


def test_readme_and_every_docs_page_are_covered():
    names = {p.name for p in pages()}
    assert "README.md" in names and "index.md" in names and "object.md" in names


def test_python_block_failure_names_page_and_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n\n```python\nx = 1\ny = undefined_name\n```\n", encoding="utf-8")
    block = blocks_of(page.read_text())[0]
    with pytest.raises(NameError) as err:
        run_python(block, page, {})
    frame = err.traceback[-1]
    assert frame.path == "page.md" and frame.lineno + 1 == 5  # pytest counts lines from 0


def test_docstring_examples():
    result = doctest.testmod(snippets)
    assert result.failed == 0 and result.attempted > 0
