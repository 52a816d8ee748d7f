"""Markdown pieces shared by the generated docs pages.

>>> print(markdown_table(("Name", "Rule"), [("a|b", "x")]))
| Name | Rule |
|---|---|
| a\\|b | x |
"""

from __future__ import annotations

from collections.abc import Sequence


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table; ``|`` inside a cell is escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)
