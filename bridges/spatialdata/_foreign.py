"""A cellspec from a SpatialData not made by ``to_spatialdata`` (spatialdata-io, ...): the table through the
AnnData bridge's reader of foreign AnnData, centroids from the shapes it annotates."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cellspec_sc.bridges.anndata import from_foreign_anndata
from cellspec_sc.bridges.spatialdata._record import SpatialDataBridgeWarning
from cellspec_sc.bridges.spatialdata._tables import cells_table_key, instance_keys, rows_by_region
from cellspec_sc.errors import InputError
from cellspec_sc.model import CellSpec, with_history_step

if TYPE_CHECKING:
    import anndata
    from spatialdata import SpatialData

FUNCTION = "cellspec_sc.from_spatialdata"
_CENTROIDS = "cellspec_shape_centroids"


def from_foreign_spatialdata(sdata: SpatialData, *, table_key: str | None = None,
                             coordinate_system: str | None = None, **options: Any) -> CellSpec:
    """A cellspec from a SpatialData not made by :func:`to_spatialdata` (spatialdata-io, ...).

    The table is read by :func:`~cellspec_sc.from_anndata` for AnnData made elsewhere, which needs the facts a
    SpatialData does not hold (``sample_id`` or ``sample_key``, ``pixel_size``, ``coordinate_unit``;
    optionally ``features``, ``producer``). When the table annotates shapes (``region`` / ``region_key`` /
    ``instance_key`` in ``uns["spatialdata_attrs"]``) the defaults come from there: cell ids from the instance
    key, image ids from the region (the element name), and, unless ``coordinates=`` is given, centroids from
    the shapes (circle centres, polygon centroids) in their own coordinates, or in ``coordinate_system`` when
    given. Rows whose shape is missing are left out (with a warning).

    Parameters
    ----------
    sdata
        The SpatialData.
    table_key
        The table holding the cells (default: the only table).
    coordinate_system
        Take shape centroids in this coordinate system instead of the shapes' own coordinates.
    **options
        As for :func:`~cellspec_sc.from_anndata` of an AnnData made elsewhere (``preset=``, ``sample_id=``,
        ``pixel_size=``, ``coordinate_unit=``, ``coordinates=``, ...).

    Returns
    -------
    CellSpec
        With a ``from_spatialdata`` history step naming the table, its keys and where the centroids came from.

    Raises
    ------
    InputError
        Names each missing fact, or a table annotating no shapes element, or shapes that cannot be placed in
        ``coordinate_system``.

    Examples
    --------
    >>> import cellspec_sc as cs
    >>> sdata = cs.to_spatialdata(cs.example())
    >>> del sdata.tables["table"].uns["cellspec"]
    >>> cs.from_spatialdata(sdata)
    Traceback (most recent call last):
    ...
    cellspec_sc.errors.InputError: ...sample_id='<id>' or sample_key='<obs column>'...
    """
    from spatialdata.models import get_table_keys

    key = cells_table_key(sdata, table_key)
    table = sdata.tables[key]
    if "spatialdata_attrs" not in table.uns:
        return from_foreign_anndata(table, **options)
    _, region_key, instance_key = get_table_keys(table)
    table = table.copy()  # gets centroids and loses the SpatialData annotation below
    if options.get("preset") is None:  # a preset knows its table's keys and coordinates
        options.setdefault("cell_key", instance_key)
        if options.get("image_id") is None:
            options.setdefault("image_key", region_key)
    if "coordinates" not in options and options.get("preset") is None:
        table = _with_shape_centroids(sdata, table, region_key, instance_key, coordinate_system)
        options["coordinates"] = _CENTROIDS
    del table.uns["spatialdata_attrs"]
    try:
        x = from_foreign_anndata(table, **options)
    except InputError as err:
        raise InputError(f"SpatialData table {key!r} was not made by cellspec_sc.to_spatialdata: {err}") from None
    details = {"table": key, "region_key": region_key, "instance_key": instance_key,
               "centroids": "from shapes" if options.get("coordinates") == _CENTROIDS else "from the table",
               "coordinate_system": coordinate_system}
    return x.replace(provenance=with_history_step(x.provenance, "from_spatialdata", FUNCTION, details))


def _with_shape_centroids(sdata: SpatialData, table: anndata.AnnData, region_key: str, instance_key: str,
                          coordinate_system: str | None) -> anndata.AnnData:
    """The rows of ``table`` that have a shape, with ``obsm["cellspec_shape_centroids"]`` added."""
    instances = instance_keys(table.obs[instance_key])
    xy = np.full((table.n_obs, 2), np.nan)
    for region, rows in rows_by_region(table.obs[region_key]):
        centroids = _element_centroids(sdata, region, coordinate_system)
        if centroids is not None:
            xy[rows] = centroids.reindex(instances[rows]).to_numpy(dtype=np.float64)
    missing = np.isnan(xy).any(axis=1)
    if missing.all() and table.n_obs:
        raise InputError(f"no row of the table has a shape to take its centroid from (region_key {region_key!r}, "
                         f"instance_key {instance_key!r}); pass coordinates=<obsm key> or ('x', 'y') obs columns")
    if missing.any():
        warnings.warn(f"{int(missing.sum())} table row(s) have no shape in the SpatialData and are left out",
                      SpatialDataBridgeWarning, stacklevel=4)
        table = table[~missing].copy()
        xy = xy[~missing]
    table.obsm[_CENTROIDS] = xy
    return table


def _element_centroids(sdata: SpatialData, name: str, coordinate_system: str | None) -> pd.DataFrame | None:
    """Circle centres / polygon centroids of shapes element ``name`` by instance id (None if absent)."""
    import spatialdata

    element = sdata.shapes.get(name)
    if element is None:
        if name in sdata.labels or name in sdata.points:
            raise InputError(f"the table annotates {name!r}, which is not a shapes element; pass "
                             "coordinates=<obsm key> or ('x', 'y') obs columns")
        return None
    if coordinate_system is not None:
        try:
            element = spatialdata.transform(element, to_coordinate_system=coordinate_system)
        except (KeyError, ValueError) as err:
            raise InputError(f"shapes {name!r} cannot be placed in coordinate system {coordinate_system!r} "
                             f"({err})") from None
    centroid = element.geometry.centroid
    return pd.DataFrame({"x": centroid.x.to_numpy(), "y": centroid.y.to_numpy()},
                        index=instance_keys(element.index))
