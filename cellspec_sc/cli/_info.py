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

from cellspec_sc.cli._sources import add_storage_options, is_cellspec_dir, load, storage_options_of
from cellspec_sc.cli.main import terminal_text
from cellspec_sc.io import Transfer, format_header, is_url, read_header


def cmd_info(args: argparse.Namespace) -> int:
    if is_url(args.source):
        transfer = Transfer()
        print(terminal_text(format_header(read_header(args.source, storage_options_of(args), transfer))))
        if args.verbose:
            print(transfer_line(transfer))
        return 0
    summary = format_header(read_header(args.source)) if is_cellspec_dir(args.source) else repr(load(args.source))
    print(terminal_text(summary))
    return 0


def transfer_line(transfer: Transfer) -> str:
    """What ``cellspec -v info URL`` fetched, against the size of the directory.

    >>> t = Transfer(); t.add(2_048); t.total = 1_000_000
    >>> print(transfer_line(t))
    transferred 2,048 bytes in 1 requests (0.205% of the directory's 1,000,000 bytes)
    """
    share = f" ({100 * transfer.bytes / transfer.total:.3g}% of the directory's {transfer.total:,} bytes)" \
        if transfer.total else ""
    return f"transferred {transfer.bytes:,} bytes in {transfer.requests} requests{share}"


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", help="PATH, URL (s3://, gs://, az://) or 'example'")
    add_storage_options(p)
    p.set_defaults(func=cmd_info)
