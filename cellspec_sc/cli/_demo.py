"""``cellspec demo``: the main job of the package, end to end on the example."""

from __future__ import annotations

import argparse
from pathlib import Path

from cellspec_sc.io import CELLSPEC_DIRECTORY, check_target, read, write
from cellspec_sc.model import example
from cellspec_sc.validation import validate


def run_demo(out: str | Path) -> int:
    """Build the example, write it as a cellspec directory under ``out``, read it back, check that
    nothing changed, validate it and print its summary; returns the exit code.

    >>> import tempfile
    >>> run_demo(tempfile.mkdtemp())  # doctest: +ELLIPSIS
    <cellspec> spec 1.0.0
    ...
    read back: identical to what was written (bit for bit)
    ...
    0
    """
    target = check_target(Path(out) / "example.cellspec", CELLSPEC_DIRECTORY, overwrite=True)
    x = example(adjacency=True, region_layers=("tumor",))
    path = write(x, target, overwrite=True)
    y = read(path)
    print(repr(y))
    print(f"written to {path}: {', '.join(sorted(p.name for p in path.iterdir()))}")
    differences = y.differences(x)
    if differences:
        print("read back: DIFFERENT from what was written:\n  " + "\n  ".join(differences))
    else:
        print("read back: identical to what was written (bit for bit)")
    report = validate(y)
    print(report.format())
    return 0 if report.ok and not differences else 1


def cmd_demo(args: argparse.Namespace) -> int:
    return run_demo(args.out)


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="demo-output", help="folder for the demo's files (default: ./demo-output)")
    p.set_defaults(func=cmd_demo)
