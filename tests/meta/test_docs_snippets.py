"""Snippets are tests: every Python and shell block of README.md and docs/*.md runs as written.

Each page runs in its own temporary folder, its blocks in order sharing one namespace; see tests/snippets.py
for the rules, including the only way to leave a block out (a visible ``<!-- not run: reason -->``).
"""

import doctest
import re

import matplotlib
import pytest

import snippets
from snippets import RUN, BlockFailed, blocks_of, pages, run_page, run_python

matplotlib.use("Agg")

KNOWN = {*RUN, "text", "json"}
# Pages speak of the project as it is: no tracker numbers, no promises of work that "comes later".
NOT_PROJECT_TEXT = re.compile(
    r"\bissues? #?\d+"
    r"|\b(?:comes?|coming|added|done|follows?|planned|implemented|arrives?|handled|fixed|measured|built|written"
    r"|described|covered) later\b"
    r"|\b(?:in a|until) later\b|\blater (?:issue|session|release|version|pass|step|slice|work)\b"
    r"|\bnot yet (?:implemented|supported|measured|available|done|written)\b"
    r"|\b(?:this|next|previous|a later) session\b|\bhelpers? (?:worked|shared)\b",
    re.IGNORECASE)


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_page_runs_as_written(page, tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    monkeypatch.chdir(tmp_path)
    try:
        run_page(page, tmp_path)
    finally:
        plt.close("all")


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


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_pages_speak_of_the_project_only(page):
    lines = page.read_text(encoding="utf-8").splitlines()
    found = [f"{page.name}:{n}: {m.group(0)!r}" for n, line in enumerate(lines, 1)
             for m in NOT_PROJECT_TEXT.finditer(line)]
    assert not found, "say what the project is, not which issue or session did it or what comes later:\n" + \
        "\n".join(found)


def test_the_project_text_rule_catches_what_it_should():
    caught = ["see issue 17", "Issues #3 and 4", "the benchmarks come later", "in a later session",
              "Not yet measured on a quiet machine", "while eight helpers worked"]
    fine = ["the later one becomes other", "a later cs.write of the same object", "read later from the source file",
            "tissue", "Measured under load only"]
    assert all(NOT_PROJECT_TEXT.search(t) for t in caught)
    assert not any(NOT_PROJECT_TEXT.search(t) for t in fine)


def test_readme_and_every_docs_page_are_covered():
    names = {p.name for p in pages()}
    assert {"README.md", "index.md", "object.md", "readers.md", "luxar.md", "cohorts.md"} <= names


def test_python_block_failure_names_page_and_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n\n```python\nx = 1\ny = undefined_name\n```\n", encoding="utf-8")
    block = blocks_of(page.read_text())[0]
    with pytest.raises(NameError) as err:
        run_python(block, page, {})
    frame = err.traceback[-1]
    assert frame.path == "page.md" and frame.lineno + 1 == 5  # pytest counts lines from 0


def test_a_failing_block_fails_the_page_and_a_skipped_one_does_not_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    page = tmp_path / "page.md"
    page.write_text("```python\nopen('made.txt', 'w').write('1')\n```\n"
                    "<!-- not run: stands for a block that opens a browser -->\n```bash\ntouch skipped\n```\n"
                    "```bash\ntest -f made.txt\nfalse | cat\necho never > after\n```\n", encoding="utf-8")
    with pytest.raises(BlockFailed, match=r"page.md:8: shell block exited 1"):
        run_page(page, tmp_path)
    assert not (tmp_path / "skipped").exists() and not (tmp_path / "after").exists()
    page.write_text("```bash\ntest -f made.txt\n```\n```python\nassert open('made.txt').read() == '1'\n```\n")
    assert run_page(page, tmp_path) == 2


def test_docstring_examples():
    result = doctest.testmod(snippets)
    assert result.failed == 0 and result.attempted > 0
