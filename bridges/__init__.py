"""Bridges from cellspec to the scverse ecosystem (AnnData, SpatialData) and to Luxar scenes.

Each bridge is a subpackage (:mod:`~cellspec_sc.bridges.anndata`, :mod:`~cellspec_sc.bridges.spatialdata`,
:mod:`~cellspec_sc.bridges.luxar`); the conversions are also named here, imported on first use so that importing
the bridges loads none of anndata, spatialdata or luxar.

>>> from cellspec_sc import bridges
>>> bridges.to_anndata.__module__
'cellspec_sc.bridges.anndata._convert'
"""

from __future__ import annotations

from cellspec_sc._lazy import lazy_names

__all__ = ["from_anndata", "from_spatialdata", "intensity_features", "other_feature", "to_anndata", "to_luxar",
           "to_spatialdata"]

_HOMES_ABS = {name: f"cellspec_sc.bridges.{home}" for name, home in {
    "to_anndata": "anndata", "from_anndata": "anndata", "intensity_features": "anndata", "other_feature": "anndata",
    "to_spatialdata": "spatialdata",
    "from_spatialdata": "spatialdata", "to_luxar": "luxar"}.items()}


# the extra of cellspec_sc that installs what each bridge needs (pip install "cellspec_sc[anndata]")
_EXTRAS = {"to_anndata": "anndata", "from_anndata": "anndata", "to_spatialdata": "spatialdata",
           "from_spatialdata": "spatialdata", "to_luxar": "luxar"}

__getattr__, __dir__ = lazy_names(__name__, _HOMES_ABS, globals(), _EXTRAS)
