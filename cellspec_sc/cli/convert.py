"""``cellspec convert SOURCE TARGET``: between cellspec directories, AnnData and SpatialData files.

SOURCE is anything ``cellspec validate`` opens (see :mod:`cellspec_sc.io.sources`).
The writer is chosen from TARGET's name by :data:`TARGETS`, longest suffix
first, so a bridge can add a more specific suffix (``.spatialdata.zarr``) next
to ``.zarr`` with one line.

>>> target_writer("out.h5ad")[1]
'AnnData .h5ad file'
>>> target_writer("out.spatialdata.zarr")[1]
'SpatialData .zarr store'
>>> target_writer("run2")[1]
'cellspec directory'
"""

from __future__ import annotations

import argparse
from typing import Any

from cellspec_sc.io.sources import load, resolve

# (suffix of TARGET, "module:function" writing (x, path, overwrite=...), description); "" = anything else
TARGETS: list[tuple[str, str, str]] = [
    (".h5ad", "cellspec_sc.bridges.anndata_io:write_h5ad", "AnnData .h5ad file"),
    (".spatialdata.zarr", "cellspec_sc.bridges.spatialdata:write_spatialdata", "SpatialData .zarr store"),
    (".zarr", "cellspec_sc.bridges.anndata_io:write_anndata_zarr", "AnnData .zarr store"),
    ("", "cellspec_sc.io.directory:write", "cellspec directory"),
]


def target_writer(target: str) -> tuple[Any, str]:
    """(writer function, description) for a TARGET path, by its longest matching suffix."""
    name = str(target).rstrip("/").lower()
    for suffix, where, description in sorted(TARGETS, key=lambda row: -len(row[0])):
        if name.endswith(suffix):
            return resolve(where), description
    raise AssertionError("TARGETS has a catch-all entry")  # pragma: no cover


def cmd_convert(args: argparse.Namespace) -> int:
    x = load(args.source)
    writer, description = target_writer(args.target)
    path = writer(x, args.target, overwrite=args.overwrite)
    print(f"wrote {path} ({description}): {x.n_cells} cells, {len(x.dictionary)} features")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    kinds = ", ".join(f"{suffix or 'other names'}: {description}" for suffix, _, description in TARGETS)
    p = sub.add_parser("convert", help="convert between cellspec directories, AnnData and SpatialData files",
                       description="Read SOURCE (a cellspec directory, .h5ad, AnnData or SpatialData .zarr, or "
                                   f"'example') and write it to TARGET, whose name picks the format ({kinds}).")
    p.add_argument("source", help="PATH or 'example'")
    p.add_argument("target", help="output path; its suffix picks the format")
    p.add_argument("--overwrite", action="store_true", help="replace an existing TARGET of the same kind")
    p.set_defaults(func=cmd_convert)
