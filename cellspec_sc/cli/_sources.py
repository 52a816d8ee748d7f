"""Open a cellspec from whatever a user names on the command line.

Each entry of :data:`SOURCES` pairs a test ("is this path of my kind?") with the function that loads it,
both named as ``"module:function"`` and imported only when tried, so ``cellspec validate DIR`` does not
load the AnnData and SpatialData bridges. Bridges add their formats here (``.h5ad``, AnnData ``.zarr``,
SpatialData ``.zarr``) with one line.

>>> load("example").n_cells
80
"""

from __future__ import annotations

import argparse
import json
from importlib import import_module
from pathlib import Path
from typing import Any

from cellspec_sc.errors import InputError, MissingExtraError, MissingPath, needs_extra
from cellspec_sc.io import has_markers, is_url, read
from cellspec_sc.model import CellSpec, example
from cellspec_sc.progress import step


def is_example(source: str) -> bool:
    return source == "example"


def load_example(source: str) -> CellSpec:
    """The simulated example of the spec (``source`` is ``"example"``)."""
    return example()


def is_cellspec_dir(source: str) -> bool:
    return has_markers(Path(source))


# ("module:function" test, "module:function" loader, description) in the order they are tried
__all__ = ["SOURCES", "add_storage_options", "is_cellspec_dir", "load", "resolve", "storage_options_of"]

SOURCES: list[tuple[str, str, str]] = [
    ("cellspec_sc.cli._sources:is_example", "cellspec_sc.cli._sources:load_example",
     "example (the simulated spec example)"),
    ("cellspec_sc.cli._sources:is_cellspec_dir", "cellspec_sc.io:read", "a cellspec directory"),
    ("cellspec_sc.bridges.anndata:is_h5ad", "cellspec_sc.bridges.anndata:read_h5ad", "an AnnData .h5ad file"),
    ("cellspec_sc.bridges.spatialdata:is_spatialdata_zarr", "cellspec_sc.bridges.spatialdata:read_spatialdata",
     "a SpatialData .zarr store"),
    ("cellspec_sc.bridges.anndata:is_anndata_zarr", "cellspec_sc.bridges.anndata:read_anndata_zarr",
     "an AnnData .zarr store"),
]


def resolve(target: str) -> Any:
    """The object named by ``"module:name"`` (a function, a constant...), importing its module.

    >>> resolve("cellspec_sc.cli._sources:is_example")("example")
    True
    """
    module, function = target.split(":")
    with needs_extra(EXTRAS.get(module, "all"), f"cellspec (reading {module.rpartition('.')[2]} files)"):
        return getattr(import_module(module), function)


# the module of a source -> the extra of cellspec_sc it needs
EXTRAS = {"cellspec_sc.bridges.anndata": "anndata", "cellspec_sc.bridges.spatialdata": "spatialdata",
          "cellspec_sc.cli._sources": "all"}


def add_storage_options(p: argparse.ArgumentParser) -> None:
    """The ``--storage-options JSON`` option of commands that take URLs on object storage."""
    p.add_argument("--storage-options", metavar="JSON", default=None,
                   help="for s3://, gs://, az:// URLs: fsspec storage options as a JSON object, e.g. "
                        "'{\"client_kwargs\": {\"endpoint_url\": \"http://127.0.0.1:9000\"}}' (default: the "
                        "store's usual environment variables and credential chain)")


def storage_options_of(args: argparse.Namespace) -> dict[str, Any] | None:
    """The parsed ``--storage-options`` (None when not given), or InputError naming what is wrong."""
    text = getattr(args, "storage_options", None)
    if text is None:
        return None
    try:
        options = json.loads(text)
    except ValueError as err:
        raise InputError(f"--storage-options: not JSON ({err})") from None
    if not isinstance(options, dict):
        raise InputError("--storage-options: must be a JSON object")
    return options


def load(source: str, storage_options: dict[str, Any] | None = None) -> CellSpec:
    """Load ``example``, a cellspec directory at a URL (s3://, gs://, az://; with ``storage_options``), or any
    path that a registered source understands.

    A source whose module needs an extra that is not installed is passed over; when no other source opens an
    existing path, the error names the first such extra (``pip install "cellspec_sc[anndata]"``).
    """
    if is_url(source):
        return read(source, storage_options=storage_options)
    missing: list[MissingExtraError] = []
    for test, loader, description in SOURCES:
        module = test.partition(":")[0]
        try:
            with needs_extra(EXTRAS.get(module, "all"), f"cellspec (reading {module.rpartition('.')[2]} files)"):
                matches = resolve(test)(source)
        except MissingExtraError as err:
            missing.append(err)
            continue
        if matches:
            named = description if description.startswith(str(source)) else f"{source} ({description})"
            with step(f"opening {named}"):
                return resolve(loader)(source)
    known = "; ".join(description for _, _, description in SOURCES)
    if not Path(source).exists():
        raise MissingPath(source, f"{source}: no such file or directory (expected {known})")
    if missing:
        raise missing[0]
    raise InputError(f"{source}: not a format cellspec can open (expected {known})")
