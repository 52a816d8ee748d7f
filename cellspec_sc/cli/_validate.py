"""``cellspec validate SOURCE``: print the validation report; exit 0 when valid, 1 when not.

>>> from cellspec_sc.cli.main import main
>>> main(["validate", "example"])  # doctest: +ELLIPSIS
cellspec validation: OK (48 pass, 0 fail, 0 warn, 4 skip)
...
0
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from cellspec_sc.cli._sources import add_storage_options, load, storage_options_of
from cellspec_sc.cli.main import EXIT_INVALID, EXIT_OK
from cellspec_sc.errors import ValidationError
from cellspec_sc.validation import ValidationReport, validate


def print_report(report: ValidationReport, *, out: TextIO | None = None, only_problems: bool = False) -> int:
    """Print ``report`` (``only_problems``: its head line and the checks that failed or warned) and return
    the exit code it stands for (0 valid, 1 not)."""
    # sys.stdout looked up at call time (a default argument would pin the stream at import)
    print(report.format(only_problems=only_problems), file=out or sys.stdout)
    return EXIT_OK if report.ok else EXIT_INVALID


def cmd_validate(args: argparse.Namespace) -> int:
    try:
        x = load(args.source, storage_options_of(args))
    except ValidationError as err:  # a reader that refuses an invalid object hands its report over
        return print_report(err.report, only_problems=args.problems)
    return print_report(validate(x, area_range=args.area_range, na_max=args.na_max), only_problems=args.problems)


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", help="PATH, URL (s3://, gs://, az://) or 'example'")
    add_storage_options(p)
    p.add_argument("--area-range", nargs=2, type=float, metavar=("LOW", "HIGH"), default=None,
                   help="plausible whole-cell area in um2 (default 1 10000)")
    p.add_argument("--na-max", type=float, default=None, help="largest plausible NA fraction per feature (default 0.5)")
    p.add_argument("--problems", action="store_true", help="print only the checks that failed or warned")
    p.set_defaults(func=cmd_validate)
