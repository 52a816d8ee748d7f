"""Finding the cells table in a SpatialData, and the rows of each region (element) it annotates."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from cellspec_sc.bridges.anndata import text_array
from cellspec_sc.bridges.spatialdata._record import carries_record, table_in_attrs
from cellspec_sc.errors import InputError

if TYPE_CHECKING:
    from spatialdata import SpatialData


def cells_table_key(sdata: SpatialData, table_key: str | None) -> str:
    """The key of the table holding the cells: ``table_key`` when given, else the bridge's table (named in
    ``sdata.attrs``), else the only table; refused when there is none or several."""
    tables = list(sdata.tables)
    if table_key is not None:
        if table_key not in sdata.tables:
            raise InputError(f"SpatialData has no table {table_key!r} (tables: {tables or 'none'})")
        return table_key
    ours = bridge_table(sdata)
    if ours in sdata.tables:
        return str(ours)
    if len(tables) == 1:
        return tables[0]
    if not tables:
        raise InputError("SpatialData has no table; a cellspec needs one table with the cells (a spatialdata "
                         "query that keeps no cell drops the table too)")
    raise InputError(f"SpatialData has {len(tables)} tables {tables}; say which holds the cells with table_key=")


def bridge_table(sdata: SpatialData) -> str | None:
    """The table named in ``sdata.attrs["cellspec_sc"]`` (spatialdata.concatenate drops attrs)."""
    return table_in_attrs(sdata.attrs)


def cellspec_tables(sdata: SpatialData) -> list[str]:
    """Keys of the tables that carry both records of ``to_spatialdata``."""
    return [k for k, t in sdata.tables.items() if carries_record(t)]


def rows_by_region(regions: pd.Series) -> list[tuple[str, np.ndarray]]:
    """(region name, row positions) for every region that has rows (missing regions left out)."""
    codes = pd.Categorical(regions)
    rows = (np.flatnonzero(codes.codes == k) for k in range(len(codes.categories)))
    return [(str(name), where) for name, where in zip(codes.categories, rows, strict=True) if where.size]


def instance_keys(values: pd.Series | pd.Index) -> pd.Index:
    """Instance ids as strings, so that ids stored as numbers match ids stored as text (object
    dtype: pandas' ``isin`` on Arrow strings loops in Python)."""
    return pd.Index(values.astype(str).to_numpy(dtype=object), dtype=object)


def same_instances(values: pd.Series, index: pd.Index) -> bool:
    """Whether ``values`` name the shapes of ``index`` one for one, in order (as ``to_spatialdata`` writes
    them). Text against text is compared in Arrow, without a Python string per id; a False from there
    only means "not the same text", and callers then match by :func:`instance_keys`.

    >>> same_instances(pd.Series(["1", "2"], dtype="string"), pd.Index(["1", "2"], dtype="string"))
    True
    >>> same_instances(pd.Series([1, 2]), pd.Index(["1", "2"]))
    True
    """
    if isinstance(values.dtype, pd.StringDtype) and isinstance(index.dtype, pd.StringDtype):
        return text_array(values).equals(text_array(index))
    return instance_keys(values).equals(instance_keys(index))
