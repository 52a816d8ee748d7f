"""The AnnData bridge: a cellspec as an AnnData that scanpy and squidpy understand, and back, losslessly; a
cellspec from an AnnData made elsewhere; cellspec objects as ``.h5ad`` files and AnnData ``.zarr`` stores.

See ``docs/anndata.md`` for the mapping table. Beneath this face:

- ``_convert``: :func:`to_anndata` and :func:`from_anndata` (obs and var back to cells and dictionary);
- ``_record``: the versioned record in ``uns["cellspec"]`` (encode and decode, X's fingerprint, JSON tables);
- ``_obs``: cells as ``obs`` (row names, categoricals, analysis columns) and contacts as ``obsp`` graphs;
- ``_categories``: category order and colours (``obs`` categoricals, ``uns["<column>_colors"]``) both ways;
- ``_matrix``: X as the measurements, the sample of cells, whether X still holds the values written;
- ``_foreign``: an AnnData made elsewhere (options, feature rules, presets, which matrix is raw);
- ``_files``: ``.h5ad`` and AnnData ``.zarr`` files, written through the publishing path;
- ``_keys``: the ``obsm``/``obsp`` keys and the bridge's warning.

>>> import cellspec_sc as cs
>>> x = cs.example(adjacency=True)
>>> adata = to_anndata(x)
>>> adata.obsm["spatial"].shape, adata.obsp["spatial_connectivities"].shape
((80, 2), (80, 80))
>>> from_anndata(adata).equals(x)
True
"""

from __future__ import annotations

from cellspec_sc.bridges.anndata._categories import colours_key, rename_colour_keys
from cellspec_sc.bridges.anndata._convert import from_anndata, to_anndata
from cellspec_sc.bridges.anndata._files import (
    ANNDATA_ZARR,
    H5AD_FILE,
    is_anndata_zarr,
    is_h5ad,
    read_anndata,
    read_anndata_file,
    read_anndata_zarr,
    read_h5ad,
    write_anndata_zarr,
    write_h5ad,
)
from cellspec_sc.bridges.anndata._foreign import from_foreign_anndata, intensity_features, other_feature
from cellspec_sc.bridges.anndata._keys import (
    CONNECTIVITIES_KEY,
    SHARED_BOUNDARY_KEY,
    SPATIAL_KEY,
    AnnDataBridgeWarning,
)
from cellspec_sc.bridges.anndata._obs import obs_names, text_array
from cellspec_sc.bridges.anndata._record import UNS_KEY, cohort_uns, decode_table, from_json_text, to_json_text

__all__ = [
    # the conversions (also cs.to_anndata, cs.from_anndata) and an AnnData made elsewhere
    "from_anndata", "to_anndata", "from_foreign_anndata", "intensity_features", "other_feature",
    # files: the readers and writers the command line and cellspec_sc.read/write use
    "ANNDATA_ZARR", "H5AD_FILE", "is_anndata_zarr", "is_h5ad", "read_anndata", "read_anndata_file", "read_anndata_zarr",
    "read_h5ad", "write_anndata_zarr", "write_h5ad",
    # where the bridge keeps things, and its warning
    "CONNECTIVITIES_KEY", "SHARED_BOUNDARY_KEY", "SPATIAL_KEY", "UNS_KEY", "AnnDataBridgeWarning",
    # for the cohort's AnnData and the other bridges: row names, JSON text in uns, text as Arrow
    "cohort_uns", "decode_table", "from_json_text", "obs_names", "text_array", "to_json_text",
    # scanpy's uns["<column>_colors"] of the obs categoricals the bridge writes with their order
    "colours_key", "rename_colour_keys",
]
