"""``cellspec info SOURCE``: print the summary of a cellspec.

>>> from cellspec_sc.cli.main import main
>>> main(["info", "example"])  # doctest: +ELLIPSIS
<cellspec> spec 1.0.0
...
0
"""

from __future__ import annotations

import argparse

from cellspec_sc.io.sources import load


def cmd_info(args: argparse.Namespace) -> int:
    print(repr(load(args.source)))
    return 0


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", help="PATH or 'example'")
    p.set_defaults(func=cmd_info)
