"""``cellspec demo``: the main job of the package, end to end on the example."""

from __future__ import annotations

from pathlib import Path

from .example import example
from .validation import validate


def run_demo(out: str | Path) -> int:
    """Build the example, validate it and print its summary; returns the exit code."""
    out = Path(out)
    x = example()
    print(repr(x))
    report = validate(x)
    print(report.format())
    return 0 if report.ok else 1
