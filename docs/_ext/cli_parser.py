"""The ``cellspec`` parser with every subcommand filled in, for the CLI reference page (sphinx-argparse)."""

from __future__ import annotations

import argparse

from cellspec_sc.cli.main import build_parser


def parser() -> argparse.ArgumentParser:
    """Build the whole ``cellspec`` parser (every subcommand's module imported).

    Returns
    -------
    argparse.ArgumentParser
        The parser ``cellspec`` runs.
    """
    return build_parser("all")
