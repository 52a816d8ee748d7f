"""The ``cellspec`` command.

Exit codes: 0 ok, 1 validation failed, 2 usage error, refused input or any other failure. Every
failure prints one line (``cellspec: error: ...``); ``cellspec --debug COMMAND ...`` also prints the
traceback.

>>> main(["convert", "example", "out.txt"])
2

Subcommands live in modules listed in ``COMMAND_MODULES``; each has a
``register(subparsers)`` that adds its parsers and sets ``func`` on them.

``-q/--quiet`` and ``-v/--verbose`` are accepted before or after the subcommand. Without them, progress
bars appear on a terminal for big work only (see :mod:`cellspec_sc.progress`) and only warnings are
logged; ``-v`` shows every bar and logs each step with its time (``-vv``: debug messages too); ``-q``
shows no bar and logs errors only. Results (reports, summaries, ``wrote ...``) are printed either way.
"""

from __future__ import annotations

import argparse
import logging
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import import_module

from cellspec_sc.errors import CellspecError, ValidationError
from cellspec_sc.model.provenance import package_version
from cellspec_sc.progress import logger, set_verbosity

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2

# in the order ``cellspec --help`` lists them
COMMAND_MODULES: tuple[str, ...] = ("cellspec_sc.cli.demo", "cellspec_sc.cli.validate", "cellspec_sc.cli.info",
                                     "cellspec_sc.cli.imports", "cellspec_sc.cli.convert", "cellspec_sc.cli.luxar",
                                     "cellspec_sc.cli.view", "cellspec_sc.cli.preview", "cellspec_sc.cli.cohort")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cellspec", description="cellspec 1.0 tables for segmented cells")
    parser.add_argument("--version", action="version", version=f"cellspec_sc {package_version()}")
    parser.add_argument("--debug", action="store_true", help="print the traceback when a command fails")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        import_module(name).register(sub)
    add_verbosity_options(parser)
    return parser


def add_verbosity_options(parser: argparse.ArgumentParser, *, subcommand: bool = False) -> None:
    """``-q`` and ``-v`` on ``parser`` and on every subcommand below it (there with no default of their own,
    so ``cellspec -v convert ...`` and ``cellspec convert ... -v`` mean the same)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS if subcommand else False,
                       help="no progress bars; log errors only")
    group.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS if subcommand else 0,
                       help="progress bars whatever the size; log each step and its time (-vv: debug)")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):  # aliases map to the same parser
                add_verbosity_options(child, subcommand=True)


@contextmanager
def verbosity(quiet: bool, verbose: int) -> Iterator[None]:
    """Progress bars and log messages on stderr as ``-q``/``-v`` ask, for the duration of one command."""
    level, log_level = ("quiet", logging.ERROR) if quiet else \
        ("verbose", logging.DEBUG if verbose > 1 else logging.INFO) if verbose else ("normal", logging.WARNING)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("cellspec: %(message)s"))
    previous_level, previous_verbosity = logger.level, set_verbosity(level)
    logger.addHandler(handler)
    logger.setLevel(log_level)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous_level)
        set_verbosity(previous_verbosity)


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
        with verbosity(args.quiet, args.verbose):
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
