"""Where the AnnData bridge keeps things (``uns``, ``obsm`` and ``obsp`` keys, its record version) and how it
warns about what it renames or leaves out.

>>> UNS_KEY, SPATIAL_KEY, CONNECTIVITIES_KEY
('cellspec', 'spatial', 'spatial_connectivities')
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import anndata

UNS_KEY = "cellspec"
SPATIAL_KEY = "spatial"
CONNECTIVITIES_KEY = "spatial_connectivities"
SHARED_BOUNDARY_KEY = "cellspec_shared_boundary"
BRIDGE_VERSION = "1"
FUNCTION = "cellspec_sc.from_anndata"


class AnnDataBridgeWarning(UserWarning):
    """Something in an AnnData was renamed or not carried into the cellspec."""


def warn(message: str) -> None:
    """Warn with the location of the user's call (frames inside this package are skipped)."""
    warnings.warn(message, AnnDataBridgeWarning, skip_file_prefixes=(os.path.dirname(__file__),))


def warn_not_carried(adata: anndata.AnnData, obsm: set[str] = frozenset(), obsp: set[str] = frozenset(),
                     layers: set[str] = frozenset()) -> None:
    """Warn about ``obsm``/``layers``/``obsp``/``varm`` entries that are not the given ones (the bridge's own)."""
    own = {"obsm": obsm, "obsp": obsp, "layers": layers, "varm": set()}
    left = [f"{slot}[{key!r}]" for slot, mine in own.items() for key in getattr(adata, slot).keys()
            if key is not None and key not in mine]
    if left:
        warn(f"not carried into the cellspec (analysis results outside obs): {', '.join(left)}")

