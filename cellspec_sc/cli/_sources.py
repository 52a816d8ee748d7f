"""Open a cellspec from whatever a user names on the command line.

Each entry of :data:`SOURCES` pairs a test ("is this path of my kind?") with the function that loads it,
both named as ``"module:function"`` and imported only when tried, so ``cellspec validate DIR`` does not
load the AnnData and SpatialData bridges. Bridges add their formats here (``.h5ad``, AnnData ``.zarr``,
SpatialData ``.zarr``) with one line.

>>> load("example").n_cells
80
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Any

from cellspec_sc.errors import InputError, MissingPath
from cellspec_sc.io import has_markers
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
__all__ = ["SOURCES", "is_cellspec_dir", "load", "resolve"]

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
    return getattr(import_module(module), function)


def load(source: str) -> CellSpec:
    """Load ``example`` or any path that a registered source understands."""
    for test, loader, description in SOURCES:
        if resolve(test)(source):
            named = description if description.startswith(source) else f"{source} ({description})"
            with step(f"opening {named}"):
                return resolve(loader)(source)
    known = "; ".join(description for _, _, description in SOURCES)
    if not Path(source).exists():
        raise MissingPath(source, f"{source}: no such file or directory (expected {known})")
    raise InputError(f"{source}: not a format cellspec can open (expected {known})")
