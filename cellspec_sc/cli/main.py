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
from cellspec_sc.model.provenance import package_version

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2

# in the order ``cellspec --help`` lists them
COMMAND_MODULES: tuple[str, ...] = ("cellspec_sc.cli.demo", "cellspec_sc.cli.validate", "cellspec_sc.cli.info",
                                     "cellspec_sc.cli.imports", "cellspec_sc.cli.convert", "cellspec_sc.cli.luxar",
                                     "cellspec_sc.cli.view", "cellspec_sc.cli.preview")


def build_parser() -> argparse.ArgumentParser:
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
