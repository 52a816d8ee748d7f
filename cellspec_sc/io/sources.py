"""Open a cellspec from whatever a user names on the command line.

Each entry maps a kind of path to the function that loads it; bridges add
their formats here (``.h5ad``, AnnData ``.zarr``, SpatialData ``.zarr``).

>>> load("example").n_cells
80
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

from cellspec_sc.errors import InputError
from cellspec_sc.io.manifest import has_markers

if TYPE_CHECKING:
    from cellspec_sc.model.cellspec import CellSpec


def _is_example(source: str) -> bool:
    return source == "example"


def _load_example(source: str) -> CellSpec:
    from cellspec_sc.model.example import example

    return example()


def _is_cellspec_dir(source: str) -> bool:
    return has_markers(Path(source))


def _is_h5ad(source: str) -> bool:
    from cellspec_sc.bridges.anndata_io import is_h5ad

    return is_h5ad(source)


def _is_anndata_zarr(source: str) -> bool:
    from cellspec_sc.bridges.anndata_io import is_anndata_zarr

    return is_anndata_zarr(source)


def _is_spatialdata_zarr(source: str) -> bool:
    from cellspec_sc.bridges.spatialdata import is_spatialdata_zarr

    return is_spatialdata_zarr(source)


# (test, "module:function", description) in the order they are tried
SOURCES: list[tuple[Callable[[str], bool], str, str]] = [
    (_is_example, "cellspec_sc.io.sources:_load_example", "example (the simulated spec example)"),
    (_is_cellspec_dir, "cellspec_sc.io.directory:read", "a cellspec directory"),
    (_is_h5ad, "cellspec_sc.bridges.anndata_io:read_h5ad", "an AnnData .h5ad file"),
    (_is_spatialdata_zarr, "cellspec_sc.bridges.spatialdata:read_spatialdata", "a SpatialData .zarr store"),
    (_is_anndata_zarr, "cellspec_sc.bridges.anndata_io:read_anndata_zarr", "an AnnData .zarr store"),
]


def load(source: str) -> CellSpec:
    """Load ``example`` or any path that a registered source understands."""
    for test, target, _ in SOURCES:
        if test(source):
            module, function = target.split(":")
            return getattr(import_module(module), function)(source)
    known = "; ".join(description for _, _, description in SOURCES)
    if not Path(source).exists():
        raise InputError(f"{source}: no such file or directory (expected {known})")
    raise InputError(f"{source}: not a format cellspec can open (expected {known})")
