"""Where the AnnData bridge keeps things in ``obsm`` and ``obsp``, and how it warns about what it renames or leaves
out. (Its record in ``uns`` is :mod:`._record`.)

>>> SPATIAL_KEY, CONNECTIVITIES_KEY, SHARED_BOUNDARY_KEY
('spatial', 'spatial_connectivities', 'cellspec_shared_boundary')
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING

import pandas as pd

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


COLORS_SUFFIX = "_colors"


def is_category_colours(adata: anndata.AnnData, key: str) -> bool:
    """Whether ``uns[key]`` is scanpy's colours of a category column that is carried (``leiden_colors`` beside a
    categorical ``obs["leiden"]``): those travel with the column, so they are not listed as left out.

    >>> import anndata, pandas as pd
    >>> a = anndata.AnnData(obs=pd.DataFrame({"leiden": pd.Categorical(["0", "1"]), "n": [1, 2]}, index=["a", "b"]))
    >>> is_category_colours(a, "leiden_colors"), is_category_colours(a, "n_colors"), is_category_colours(a, "moranI")
    (True, False, False)
    """
    column = key[:-len(COLORS_SUFFIX)] if key.endswith(COLORS_SUFFIX) else None
    return column in adata.obs.columns and isinstance(adata.obs[column].dtype, pd.CategoricalDtype)


def warn_not_carried(adata: anndata.AnnData, obsm: set[str] = frozenset(), obsp: set[str] = frozenset(),
                     layers: set[str] = frozenset(), uns: set[str] = frozenset()) -> None:
    """Warn once, listing every ``uns``/``obsm``/``obsp``/``layers``/``varm`` entry that is not the given ones (the
    bridge's own) and not the colours of a carried category column (:func:`is_category_colours`)."""
    own = {"uns": uns, "obsm": obsm, "obsp": obsp, "layers": layers, "varm": set()}
    left = [f"{slot}[{key!r}]" for slot, mine in own.items() for key in getattr(adata, slot).keys()
            if key is not None and key not in mine and not (slot == "uns" and is_category_colours(adata, str(key)))]
    if left:
        warn(f"not carried into the cellspec (analysis results outside obs, which a cellspec has no place for): "
             f"{', '.join(left)}; to keep per-cell values, copy them into obs first, e.g. "
             "adata.obs['umap_1'] = adata.obsm['X_umap'][:, 0]")
