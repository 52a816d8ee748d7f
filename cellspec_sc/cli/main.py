"""The ``cellspec`` command.

Exit codes: 0 ok, 1 validation failed, 2 usage error or refused input.

Subcommands live in modules listed in ``COMMAND_MODULES``; each has a
``register(subparsers)`` that adds its parsers and sets ``func`` on them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import import_module

from cellspec_sc.errors import CellspecError, ValidationError

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2

COMMAND_MODULES: tuple[str, ...] = ("cellspec_sc.cli.main", "cellspec_sc.cli.imports", "cellspec_sc.cli.convert",
                                     "cellspec_sc.cli.luxar", "cellspec_sc.cli.view", "cellspec_sc.cli.preview")


def _print_report(report, *, out=None) -> int:
    # sys.stdout looked up at call time (a default argument would pin the stream at import)
    print(report.format(), file=out or sys.stdout)
    return EXIT_OK if report.ok else EXIT_INVALID


def cmd_validate(args: argparse.Namespace) -> int:
    from cellspec_sc.io.sources import load
    from cellspec_sc.validation.checks import validate

    try:
        x = load(args.source)
    except ValidationError as err:  # a reader that refuses an invalid object hands its report over
        return _print_report(err.report)
    return _print_report(validate(x, area_range=args.area_range, na_max=args.na_max))


def cmd_info(args: argparse.Namespace) -> int:
    from cellspec_sc.io.sources import load

    print(repr(load(args.source)))
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from cellspec_sc.cli.demo import run_demo

    return run_demo(args.out)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="build the example, write and read it back, validate it, print its summary")
    p.add_argument("--out", default="demo-output", help="folder for the demo's files (default: ./demo-output)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("validate", help="validate a cellspec (a directory, a supported file, or 'example')")
    p.add_argument("source", help="PATH or 'example'")
    p.add_argument("--area-range", nargs=2, type=float, metavar=("LOW", "HIGH"), default=None,
                   help="plausible whole-cell area in um2 (default 1 10000)")
    p.add_argument("--na-max", type=float, default=None, help="largest plausible NA fraction per feature (default 0.5)")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("info", help="print the summary of a cellspec")
    p.add_argument("source", help="PATH or 'example'")
    p.set_defaults(func=cmd_info)


def build_parser() -> argparse.ArgumentParser:
    from cellspec_sc.model.provenance import package_version

    parser = argparse.ArgumentParser(prog="cellspec", description="cellspec 1.0 tables for segmented cells")
    parser.add_argument("--version", action="version", version=f"cellspec_sc {package_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cellspec`` console script."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse exits 2 on usage errors, 0 on --help
        return int(stop.code or 0)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.func(args))
    except ValidationError as err:
        print(err, file=sys.stderr)
        return EXIT_INVALID
    except CellspecError as err:
        print(f"cellspec: error: {err}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
