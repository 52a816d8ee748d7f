"""The SpatialData bridge: a cellspec as a SpatialData (shapes + one table), and back, losslessly.

See ``docs/spatialdata.md`` for the mapping. In short, for every image with cells:

* a circles element named after the image (sanitised, :mod:`.sd_names`): centroids with
  radius ``sqrt(area / pi)`` (the spatialdata-io xenium convention);
* a polygons element ``<name>_outlines`` when ``images.geometry_ref`` names a readable
  GeoJSON file of outlines (:mod:`cellspec_sc.io.outlines`);
* two coordinate systems: ``<name>`` in micrometres (shapes unchanged) and ``<name>_px``,
  the image's full-resolution pixel grid (shapes scaled by ``1 / pixel_size``), where an
  image added later with its intrinsic pixels (identity transform) overlays the cells.

One table (``"table"``) holds :func:`~cellspec_sc.bridges.anndata.to_anndata` of the object,
annotating the circles through ``region_key="cs__region"`` / ``instance_key="cell_id"``; its
``uns["cellspec"]`` carries everything else, ``uns["cellspec_spatialdata"]`` the names.

This module is the bridge's public face; the work is done in one module per direction:
:mod:`.sd_write` (to SpatialData), :mod:`.sd_read` (back), :mod:`.sd_foreign` (SpatialData not made
here), :mod:`.sd_concat` (``spatialdata.concatenate`` of several), :mod:`.sd_files` (``.zarr`` stores),
with :mod:`.sd_record`, :mod:`.sd_tables` and :mod:`.sd_names` beneath them.

>>> import cellspec_sc as cs
>>> x = cs.example()
>>> sdata = cs.to_spatialdata(x)
>>> sorted(sdata.shapes), sorted(sdata.tables)
(['img1', 'img2'], ['table'])
>>> cs.from_spatialdata(sdata).equals(x)
True
"""

from __future__ import annotations

from cellspec_sc.bridges.sd_files import SPATIALDATA_ZARR, is_spatialdata_zarr, read_spatialdata, write_spatialdata
from cellspec_sc.bridges.spatialdata._foreign import from_foreign_spatialdata
from cellspec_sc.bridges.spatialdata._read import from_spatialdata, stored_outline_files
from cellspec_sc.bridges.spatialdata._record import INSTANCE_KEY, REGION_KEY, TABLE_KEY, UNS_KEY, SpatialDataBridgeWarning
from cellspec_sc.bridges.spatialdata._write import to_spatialdata

__all__ = ["INSTANCE_KEY", "REGION_KEY", "SPATIALDATA_ZARR", "TABLE_KEY", "UNS_KEY", "SpatialDataBridgeWarning",
           "from_foreign_spatialdata", "from_spatialdata", "is_spatialdata_zarr", "read_spatialdata",
           "stored_outline_files", "to_spatialdata", "write_spatialdata"]
