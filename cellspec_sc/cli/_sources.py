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

from cellspec_sc.errors import InputError, MissingExtraError, needs_extra
from cellspec_sc.io import has_markers
from cellspec_sc.model import CellSpec, example


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
    with needs_extra(EXTRAS.get(module, "all"), f"cellspec (reading {module.rpartition('.')[2]} files)"):
        return getattr(import_module(module), function)


# the module of a source -> the extra of cellspec_sc it needs
EXTRAS = {"cellspec_sc.bridges.anndata": "anndata", "cellspec_sc.bridges.spatialdata": "spatialdata",
          "cellspec_sc.cli._sources": "all"}


def load(source: str) -> CellSpec:
    """Load ``example`` or any path that a registered source understands.

    A source whose module needs an extra that is not installed is passed over; when no other source opens an
    existing path, the error names the first such extra (``pip install "cellspec_sc[anndata]"``).
    """
    missing: list[MissingExtraError] = []
    for test, loader, _ in SOURCES:
        module = test.partition(":")[0]
        try:
            with needs_extra(EXTRAS.get(module, "all"), f"cellspec (reading {module.rpartition('.')[2]} files)"):
                matches = resolve(test)(source)
        except MissingExtraError as err:
            missing.append(err)
            continue
        if matches:
            return resolve(loader)(source)
    known = "; ".join(description for _, _, description in SOURCES)
    if not Path(source).exists():
        raise InputError(f"{source}: no such file or directory (expected {known})")
    if missing:
        raise missing[0]
    raise InputError(f"{source}: not a format cellspec can open (expected {known})")
