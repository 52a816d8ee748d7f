"""``cellspec info SOURCE``: print the summary of a cellspec.

For a cellspec directory only DONE, the manifest, cellspec.json and the Parquet footers are read
(:mod:`cellspec_sc.io._directory`): the first line says so, and ``cellspec validate`` checks the data.

>>> from cellspec_sc.cli.main import main
>>> main(["info", "example"])  # doctest: +ELLIPSIS
<cellspec> spec 1.0.0
...
0
"""

from __future__ import annotations

import argparse

from cellspec_sc.cli._sources import is_cellspec_dir, load
from cellspec_sc.cli.main import terminal_text
from cellspec_sc.io import format_header, read_header


def cmd_info(args: argparse.Namespace) -> int:
    summary = format_header(read_header(args.source)) if is_cellspec_dir(args.source) else repr(load(args.source))
    print(terminal_text(summary))
    return 0


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", help="PATH or 'example'")
    p.set_defaults(func=cmd_info)
