"""Bridges from cellspec to the scverse ecosystem (AnnData, SpatialData) and to Luxar scenes.

Each bridge is a subpackage (:mod:`~cellspec_sc.bridges.anndata`, :mod:`~cellspec_sc.bridges.spatialdata`,
:mod:`~cellspec_sc.bridges.luxar`); the conversions are also named here, imported on first use so that importing
the bridges loads none of anndata, spatialdata or luxar.

>>> from cellspec_sc import bridges
>>> bridges.to_anndata.__module__
'cellspec_sc.bridges.anndata._convert'
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["from_anndata", "from_spatialdata", "to_anndata", "to_luxar", "to_spatialdata"]

_HOMES = {"to_anndata": "anndata", "from_anndata": "anndata", "to_spatialdata": "spatialdata",
          "from_spatialdata": "spatialdata", "to_luxar": "luxar"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
