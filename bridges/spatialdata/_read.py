"""SpatialData -> cellspec for a SpatialData made by ``to_spatialdata``, after any spatialdata operation that
keeps the table, or by ``spatialdata.concatenate`` of several; and reading a SpatialData ``.zarr`` store.
Anything not made here goes to :mod:`._foreign`.

A SpatialData that holds several tables of ``to_spatialdata``, as ``spatialdata.concatenate({"a": sa, "b":
sb})`` makes (one table per object, ``table-a``, ``table-b``), gives one cellspec: each table is converted on
its own (:func:`from_spatialdata` with its ``table_key``), then the parts are joined: cells, measurements,
images, channels and contacts one after the other. The parts must have the same dictionary, cells columns and
spec version (else :class:`~cellspec_sc.InputError` names the difference). An image id found in several parts
is renamed in each of them as spatialdata renamed its element: ``img1`` of table ``table-a`` becomes
``img1-a`` (in cells, images, channels and adjacency); other ids are kept. The provenance is the first part's,
with one history step naming every part and its producer, reader and creation time.
``concatenate(..., concatenate_tables=True)`` keeps no ``uns``, so the images, channels, dictionary and
contacts are gone: ``from_spatialdata`` refuses that table.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cellspec_sc._files import scratch_folder
from cellspec_sc.bridges._zarr import bounded_string_chunks, refuse_inflated_store
from cellspec_sc.bridges.anndata import from_anndata, rename_colour_keys
from cellspec_sc.bridges.spatialdata._foreign import FUNCTION, from_foreign_spatialdata
from cellspec_sc.bridges.spatialdata._record import (
    ANNDATA_UNS_KEY,
    OUTLINE_FILES_KEY,
    REGION_KEY,
    UNS_KEY,
    BridgeRecord,
    SpatialDataBridgeWarning,
    carries_record,
    decode,
    decode_files,
    lost_record,
)
from cellspec_sc.bridges.spatialdata._tables import (
    bridge_table,
    cells_table_key,
    cellspec_tables,
    instance_keys,
    rows_by_region,
    same_instances,
)
from cellspec_sc.errors import FormatError, InputError, require_extra
from cellspec_sc.io import DEFAULT_MAX_INFLATION, INFLATION_FLOOR_BYTES, TargetKind, materialise_outline_files
from cellspec_sc.model import CellSpec, sealed, with_history_step
from cellspec_sc.spec import canonical_frame

if TYPE_CHECKING:
    import anndata
    from spatialdata import SpatialData


def from_spatialdata(sdata: SpatialData, *, table_key: str | None = None, restrict_to_shapes: bool = True,
                     allow_modified: bool | Collection[str] = False, outline_dir: str | os.PathLike | None = None,
                     **foreign: Any) -> CellSpec:
    """The cellspec held by a SpatialData made by :func:`to_spatialdata`, after any spatialdata
    operation that keeps the table (queries, table filtering, added images or elements).

    A SpatialData made by ``spatialdata.concatenate`` of several such objects (one table per
    object) gives one cellspec of all tables (see the module doc); a table whose records were
    dropped (``concatenate_tables=True``) is refused. A SpatialData not made here is converted
    by :func:`from_foreign_spatialdata` with the keyword arguments in ``foreign``.

    Parameters
    ----------
    sdata
        The SpatialData.
    table_key
        The table holding the cells (default: the bridge's table, else the only table).
    restrict_to_shapes
        Keep only cells whose circle is still in the SpatialData, so a query with ``filter_table=False``
        gives the same cells as one with ``filter_table=True``; adjacency is trimmed to the remaining
        cells and the change is recorded in provenance history.
    allow_modified
        Passed to :func:`~cellspec_sc.from_anndata`.
    outline_dir
        The outline files named by ``images.geometry_ref`` travel in the table byte for byte; they are
        written here and it becomes the result's ``source_dir``, so that ``cs.write`` can put them into a
        cellspec directory again (without it, ``source_dir`` is None and ``cs.write`` refuses an object
        whose ``geometry_ref`` files it cannot find).
    **foreign
        For a SpatialData not made by :func:`to_spatialdata` only (``preset="spatialdata-io:steinbock"``,
        ``sample_id=``, ``pixel_size=``, ...).

    Returns
    -------
    CellSpec

    Raises
    ------
    InputError
        No such table, several tables and no ``table_key``, a table that lost the bridge's records,
        ``foreign`` options for a SpatialData made here, or a query that keeps no cell.
    FormatError
        The bridge's record is of a newer major version than this cellspec_sc reads.

    Examples
    --------
    >>> import cellspec_sc as cs
    >>> import spatialdata
    >>> x = cs.example()
    >>> part = spatialdata.bounding_box_query(cs.to_spatialdata(x), axes=("x", "y"), min_coordinate=[0, 0],
    ...                                       max_coordinate=[100, 100], target_coordinate_system="img1")
    >>> y = cs.from_spatialdata(part)
    >>> bool(y.n_cells < x.n_cells and y.validate().ok)
    True
    """
    require_extra("spatialdata", "cellspec_sc.from_spatialdata")
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
    if not carries_record(table):
        _refuse_lost_record(table, key)
        return from_foreign_spatialdata(sdata, table_key=key, allow_modified=allow_modified, **foreign)
    if foreign:
        raise InputError(f"from_spatialdata: {sorted(foreign)} only apply to a SpatialData not made by "
                         "cellspec_sc.to_spatialdata")
    record = decode(table.uns[UNS_KEY], where=f"SpatialData table {key!r}")
    keep = _rows_with_shapes(sdata, table, record) if restrict_to_shapes else None
    x = from_anndata(_plain_parts(table, record, keep), allow_modified=allow_modified)
    files = decode_files(table.uns.get(OUTLINE_FILES_KEY))
    if files and outline_dir is not None:
        x = x.replace(source_dir=materialise_outline_files(files, outline_dir))
    return x


def stored_outline_files(sdata: SpatialData, table_key: str | None = None) -> dict[str, bytes]:
    """The outline files carried by a SpatialData made by :func:`to_spatialdata`.

    Parameters
    ----------
    sdata
        The SpatialData.
    table_key
        The table holding the cells, as in :func:`from_spatialdata`.

    Returns
    -------
    dict
        ``{geometry_ref: bytes}``; empty when no file travelled.

    Examples
    --------
    >>> import cellspec_sc as cs
    >>> stored_outline_files(cs.to_spatialdata(cs.example()))
    {}
    """
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
    if lost_record(table):
        raise InputError(
            f"table {key!r} was made by cellspec_sc.to_spatialdata (it has obs[{REGION_KEY!r}]) but has lost "
            f"uns[{ANNDATA_UNS_KEY!r}] and uns[{UNS_KEY!r}], which hold the images, channels, dictionary, "
            "adjacency and provenance: spatialdata.concatenate(..., concatenate_tables=True) drops them "
            "(anndata.concat keeps no uns by default). Concatenate without concatenate_tables=True and join the "
            "tables with from_spatialdata(sdata), or convert each object with from_spatialdata before "
            "concatenating")


def _rows_with_shapes(sdata: SpatialData, table: anndata.AnnData, record: BridgeRecord) -> np.ndarray | None:
    """Rows whose circle is still in ``sdata`` (None when that is every row)."""
    region_key, instance_key = record.region_key, record.instance_key
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


def _plain_parts(table: anndata.AnnData, record: BridgeRecord, keep: np.ndarray | None) -> TableParts:
    """The AnnData of ``to_anndata`` again, as its parts: original obs names, no SpatialData annotations."""
    source = table if keep is None else table[keep]
    obs = source.obs.drop(columns=[record.region_key]).rename(columns=record.obs_columns_renamed)
    uns = {k: v for k, v in source.uns.items() if k not in (UNS_KEY, OUTLINE_FILES_KEY, "spatialdata_attrs")}
    rename_colour_keys(uns, record.obs_columns_renamed)
    layers = {k: v for k, v in source.layers.items() if k is not None}  # a view lists X as layers[None]
    return TableParts(X=source.X, obs=obs, var=source.var, uns=uns, obsm=dict(source.obsm), obsp=dict(source.obsp),
                      layers=layers, varm=dict(source.varm), raw=source.raw)


# -- several tables of to_spatialdata (spatialdata.concatenate) -------------------------------------
def from_concatenated(sdata: SpatialData, table_keys: list[str], convert: Callable[[str], CellSpec]) -> CellSpec:
    """Join ``convert(key)`` of every table in ``table_keys`` (see the module doc)."""
    parts = {key: convert(key) for key in table_keys}
    _check_compatible(parts)
    renames = _image_renames(parts)
    renamed = {key: _with_image_ids(x, renames[key]) for key, x in parts.items()}
    xs = list(renamed.values())
    adjacency = [x.adjacency for x in xs if x.adjacency is not None]
    joined = CellSpec(
        spec_version=xs[0].spec_version,
        cells=_concat([x.cells for x in xs], "cells"),
        measurements=sealed(np.concatenate([np.asarray(x.measurements, dtype=np.float64) for x in xs], axis=0)),
        dictionary=xs[0].dictionary,
        images=_concat([x.images for x in xs], "images"),
        channels=_concat([x.channels for x in xs], "channels"),
        adjacency=_concat(adjacency, "adjacency") if adjacency else None,
        provenance=with_history_step(xs[0].provenance, "join", FUNCTION, _details(parts, renames)),
    )
    joined.validate().raise_if_failed("from_spatialdata (joining the tables of a concatenated SpatialData)")
    return joined


def _check_compatible(parts: Mapping[str, CellSpec]) -> None:
    (first_key, first), *rest = parts.items()
    for key, x in rest:
        if str(x.spec_version) != str(first.spec_version):
            raise InputError(f"tables {first_key!r} and {key!r} hold different spec versions "
                             f"({first.spec_version}, {x.spec_version}); convert them one at a time with table_key=")
        if not x.dictionary.equals(first.dictionary):
            only = sorted(set(x.feature_ids) ^ set(first.feature_ids))
            raise InputError(f"tables {first_key!r} and {key!r} have different dictionaries"
                             f"{f' (features in one only: {only[:10]})' if only else ' (same ids, other fields)'}; "
                             "a cellspec has one dictionary: convert them one at a time with table_key=")
        if list(x.cells.columns) != list(first.cells.columns):
            raise InputError(f"tables {first_key!r} and {key!r} have different cells columns "
                             f"({list(first.cells.columns)} and {list(x.cells.columns)}); convert them one at a "
                             "time with table_key=")


def _suffix(key: str) -> str:
    """The key spatialdata appended to element and table names (``table-a`` -> ``a``)."""
    return key.split("-", 1)[1] if "-" in key else key


def _image_renames(parts: Mapping[str, CellSpec]) -> dict[str, dict[str, str]]:
    """Per table, ``{image_id: new id}`` for the image ids found in more than one part."""
    seen: dict[str, int] = {}
    for x in parts.values():
        for image_id in dict.fromkeys(str(i) for i in x.images["image_id"]):
            seen[image_id] = seen.get(image_id, 0) + 1
    taken = set(seen)
    out: dict[str, dict[str, str]] = {}
    for key, x in parts.items():
        mapping = {}
        for image_id in (str(i) for i in x.images["image_id"]):
            if seen[image_id] > 1:
                new = f"{image_id}-{_suffix(key)}"
                if new in taken:
                    raise InputError(f"image {image_id!r} of table {key!r} cannot be renamed to {new!r}: that id is "
                                     "taken; convert the tables one at a time with table_key=")
                taken.add(new)
                mapping[image_id] = new
        out[key] = mapping
    return out


def _with_image_ids(x: CellSpec, mapping: Mapping[str, str]) -> CellSpec:
    if not mapping:
        return x
    changes: dict[str, Any] = {}
    for table in ("cells", "images", "channels", "adjacency"):
        frame = getattr(x, table)
        if frame is not None:
            frame = frame.copy()
            frame["image_id"] = frame["image_id"].astype(object).map(lambda v: mapping.get(v, v)).astype(
                frame["image_id"].dtype)
            changes[table] = frame
    return x.replace(**changes)


def _concat(frames: list[pd.DataFrame], table: str) -> pd.DataFrame:
    return canonical_frame(pd.concat(frames, ignore_index=True), table)


def _details(parts: Mapping[str, CellSpec], renames: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    return {
        "source": "SpatialData with several tables of cellspec_sc.to_spatialdata (spatialdata.concatenate)",
        "tables": [{"table": key, "cells": int(x.n_cells), "images_renamed": dict(renames[key]),
                    "producer": x.provenance.get("producer"), "reader": x.provenance.get("reader"),
                    "created_utc": x.provenance.get("created_utc")} for key, x in parts.items()],
    }


# -- SpatialData .zarr stores ---------------------------------------------------------------------
def is_spatialdata_zarr(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a SpatialData zarr store: its root group has ``spatialdata_attrs``.

    Parameters
    ----------
    path
        Any path; a file, a missing path or a folder zarr cannot open gives False.

    Returns
    -------
    bool

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     is_spatialdata_zarr(folder)
    False
    """
    import zarr

    if not Path(path).is_dir():
        return False
    try:
        return "spatialdata_attrs" in zarr.open_group(str(path), mode="r").attrs
    except Exception:  # noqa: BLE001 - anything zarr cannot open is not a SpatialData store
        return False


def _refuse_url(url: str, storage_options: Any = None, overwrite: bool = False) -> None:
    # spatialdata 0.8's SpatialData.write turns the path into a pathlib.Path and checks it with os
    raise InputError(f"{url}: spatialdata writes a SpatialData store to a local path only (SpatialData.write "
                     "takes its path as a pathlib.Path); write it to a local path, then copy the store to the "
                     "bucket with the store's tools (for example fsspec's put(..., recursive=True))")


SPATIALDATA_ZARR = TargetKind("a SpatialData .zarr store", True, is_spatialdata_zarr, url_check=_refuse_url)


def read_spatialdata(path: str | os.PathLike, **options: Any) -> CellSpec:
    """Read a SpatialData zarr store and convert it with :func:`from_spatialdata`.

    Outline files carried by the store go to ``outline_dir`` when given, else to a temporary
    directory removed when the process ends (so ``cellspec convert`` can write them).

    Parameters
    ----------
    path
        The store.
    **options
        As for :func:`from_spatialdata`.

    Returns
    -------
    CellSpec

    Raises
    ------
    FormatError
        Not a readable SpatialData zarr store, or the bridge's record is of a newer major version; the
        message starts with ``path``.
    InputError
        As :func:`from_spatialdata`, the message starting with ``path``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import cellspec_sc as cs
    >>> from cellspec_sc.bridges.spatialdata import write_spatialdata
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = write_spatialdata(cs.example(), pathlib.Path(folder) / "x.spatialdata.zarr")
    ...     read_spatialdata(path).equals(cs.example())
    True
    """
    require_extra("spatialdata", "cellspec_sc.bridges.spatialdata.read_spatialdata")
    sdata = _read_zarr(path)
    try:
        if options.get("outline_dir") is None and stored_outline_files(sdata, options.get("table_key")):
            options["outline_dir"] = scratch_folder("outlines")
        return from_spatialdata(sdata, **options)
    except InputError as err:
        raise InputError(f"{path}: {err}") from None
    except FormatError as err:  # a record of a newer version
        raise FormatError(f"{path}: {err}") from None


def _read_zarr(path: str | os.PathLike) -> SpatialData:
    import spatialdata

    tables = Path(path) / "tables"
    if tables.is_dir():  # tables are read into memory whole (images stay lazy): their claims are bounded
        refuse_inflated_store(tables, DEFAULT_MAX_INFLATION, INFLATION_FLOOR_BYTES)
    try:
        with bounded_string_chunks():  # a damaged string chunk could claim 2**32 values (bridges/_zarr.py)
            return spatialdata.read_zarr(str(path))
    except Exception as err:  # noqa: BLE001 - zarr, anndata and geopandas raise many types on a damaged store
        raise FormatError(f"{path}: not a readable SpatialData zarr store ({type(err).__name__}: {err})") from None
