"""The ``cellspec`` command.

Exit codes: 0 ok, 1 validation failed, 2 usage error, refused input or any other failure. Every
failure prints one line (``cellspec: error: ...``); ``cellspec --debug COMMAND ...`` also prints the
traceback.

>>> main(["convert", "example", "out.txt"])
2

Subcommands live in modules listed in ``COMMAND_MODULES``; each has a
``register(subparsers)`` that adds its parsers and sets ``func`` on them.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from importlib import import_module

from cellspec_sc.errors import CellspecError, ValidationError
from cellspec_sc.model.provenance import package_version

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2

# in the order ``cellspec --help`` lists them
COMMAND_MODULES: tuple[str, ...] = ("cellspec_sc.cli.demo", "cellspec_sc.cli.validate", "cellspec_sc.cli.info",
                                     "cellspec_sc.cli.imports", "cellspec_sc.cli.convert", "cellspec_sc.cli.luxar",
                                     "cellspec_sc.cli.preview")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cellspec", description="cellspec 1.0 tables for segmented cells")
    parser.add_argument("--version", action="version", version=f"cellspec_sc {package_version()}")
    parser.add_argument("--debug", action="store_true", help="print the traceback when a command fails")
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
    except (Exception, KeyboardInterrupt) as err:  # every path ends in 0, 1 or 2, never in a traceback
        if args.debug:
            traceback.print_exc()
        code, message = failure(err)
        print(message, file=sys.stderr)
        return code


def failure(err: BaseException) -> tuple[int, str]:
    """The exit code and message of a command that raised ``err`` (one line unless it is a validation report).

    >>> failure(OSError(28, "No space left on device", "/data/x"))
    (2, 'cellspec: error: /data/x: No space left on device')
    """
    if isinstance(err, ValidationError):
        return EXIT_INVALID, str(err)
    if isinstance(err, CellspecError):
        message = str(err)
    elif isinstance(err, OSError):
        message = f"{err.filename}: {err.strerror}" if err.filename and err.strerror else str(err)
    elif isinstance(err, KeyboardInterrupt):
        message = "interrupted"
    else:
        message = (f"unexpected {type(err).__name__}: {err} (a bug in cellspec_sc; run `cellspec --debug ...` "
                   "for the traceback)")
    return EXIT_USAGE, "cellspec: error: " + " ".join(line.strip() for line in message.splitlines() if line.strip())


if __name__ == "__main__":
    sys.exit(main())
