"""Fenced code blocks of the project's markdown pages, and how the snippet test runs them.

A page's ``python`` and shell blocks (``bash``, ``sh``, ``shell``) run in order in one temporary folder:
Python blocks share one namespace, shell blocks run with ``bash -e`` and the venv's ``bin`` first on PATH.
Every fence names its language (``text`` for output, layouts and syntax summaries). A block is left out
only with a visible marker on the line just above its fence: ``<!-- not run: the reason -->``.

>>> page = "<!-- not run: opens a browser -->\\n```bash\\nluxar viewer\\n```\\n```python\\nx = 1\\n```\\n"
>>> [(b.language, b.line, b.skip) for b in blocks_of(page)]
[('bash', 2, 'opens a browser'), ('python', 5, None)]
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = {"python": "python", "py": "python", "bash": "shell", "sh": "shell", "shell": "shell"}
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(?P<reason>.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<fence>```+|~~~+)\s*(?P<info>[^`\s]*)")


@dataclass(frozen=True)
class Block:
    language: str  # the fence's info string, "" when it has none
    line: int  # 1-based line of the opening fence
    code: str
    skip: str | None  # the reason of a "not run" marker above the fence


def pages() -> list[Path]:
    """README.md and every page of docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks_of(text: str) -> list[Block]:
    """Every fenced block of a markdown text, in order."""
    lines = text.splitlines()
    out, k = [], 0
    while k < len(lines):
        opening = FENCE.match(lines[k].lstrip())
        if not opening:
            k += 1
            continue
        fence = opening["fence"]
        end = next((j for j in range(k + 1, len(lines)) if lines[j].strip().startswith(fence)), len(lines))
        marker = NOT_RUN.match(lines[k - 1].strip()) if k else None
        out.append(Block(opening["info"].lower(), k + 1, "\n".join(lines[k + 1:end]) + "\n",
                         marker["reason"] if marker else None))
        k = end + 1
    return out


def run_python(block: Block, page: Path, namespace: dict) -> None:
    """Execute a Python block in ``namespace``; tracebacks name the page and its line numbers."""
    code = compile("\n" * block.line + block.code, f"{page.name}", "exec")
    exec(code, namespace)  # noqa: S102 - running the documentation is the point


def run_shell(block: Block, page: Path, cwd: Path) -> subprocess.CompletedProcess:
    """Run a shell block with ``bash -e`` in ``cwd``, the venv's bin first on PATH."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.code], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


class BlockFailed(AssertionError):
    """A shell block of a page exited with a non-zero status."""


def run_page(page: Path, cwd: Path) -> int:
    """Run every runnable block of ``page`` in order in ``cwd`` (the current directory); return how many ran.

    A Python block that raises propagates its exception (the traceback names page and line); a shell block that
    exits non-zero raises BlockFailed with its output.
    """
    namespace: dict = {"__name__": "__snippet__"}
    ran = 0
    for block in blocks_of(page.read_text(encoding="utf-8")):
        if block.skip is not None or block.language not in RUN:
            continue
        if RUN[block.language] == "python":
            run_python(block, page, namespace)
        else:
            done = run_shell(block, page, cwd)
            if done.returncode != 0:
                raise BlockFailed(f"{page.name}:{block.line}: shell block exited {done.returncode}\n"
                                  f"{done.stdout}\n{done.stderr}")
        ran += 1
    return ran
