"""The SpatialData bridge: a cellspec as a SpatialData (shapes + one table), and back, losslessly.

See ``docs/spatialdata.md`` for the mapping. In short, for every image with cells:

* a circles element named after the image (sanitised to a name SpatialData accepts): centroids with
  radius ``sqrt(area / pi)`` (the spatialdata-io xenium convention);
* a polygons element ``<name>_outlines`` when ``images.geometry_ref`` names a readable
  GeoJSON file of outlines (:mod:`cellspec_sc.io._outlines`);
* two coordinate systems: ``<name>`` in micrometres (shapes unchanged) and ``<name>_px``,
  the image's full-resolution pixel grid (shapes scaled by ``1 / pixel_size``), where an
  image added later with its intrinsic pixels (identity transform) overlays the cells.

One table (``"table"``) holds :func:`~cellspec_sc.bridges.anndata.to_anndata` of the object,
annotating the circles through ``region_key="cs__region"`` / ``instance_key="cell_id"``; its
``uns["cellspec"]`` carries everything else, ``uns["cellspec_spatialdata"]`` the names.

This package is the bridge's public face; beneath it: :mod:`._write` (to SpatialData and to a ``.zarr``
store), :mod:`._read` (back, also from ``spatialdata.concatenate`` of several and from a store),
:mod:`._foreign` (SpatialData not made here), :mod:`._tables` (finding the cells table and its rows per
element) and :mod:`._record` (what the bridge stores besides the table, versioned).

>>> import cellspec_sc as cs
>>> x = cs.example()
>>> sdata = cs.to_spatialdata(x)
>>> sorted(sdata.shapes), sorted(sdata.tables)
(['img1', 'img2'], ['table'])
>>> cs.from_spatialdata(sdata).equals(x)
True
"""

from __future__ import annotations

from cellspec_sc.bridges.spatialdata._foreign import from_foreign_spatialdata
from cellspec_sc.bridges.spatialdata._read import (
    SPATIALDATA_ZARR,
    from_spatialdata,
    is_spatialdata_zarr,
    read_spatialdata,
    stored_outline_files,
)
from cellspec_sc.bridges.spatialdata._record import (
    INSTANCE_KEY,
    REGION_KEY,
    TABLE_KEY,
    UNS_KEY,
    SpatialDataBridgeWarning,
)
from cellspec_sc.bridges.spatialdata._write import to_spatialdata, write_spatialdata

__all__ = ["INSTANCE_KEY", "REGION_KEY", "SPATIALDATA_ZARR", "TABLE_KEY", "UNS_KEY", "SpatialDataBridgeWarning",
           "from_foreign_spatialdata", "from_spatialdata", "is_spatialdata_zarr", "read_spatialdata",
           "stored_outline_files", "to_spatialdata", "write_spatialdata"]
