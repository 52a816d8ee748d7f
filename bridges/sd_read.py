"""SpatialData -> cellspec for a SpatialData made by ``to_spatialdata``, after any spatialdata operation that
keeps the table; anything else goes to :mod:`.sd_foreign`."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cellspec_sc.bridges.anndata import from_anndata
from cellspec_sc.bridges.sd_concat import from_concatenated
from cellspec_sc.bridges.sd_foreign import from_foreign_spatialdata
from cellspec_sc.bridges.sd_record import (ANNDATA_UNS_KEY, OUTLINE_FILES_KEY, REGION_KEY, UNS_KEY,
                                           SpatialDataBridgeWarning, decode_files)
from cellspec_sc.bridges.sd_tables import (bridge_table, cells_table_key, cellspec_tables, instance_keys,
                                           rows_by_region, same_instances)
from cellspec_sc.bridges.uns_tables import from_json_text
from cellspec_sc.errors import InputError
from cellspec_sc.io import materialise_outline_files
from cellspec_sc.model import CellSpec

if TYPE_CHECKING:
    import anndata
    from spatialdata import SpatialData

# -- SpatialData -> cellspec ---------------------------------------------------------------------
def from_spatialdata(sdata: SpatialData, *, table_key: str | None = None, restrict_to_shapes: bool = True,
                     allow_modified: bool = False, outline_dir: str | os.PathLike | None = None,
                     **foreign: Any) -> CellSpec:
    """The cellspec held by a SpatialData made by :func:`to_spatialdata`, after any spatialdata
    operation that keeps the table (queries, table filtering, added images or elements).

    ``table_key`` names the table (default: the bridge's table, else the only table).
    With ``restrict_to_shapes`` (default) only cells whose circle is still in the SpatialData
    are kept, so a query with ``filter_table=False`` gives the same cells as one with
    ``filter_table=True``; adjacency is trimmed to the remaining cells and the change is
    recorded in provenance history. ``allow_modified`` is passed to
    :func:`~cellspec_sc.from_anndata`.

    The outline files named by ``images.geometry_ref`` travel in the table byte for byte;
    ``outline_dir`` writes them there and makes it the result's ``source_dir``, so that
    ``cs.write`` can put them into a cellspec directory again (without it, ``source_dir`` is
    None and ``cs.write`` refuses an object whose ``geometry_ref`` files it cannot find).

    A SpatialData made by ``spatialdata.concatenate`` of several such objects (one table per
    object) gives one cellspec of all tables (:mod:`.sd_concat`); a table whose records were
    dropped (``concatenate_tables=True``) is refused. A SpatialData not made here is converted
    by :func:`from_foreign_spatialdata` with the keyword arguments in ``foreign``
    (``preset="spatialdata-io:steinbock"``, ...).
    """
    ours = cellspec_tables(sdata)
    if table_key is None and len(ours) > 1 and bridge_table(sdata) not in sdata.tables and _disjoint(sdata, ours):
        if foreign:
            raise InputError(f"from_spatialdata: {sorted(foreign)} only apply to a SpatialData not made by "
                             "cellspec_sc.to_spatialdata")
        return from_concatenated(sdata, ours, lambda key: from_spatialdata(
            sdata, table_key=key, restrict_to_shapes=restrict_to_shapes, allow_modified=allow_modified,
            outline_dir=outline_dir))
    key = cells_table_key(sdata, table_key)
    table = sdata.tables[key]
    if ANNDATA_UNS_KEY not in table.uns or UNS_KEY not in table.uns:
        _refuse_lost_record(table, key)
        return from_foreign_spatialdata(sdata, table_key=key, allow_modified=allow_modified, **foreign)
    if foreign:
        raise InputError(f"from_spatialdata: {sorted(foreign)} only apply to a SpatialData not made by "
                         "cellspec_sc.to_spatialdata")
    record = _read_record(table)
    keep = _rows_with_shapes(sdata, table, record) if restrict_to_shapes else None
    x = from_anndata(_plain_parts(table, record, keep), allow_modified=allow_modified)
    files = decode_files(table.uns.get(OUTLINE_FILES_KEY))
    if files and outline_dir is not None:
        x = x.replace(source_dir=materialise_outline_files(files, outline_dir))
    return x


def stored_outline_files(sdata: SpatialData, table_key: str | None = None) -> dict[str, bytes]:
    """The outline files carried by a SpatialData made by :func:`to_spatialdata` (``{geometry_ref: bytes}``)."""
    return decode_files(sdata.tables[cells_table_key(sdata, table_key)].uns.get(OUTLINE_FILES_KEY))


def _disjoint(sdata: SpatialData, keys: list[str]) -> bool:
    """Whether the tables annotate different elements (as after spatialdata.concatenate), not the same ones."""
    from spatialdata.models import get_table_keys

    seen: set[str] = set()
    for key in keys:
        region = get_table_keys(sdata.tables[key])[0]
        regions = {region} if isinstance(region, str) else set(region)
        if regions & seen:
            return False
        seen |= regions
    return True


def _refuse_lost_record(table: anndata.AnnData, key: str) -> None:
    """A table of ``to_spatialdata`` (it has ``cs__region``) that lost both records, as anndata's concat drops
    ``uns``, cannot give a valid, complete cellspec: images, channels, dictionary and adjacency were only there."""
    if REGION_KEY in table.obs.columns and ANNDATA_UNS_KEY not in table.uns and UNS_KEY not in table.uns:
        raise InputError(
            f"table {key!r} was made by cellspec_sc.to_spatialdata (it has obs[{REGION_KEY!r}]) but has lost "
            f"uns[{ANNDATA_UNS_KEY!r}] and uns[{UNS_KEY!r}], which hold the images, channels, dictionary, "
            "adjacency and provenance: spatialdata.concatenate(..., concatenate_tables=True) drops them "
            "(anndata.concat keeps no uns by default). Concatenate without concatenate_tables=True and join the "
            "tables with from_spatialdata(sdata), or convert each object with from_spatialdata before "
            "concatenating")


def _read_record(table: anndata.AnnData) -> dict[str, Any]:
    try:
        record = from_json_text(table.uns[UNS_KEY])
    except (TypeError, ValueError) as err:
        raise InputError(f"table.uns[{UNS_KEY!r}] is not the JSON text written by to_spatialdata ({err})") from None
    if not isinstance(record, dict) or "region_key" not in record:
        raise InputError(f"table.uns[{UNS_KEY!r}] was not written by cellspec_sc.to_spatialdata")
    return record


def _rows_with_shapes(sdata: SpatialData, table: anndata.AnnData, record: Mapping[str, Any]) -> np.ndarray | None:
    """Rows whose circle is still in ``sdata`` (None when that is every row)."""
    region_key, instance_key = record["region_key"], record["instance_key"]
    if region_key not in table.obs or instance_key not in table.obs:
        raise InputError(f"table.obs has lost {region_key!r} or {instance_key!r}, which tie cells to shapes")
    keep = np.zeros(table.n_obs, dtype=bool)
    gone: dict[str, int] = {}
    for region, rows in rows_by_region(table.obs[region_key]):
        element = sdata.shapes.get(region)
        if element is None:
            gone[region] = int(rows.size)
        else:
            # as to_spatialdata writes them: one run of rows (a slice, no copy) naming the shapes in order
            where = slice(rows[0], rows[-1] + 1) if rows[-1] - rows[0] + 1 == rows.size else rows
            instances = table.obs[instance_key].iloc[where]
            keep[where] = True if same_instances(instances, element.index) else \
                instance_keys(instances).isin(instance_keys(element.index))
    if gone:
        warnings.warn(f"cells of shapes elements that are not in the SpatialData are left out: {gone} "
                      "(restrict_to_shapes=False keeps them)", SpatialDataBridgeWarning, stacklevel=3)
    return None if keep.all() else keep


@dataclass
class TableParts:
    """What :func:`~cellspec_sc.from_anndata` reads of an AnnData, taken from a SpatialData table without
    building another AnnData (anndata's constructor checks a million row names again: most of the time
    ``from_spatialdata`` spent over ``from_anndata``)."""

    X: Any
    obs: pd.DataFrame
    var: pd.DataFrame
    uns: dict[str, Any]
    obsm: dict[str, Any]
    obsp: dict[str, Any]
    layers: dict[str, Any]
    varm: dict[str, Any]
    raw: Any

    @property
    def n_obs(self) -> int:
        return len(self.obs)

    @property
    def n_vars(self) -> int:
        return len(self.var)

    @property
    def var_names(self) -> pd.Index:
        return self.var.index


def _plain_parts(table: anndata.AnnData, record: Mapping[str, Any], keep: np.ndarray | None) -> TableParts:
    """The AnnData of ``to_anndata`` again, as its parts: original obs names, no SpatialData annotations."""
    source = table if keep is None else table[keep]
    renamed = record.get("obs_columns_renamed") or {}
    obs = source.obs.drop(columns=[record["region_key"]]).rename(columns=renamed)
    uns = {k: v for k, v in source.uns.items() if k not in (UNS_KEY, OUTLINE_FILES_KEY, "spatialdata_attrs")}
    layers = {k: v for k, v in source.layers.items() if k is not None}  # a view lists X as layers[None]
    return TableParts(X=source.X, obs=obs, var=source.var, uns=uns, obsm=dict(source.obsm), obsp=dict(source.obsp),
                      layers=layers, varm=dict(source.varm), raw=source.raw)
