"""The ``cellspec`` command.

Exit codes: 0 ok, 1 validation failed, 2 usage error, refused input or any other failure. Every
failure prints one line (``cellspec: error: ...``); ``cellspec --debug COMMAND ...`` also prints the
traceback.

>>> main(["convert", "example", "out.txt"])
2

Each subcommand is one line of ``COMMANDS`` (its module and its line in ``cellspec --help``); the module's
``register(parser)`` adds the arguments and sets ``func``. Only the module of the command being run is imported,
so ``cellspec --help`` loads no pandas, pyarrow or numpy.

``-q/--quiet`` and ``-v/--verbose`` are accepted before or after the subcommand. Without them, progress
bars appear on a terminal for big work only (see :mod:`cellspec_sc.progress`) and only warnings are
logged; ``-v`` shows every bar and logs each step with its time (``-vv``: debug messages too); ``-q``
shows no bar, no warning, and logs errors only. Warnings are printed as
``cellspec: warning: ...`` lines. Results (reports, summaries, ``wrote ...``) are printed either way.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import traceback
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from cellspec_sc.errors import CellspecError, MissingExtraError, ValidationError, needs_extra
from cellspec_sc.model import package_version
from cellspec_sc.progress import logger, settings
from cellspec_sc.spec import SPEC_VERSION

__all__ = ["COMMANDS", "EXIT_INVALID", "EXIT_OK", "EXIT_USAGE", "Command", "build_parser", "main", "version_line"]

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


@dataclass(frozen=True)
class Command:
    """A subcommand: its module, its ``cellspec --help`` line and the extra its module needs.

    ``module``'s ``register(parser)`` fills the subcommand's parser; ``extra`` is the extra of cellspec_sc that
    module needs (``"all"`` when it depends on the input; ``None``: the core).
    """

    module: str
    help: str
    extra: str | None = None


# in the order ``cellspec --help`` lists them
COMMANDS: dict[str, Command] = {
    "demo": Command("cellspec_sc.cli._demo",
                    "build the example, write and read it back, validate it, print its summary"),
    "validate": Command("cellspec_sc.cli._validate",
                        "validate a cellspec (a directory, a supported file, or 'example')"),
    "info": Command("cellspec_sc.cli._info", "print the summary of a cellspec"),
    "import": Command("cellspec_sc.cli._imports",
                      "import a tool export (QuPath, MCMICRO, steinbock, HALO, inForm, CellProfiler) as cellspec"),
    "convert": Command("cellspec_sc.cli._convert",
                       "convert between cellspec directories, AnnData and SpatialData files", "all"),
    "luxar": Command("cellspec_sc.cli._luxar", "compile cells into a Luxar scene for the browser viewer", "luxar"),
    "view": Command("cellspec_sc.cli._view", "serve an existing Luxar scene (.luxar.zarr) with luxar's viewer",
                    "luxar"),
    "preview": Command("cellspec_sc.cli._preview",
                       "write a standalone HTML preview (features, channels, space, validation)", "widgets"),
    "cohort": Command("cellspec_sc.cli._cohort", "many cellspec directories as one cohort, on dask workers",
                      "cohort"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Build the ``cellspec`` parser; only ``command``'s module is imported and fills its parser.

    Parameters
    ----------
    command
        The subcommand whose module fills its parser (``"all"``: every one; ``None``: none, the top level only).

    Returns
    -------
    argparse.ArgumentParser
        The parser, with every subcommand listed.

    Examples
    --------
    >>> build_parser("info").parse_args(["info", "example"]).source
    'example'
    """
    parser = argparse.ArgumentParser(prog="cellspec", description="cellspec 1.0 tables for segmented cells")
    parser.add_argument("--version", action="version", version=version_line())
    parser.add_argument("--debug", action="store_true", help="print the traceback when a command fails")
    add_verbosity_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=SubcommandParser)
    for name, spec in COMMANDS.items():
        child = sub.add_parser(name, help=spec.help)
        if command in (name, "all"):
            with needs_extra(spec.extra or "all", f"cellspec {name}"):
                import_module(spec.module).register(child)
    return parser


def version_line() -> str:
    """Give what ``cellspec --version`` prints: the package's version and the spec version it implements.

    Returns
    -------
    str
        ``"cellspec_sc VERSION (cellspec spec SPEC_VERSION)"``.

    Examples
    --------
    >>> version_line().endswith("(cellspec spec 1.0.0)")
    True
    """
    return f"cellspec_sc {package_version()} (cellspec spec {SPEC_VERSION})"


def command_in(argv: Sequence[str]) -> str | None:
    """Find the subcommand ``argv`` runs: its first word that is not an option.

    Parameters
    ----------
    argv
        The command line's arguments, without the program name.

    Returns
    -------
    str or None
        The first word not starting with ``-`` (the top level has no option values), ``None`` if there is none.

    Examples
    --------
    >>> command_in(["-v", "convert", "example", "out.h5ad"])
    'convert'
    """
    return next((word for word in argv if not word.startswith("-")), None)


def add_verbosity_options(parser: argparse.ArgumentParser, *, subcommand: bool = False) -> None:
    """Add the mutually exclusive ``-q`` and ``-v`` options to ``parser``.

    Parameters
    ----------
    parser
        The parser to add them to.
    subcommand
        Whether ``parser`` is a subcommand's: then the options have no default of their own, so
        ``cellspec -v convert ...`` and ``cellspec convert ... -v`` mean the same.
    """
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS if subcommand else False,
                       help="no progress bars, no warnings; log errors only")
    group.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS if subcommand else 0,
                       help="progress bars whatever the size; log each step and its time (-vv: debug)")


class SubcommandParser(argparse.ArgumentParser):
    """The parser of a subcommand, and of any level below it.

    ``add_subparsers`` reuses the parent's class, so every level accepts ``-q``/``-v`` too.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        add_verbosity_options(self, subcommand=True)


@contextmanager
def verbosity(quiet: bool, verbose: int) -> Iterator[None]:
    """Progress bars and log messages on stderr as ``-q``/``-v`` ask, for the duration of one command."""
    level, log_level = ("quiet", logging.ERROR) if quiet else \
        ("verbose", logging.DEBUG if verbose > 1 else logging.INFO) if verbose else ("normal", logging.WARNING)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("cellspec: %(message)s"))
    previous_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(log_level)
    try:
        with warnings.catch_warnings(), settings.override(verbosity=level):
            warnings.showwarning = print_warning if not quiet else _drop_warning
            yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous_level)


def print_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int, file=None,
                  line: str | None = None) -> None:
    """Print a warning as one ``cellspec: warning: ...`` line, without Python's file and source line.

    The signature is that of :func:`warnings.showwarning`, which this replaces while a command runs.

    Parameters
    ----------
    message
        The warning (or its text).
    category, filename, lineno, line
        Ignored: the line names neither the category nor where the warning was raised.
    file
        Where to print (default: stderr).
    """
    print(terminal_text(f"cellspec: warning: {message}"), file=file or sys.stderr)


def _drop_warning(*args: Any, **kwargs: Any) -> None:
    """``-q``: warnings are not shown."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cellspec`` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(command_in(argv))
    except MissingExtraError as err:  # the command's module needs an extra that is not installed
        code, message = failure(err)
        print(message, file=sys.stderr)
        return code
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse exits 2 on usage errors, 0 on --help
        return int(stop.code or 0)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        with verbosity(args.quiet, args.verbose), needs_extra(COMMANDS[args.command].extra or "all",
                                                              f"cellspec {args.command}"):
            return int(args.func(args))
    except (Exception, KeyboardInterrupt) as err:  # every path ends in 0, 1 or 2, never in a traceback
        if args.debug:
            traceback.print_exc()
        code, message = failure(err)
        print(terminal_text(message), file=sys.stderr)
        return code


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def terminal_text(text: str) -> str:
    r"""``text`` with every control character shown as its escape.

    Escape sequences, bell, carriage return and bidi overrides in names from the data cannot move the cursor,
    recolour or rewrite the terminal; line breaks and tabs stay.

    >>> terminal_text("\x1b[31mRED\x1b[0m\tok")
    '\\x1b[31mRED\\x1b[0m\tok'
    """
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def failure(err: BaseException) -> tuple[int, str]:
    """Give the exit code and message of a command that raised ``err``.

    Parameters
    ----------
    err
        What the command raised.

    Returns
    -------
    tuple of (int, str)
        The exit code (``EXIT_INVALID`` for a validation error, ``EXIT_USAGE`` otherwise) and the message, one
        line unless it is a validation report.

    Examples
    --------
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
