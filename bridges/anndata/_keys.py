"""Where the AnnData bridge keeps things in ``obsm`` and ``obsp``, and how it warns about what it renames or leaves
out. (Its record in ``uns`` is :mod:`._record`.)

>>> SPATIAL_KEY, CONNECTIVITIES_KEY, SHARED_BOUNDARY_KEY
('spatial', 'spatial_connectivities', 'cellspec_shared_boundary')
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING

from cellspec_sc.errors import CellspecWarning

if TYPE_CHECKING:
    import anndata

SPATIAL_KEY = "spatial"
CONNECTIVITIES_KEY = "spatial_connectivities"
SHARED_BOUNDARY_KEY = "cellspec_shared_boundary"
FUNCTION = "cellspec_sc.from_anndata"
# frames inside the bridges (this one, and the SpatialData bridge calling it) are skipped: a warning points at
# the user's call
_BRIDGES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class AnnDataBridgeWarning(CellspecWarning):
    """Something in an AnnData was renamed or not carried into the cellspec."""


def warn(message: str) -> None:
    """Warn with the location of the user's call (frames inside the bridges are skipped)."""
    warnings.warn(message, AnnDataBridgeWarning, skip_file_prefixes=(_BRIDGES,))


def warn_not_carried(adata: anndata.AnnData, obsm: set[str] = frozenset(), obsp: set[str] = frozenset(),
                     layers: set[str] = frozenset()) -> None:
    """Warn about ``obsm``/``layers``/``obsp``/``varm`` entries that are not the given ones (the bridge's own)."""
    own = {"obsm": obsm, "obsp": obsp, "layers": layers, "varm": set()}
    left = [f"{slot}[{key!r}]" for slot, mine in own.items() for key in getattr(adata, slot).keys()
            if key is not None and key not in mine]
    if left:
        warn(f"not carried into the cellspec (analysis results outside obs): {', '.join(left)}")
