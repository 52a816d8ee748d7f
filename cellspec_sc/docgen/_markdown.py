"""Markdown pieces shared by the generated docs pages.

>>> print(markdown_table(("Name", "Rule"), [("a|b", "x"), ("c", None)]))
| Name | Rule |
|---|---|
| a\\|b | x |
| c |  |
"""

from __future__ import annotations

from collections.abc import Sequence


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table; ``|`` inside a cell is escaped, None is an empty cell."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join("" if c is None else str(c).replace("|", "\\|") for c in row) + " |"
              for row in rows]
    return "\n".join(lines)
