"""``cellspec convert SOURCE TARGET``: between cellspec directories, AnnData and SpatialData files.

SOURCE is anything ``cellspec validate`` opens (see :mod:`cellspec_sc.cli._sources`).
The writer is chosen from TARGET's name by :data:`TARGETS`, longest suffix
first, so a bridge can add a more specific suffix (``.spatialdata.zarr``) next
to ``.zarr`` with one line. A name without a suffix (or ending in ``.cellspec``)
is a cellspec directory; any other suffix is refused. TARGET is checked
before SOURCE is read.

>>> target_writer("out.h5ad")[1]
'AnnData .h5ad file'
>>> target_writer("out.spatialdata.zarr")[1]
'SpatialData .zarr store'
>>> target_writer("run2")[1]
'cellspec directory'
>>> target_writer("x.txt")  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
cellspec_sc.errors.InputError: x.txt: unknown target suffix '.txt'; known: .h5ad (AnnData .h5ad file),
.spatialdata.zarr (SpatialData .zarr store), .zarr (AnnData .zarr store), .cellspec (cellspec directory),
or no suffix (cellspec directory)
"""

from __future__ import annotations

import argparse
from pathlib import PurePath
from typing import Any

from cellspec_sc.cli._images import add_image_options, image_paths
from cellspec_sc.cli._sources import add_storage_options, load, resolve, storage_options_of
from cellspec_sc.errors import InputError
from cellspec_sc.io import check_target, check_url_target_of, is_url

# (suffix of TARGET, "module:function" writing (x, path, overwrite=...), "module:TargetKind" it publishes,
# description); "" = a name without a suffix
TARGETS: list[tuple[str, str, str, str]] = [
    (".h5ad", "cellspec_sc.bridges.anndata:write_h5ad", "cellspec_sc.bridges.anndata:H5AD_FILE",
     "AnnData .h5ad file"),
    (".spatialdata.zarr", "cellspec_sc.bridges.spatialdata:write_spatialdata",
     "cellspec_sc.bridges.spatialdata:SPATIALDATA_ZARR", "SpatialData .zarr store"),
    (".zarr", "cellspec_sc.bridges.anndata:write_anndata_zarr", "cellspec_sc.bridges.anndata:ANNDATA_ZARR",
     "AnnData .zarr store"),
    (".cellspec", "cellspec_sc.io:write", "cellspec_sc.io:CELLSPEC_DIRECTORY", "cellspec directory"),
    ("", "cellspec_sc.io:write", "cellspec_sc.io:CELLSPEC_DIRECTORY", "cellspec directory"),
]


def target_writer(target: str) -> tuple[Any, str, Any]:
    """(writer function, description, TargetKind) for a TARGET path, by its longest matching suffix."""
    name = str(target).rstrip("/").lower()
    for suffix, writer, kind, description in sorted(TARGETS, key=lambda row: -len(row[0])):
        if (name.endswith(suffix) and suffix) or (not suffix and not PurePath(name).suffix):
            return resolve(writer), description, resolve(kind)
    known = ", ".join(f"{s} ({d})" for s, _, _, d in TARGETS if s)
    raise InputError(f"{target}: unknown target suffix {PurePath(name).suffix!r}; known: {known}, "
                     "or no suffix (cellspec directory)")


def cmd_convert(args: argparse.Namespace) -> int:
    writer, description, kind = target_writer(args.target)
    options = storage_options_of(args)
    extra: dict[str, Any] = {"storage_options": options} if is_url(args.target) else {}
    images, _ = image_paths(args.image)
    if images and description == "cellspec directory":
        raise InputError(f"{args.target}: a cellspec directory holds no images; --image goes with a .h5ad, AnnData "
                         ".zarr or .spatialdata.zarr target")
    if images:
        extra.update(images=images, verify=not args.no_verify)
    if is_url(args.target):  # before SOURCE is read, however big it is
        check_url_target_of(kind, args.target, options, overwrite=args.overwrite)
    else:
        check_target(args.target, kind, overwrite=args.overwrite)
    x = load(args.source, options)
    path = writer(x, args.target, overwrite=args.overwrite, **extra)
    print(f"wrote {path} ({description}): {x.n_cells} cells, {len(x.dictionary)} features")
    return 0


def register(p: argparse.ArgumentParser) -> None:
    kinds = ", ".join(f"{suffix or 'no suffix'}: {description}" for suffix, _, _, description in TARGETS)
    p.description = ("Read SOURCE (a cellspec directory, .h5ad, AnnData or SpatialData .zarr, or 'example') and "
                     f"write it to TARGET, whose name picks the format ({kinds}).")
    p.add_argument("source", help="PATH, URL (s3://, gs://, az://) or 'example'")
    p.add_argument("target", help="output path or URL; its suffix picks the format")
    add_storage_options(p)
    p.add_argument("--overwrite", action="store_true", help="replace an existing TARGET of the same kind")
    add_image_options(p)
    p.set_defaults(func=cmd_convert)
