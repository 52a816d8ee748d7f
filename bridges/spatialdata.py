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

>>> import cellspec_sc as cs
>>> x = cs.example()
>>> sdata = cs.to_spatialdata(x)
>>> sorted(sdata.shapes), sorted(sdata.tables)
(['img1', 'img2'], ['table'])
>>> cs.from_spatialdata(sdata).equals(x)
True
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cellspec_sc.model.cellspec import CellSpec
from cellspec_sc.errors import FormatError, InputError
from cellspec_sc.model.provenance import package_version, with_history_step
from cellspec_sc.validation.portability import refuse_unstorable
from cellspec_sc.io.publish import TargetKind, check_target, publishing
from cellspec_sc.progress import progress

from cellspec_sc.io.outlines import image_outlines, materialise_outline_files, outline_files

from cellspec_sc.bridges.anndata import from_anndata, to_anndata
from cellspec_sc.bridges.anndata_foreign import from_foreign_anndata
from cellspec_sc.bridges.sd_names import allocate
from cellspec_sc.bridges.uns_tables import from_json_text, to_json_text

if TYPE_CHECKING:
    import anndata
    import geopandas as gpd
    from spatialdata import SpatialData

BRIDGE_VERSION = "1"
TABLE_KEY = "table"
REGION_KEY = "cs__region"  # the spec reserves cs__ for internal use, so no cells column has this name
INSTANCE_KEY = "cell_id"
UNS_KEY = "cellspec_spatialdata"
OUTLINE_FILES_KEY = "cellspec_outline_files"
ANNDATA_UNS_KEY = "cellspec"
ATTRS_KEY = "cellspec_sc"
OUTLINES_SUFFIX = "_outlines"
PIXEL_SUFFIX = "_px"
RADIUS_FALLBACK_KEY = "radius_is_fallback"
RADIUS_RULE = "sqrt(area / pi)"
FALLBACK_RULE = ("median radius of the image's cells with an area; one pixel (pixel_size) "
                 "if no cell of the image has an area")


class SpatialDataBridgeWarning(UserWarning):
    """Something of a SpatialData was not carried into the cellspec, or an outline did not match."""


# -- cellspec -> SpatialData ---------------------------------------------------------------------
def to_spatialdata(x: CellSpec, *, source_dir: str | os.PathLike | None = None, outlines: bool = True,
                   outline_units: str = "px") -> SpatialData:
    """The cellspec as a SpatialData with one circles element (and, given outlines, one polygons
    element) per image, two coordinate systems per image and one table; ``x`` is not changed.

    ``source_dir`` is the cellspec directory that ``images.geometry_ref`` is relative to
    (default ``x.source_dir``); ``outlines=False`` skips the GeoJSON files; ``outline_units``
    says whether their coordinates are full-resolution pixels (``"px"``, QuPath) or ``"um"``.
    The object must pass structure validation (:class:`~cellspec_sc.ValidationError`).

    >>> import cellspec_sc as cs
    >>> sdata = cs.to_spatialdata(cs.example())
    >>> bool(sdata.shapes["img1"].geometry.iloc[0].x == cs.example().cells["x"].iloc[0])
    True
    """
    import spatialdata
    from spatialdata.models import TableModel

    x.validate().raise_if_failed("to_spatialdata")
    names = _image_names(x)
    groups = _cell_rows_by_image(x, names)
    table = to_anndata(x)
    cell_ids = table.obs[INSTANCE_KEY]
    shapes: dict[str, gpd.GeoDataFrame] = {}
    fallback: dict[str, int] = {}
    with progress(x.n_cells, "to_spatialdata shapes", unit="cells", size=np.size(x.measurements)) as bar:
        for image_id, rows in groups.items():
            name, transforms = names[image_id], _transformations(x.images, image_id, names[image_id])
            shapes[name], n_fallback = _circles(x, rows, cell_ids, transforms)
            if n_fallback:
                fallback[image_id] = n_fallback
            bar.update(len(rows))
        files = outline_files(x, source_dir=source_dir) if outlines else {}
        outline_record = _add_outlines(x, groups, names, cell_ids, shapes, files, outline_units)
    if files:
        table.uns[OUTLINE_FILES_KEY] = _encode_files(files)
    renamed = _make_obs_names_valid(table)
    table.obs[REGION_KEY] = _region_column(x, groups, names)
    table.uns[UNS_KEY] = to_json_text(_record(x, names, groups, renamed, fallback, outline_record))
    regions = [names[i] for i in groups]
    table = TableModel.parse(table, region=regions, region_key=REGION_KEY, instance_key=INSTANCE_KEY)
    sdata = spatialdata.SpatialData(shapes=shapes, tables={TABLE_KEY: table})
    sdata.attrs[ATTRS_KEY] = {"package": "cellspec_sc", "version": package_version(),
                              "spec_version": str(x.spec_version), "bridge_version": BRIDGE_VERSION,
                              "table": TABLE_KEY}
    return sdata


def _image_names(x: CellSpec) -> dict[str, str]:
    """Element / coordinate system base name of every image, in images order (validation has
    made sure that every image of a cell is there)."""
    ids = [str(i) for i in x.images["image_id"]]
    return allocate(ids, taken=[TABLE_KEY], suffixes=("", OUTLINES_SUFFIX, PIXEL_SUFFIX))


def _cell_rows_by_image(x: CellSpec, names: Mapping[str, str]) -> dict[str, np.ndarray]:
    """Row positions of the cells of each image that has cells, in ``names`` order."""
    image_of_cell = x.cells["image_id"].astype(object).to_numpy()
    codes = pd.Categorical(image_of_cell, categories=list(names)).codes
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    return {image_id: order[bounds[k]:bounds[k + 1]] for k, image_id in enumerate(names)
            if bounds[k + 1] > bounds[k]}


def _pixel_sizes(images: pd.DataFrame, image_id: str) -> tuple[float, float]:
    row = images[images["image_id"] == image_id].iloc[0]
    ps_x = float(row["pixel_size"])
    ps_y = row["pixel_size_y"] if "pixel_size_y" in images.columns else None
    ps_y = ps_x if ps_y is None or pd.isna(ps_y) else float(ps_y)
    return ps_x, ps_y


def _transformations(images: pd.DataFrame, image_id: str, name: str) -> dict[str, Any]:
    """``<name>``: micrometres as stored; ``<name>_px``: the full-resolution pixel grid.

    The spec puts the centre of pixel ``i`` at ``(i + 0.5) * pixel_size`` um and SpatialData
    the centre of pixel ``i`` of an image at ``i + 0.5``, so a pure scale aligns the two.
    """
    from spatialdata.transformations import Identity, Scale

    scale = _pixel_scale(images, image_id)
    out: dict[str, Any] = {name: Identity()}
    if scale is not None:
        out[name + PIXEL_SUFFIX] = Scale(list(scale), axes=("x", "y"))
    return out


def _pixel_scale(images: pd.DataFrame, image_id: str) -> tuple[float, float] | None:
    """Pixels per micrometre in x and y; None when that is not finite (subnormal pixel sizes),
    as a coordinate transformation with an infinite scale is not valid NGFF JSON."""
    ps_x, ps_y = _pixel_sizes(images, image_id)
    with np.errstate(over="ignore", divide="ignore"):
        scale = (float(np.float64(1.0) / ps_x), float(np.float64(1.0) / ps_y))
    return scale if all(np.isfinite(scale)) else None


def _circles(x: CellSpec, rows: np.ndarray, cell_ids: pd.Series, transforms: dict[str, Any]
             ) -> tuple[gpd.GeoDataFrame, int]:
    import geopandas as gpd
    from spatialdata.models import ShapesModel

    cells = x.cells.iloc[rows]
    area = cells["area"].to_numpy(dtype=np.float64, na_value=np.nan) if "area" in cells else np.full(len(rows), np.nan)
    radius = np.sqrt(area / np.pi)
    missing = ~np.isfinite(radius) | (radius <= 0)
    if missing.any():
        known = radius[~missing]
        image_id = str(cells["image_id"].iloc[0])
        radius[missing] = np.median(known) if known.size else _pixel_sizes(x.images, image_id)[0]
    index = pd.Index(cell_ids.iloc[rows].to_numpy(), dtype=cell_ids.dtype, name=None)
    frame = gpd.GeoDataFrame(
        {"radius": radius, RADIUS_FALLBACK_KEY: missing},
        geometry=gpd.points_from_xy(cells["x"].to_numpy(dtype=np.float64), cells["y"].to_numpy(dtype=np.float64)),
        index=index,
    )
    return ShapesModel.parse(frame, transformations=transforms), int(missing.sum())


def _add_outlines(x: CellSpec, groups: Mapping[str, np.ndarray], names: Mapping[str, str], cell_ids: pd.Series,
                  shapes: dict[str, gpd.GeoDataFrame], files: Mapping[str, Path], units: str) -> dict[str, Any]:
    """Add one polygons element per image with readable outlines; returns what was read."""
    import geopandas as gpd
    from spatialdata.models import ShapesModel

    record: dict[str, Any] = {}
    for image_id, found in image_outlines(x, units=units, files=dict(files)).items():
        rows = groups.get(image_id)
        if rows is None:
            continue
        ids = cell_ids.iloc[rows]
        geometry = found.for_cells(ids.astype(object))
        record[image_id] = {"n_outlines": len(geometry), "cells_without_outline": int(len(rows) - len(geometry)),
                            "skipped": dict(found.skipped)}
        if geometry.empty:
            warnings.warn(f"image {image_id!r}: no outline in {found.path.name} matches a cell id",
                          SpatialDataBridgeWarning, stacklevel=3)
            continue
        name = names[image_id]
        index = pd.Index(geometry.index, dtype=cell_ids.dtype)
        frame = gpd.GeoDataFrame(geometry=gpd.GeoSeries(geometry.to_numpy(), index=index))
        shapes[name + OUTLINES_SUFFIX] = ShapesModel.parse(
            frame, transformations=_transformations(x.images, image_id, name))
        record[image_id]["element"] = name + OUTLINES_SUFFIX
    return record


def _encode_files(files: Mapping[str, Path]) -> dict[str, Any]:
    """Outline files, byte for byte, as arrays anndata writes to zarr and h5ad."""
    out: dict[str, Any] = {"paths": np.array(list(files), dtype=object)}
    for i, path in enumerate(files.values()):
        out[f"f{i}"] = np.frombuffer(path.read_bytes(), dtype=np.uint8)
    return out


def _decode_files(stored: Any) -> dict[str, bytes]:
    if not isinstance(stored, Mapping) or "paths" not in stored:
        return {}
    paths = [str(p) for p in np.asarray(stored["paths"]).tolist()]
    return {ref: np.asarray(stored[f"f{i}"], dtype=np.uint8).tobytes() for i, ref in enumerate(paths)}


def _make_obs_names_valid(table: anndata.AnnData) -> dict[str, str]:
    """Rename obs columns SpatialData refuses; returns ``{new: original}``."""
    columns = [str(c) for c in table.obs.columns]
    mapping = allocate(columns, taken=[REGION_KEY], column=True)
    renamed = {new: old for old, new in mapping.items() if new != old}
    if renamed:
        table.obs.columns = [mapping[c] for c in columns]
    return renamed


def _region_column(x: CellSpec, groups: Mapping[str, np.ndarray], names: Mapping[str, str]) -> pd.Categorical:
    """The element name of every cell, categorical over the annotated elements."""
    regions = [names[i] for i in groups]
    values = np.empty(x.n_cells, dtype=object)
    for image_id, rows in groups.items():
        values[rows] = names[image_id]
    return pd.Categorical(values, categories=regions)


def _record(x: CellSpec, names: Mapping[str, str], groups: Mapping[str, np.ndarray], renamed: Mapping[str, str],
            fallback: Mapping[str, int], outlines: Mapping[str, Any]) -> dict[str, Any]:
    images = []
    for image_id, name in names.items():
        entry: dict[str, Any] = {"image_id": image_id, "name": name, "n_cells": int(len(groups.get(image_id, ())))}
        if image_id in groups:
            has_pixels = _pixel_scale(x.images, image_id) is not None
            entry.update(circles=name, coordinate_system=name,
                         pixel_coordinate_system=name + PIXEL_SUFFIX if has_pixels else None,
                         pixel_size=list(_pixel_sizes(x.images, image_id)))
        if image_id in outlines:
            entry["outlines"] = outlines[image_id]
        images.append(entry)
    return {
        "bridge_version": BRIDGE_VERSION,
        "region_key": REGION_KEY,
        "instance_key": INSTANCE_KEY,
        "images": images,
        "obs_columns_renamed": dict(renamed),
        "radius": {"rule": RADIUS_RULE, "fallback_rule": FALLBACK_RULE, "fallback_cells": dict(fallback),
                   "fallback_column": RADIUS_FALLBACK_KEY},
    }


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
    ours = _cellspec_tables(sdata)
    if table_key is None and len(ours) > 1 and _bridge_table(sdata) not in sdata.tables and _disjoint(sdata, ours):
        from cellspec_sc.bridges.sd_concat import from_concatenated

        if foreign:
            raise InputError(f"from_spatialdata: {sorted(foreign)} only apply to a SpatialData not made by "
                             "cellspec_sc.to_spatialdata")
        return from_concatenated(sdata, ours, lambda key: from_spatialdata(
            sdata, table_key=key, restrict_to_shapes=restrict_to_shapes, allow_modified=allow_modified,
            outline_dir=outline_dir))
    key = _table_key(sdata, table_key)
    table = sdata.tables[key]
    if ANNDATA_UNS_KEY not in table.uns or UNS_KEY not in table.uns:
        _refuse_lost_record(table, key)
        return from_foreign_spatialdata(sdata, table_key=key, allow_modified=allow_modified, **foreign)
    if foreign:
        raise InputError(f"from_spatialdata: {sorted(foreign)} only apply to a SpatialData not made by "
                         "cellspec_sc.to_spatialdata")
    record = _read_record(table)
    keep = _rows_with_shapes(sdata, table, record) if restrict_to_shapes else None
    x = from_anndata(_plain_anndata(table, record, keep), allow_modified=allow_modified)
    files = _decode_files(table.uns.get(OUTLINE_FILES_KEY))
    if files and outline_dir is not None:
        x = x.replace(source_dir=materialise_outline_files(files, outline_dir))
    return x


def stored_outline_files(sdata: SpatialData, table_key: str | None = None) -> dict[str, bytes]:
    """The outline files carried by a SpatialData made by :func:`to_spatialdata` (``{geometry_ref: bytes}``)."""
    return _decode_files(sdata.tables[_table_key(sdata, table_key)].uns.get(OUTLINE_FILES_KEY))


def _table_key(sdata: SpatialData, table_key: str | None) -> str:
    tables = list(sdata.tables)
    if table_key is not None:
        if table_key not in sdata.tables:
            raise InputError(f"SpatialData has no table {table_key!r} (tables: {tables or 'none'})")
        return table_key
    ours = _bridge_table(sdata)
    if ours in sdata.tables:
        return str(ours)
    if len(tables) == 1:
        return tables[0]
    if not tables:
        raise InputError("SpatialData has no table; a cellspec needs one table with the cells (a spatialdata "
                         "query that keeps no cell drops the table too)")
    raise InputError(f"SpatialData has {len(tables)} tables {tables}; say which holds the cells with table_key=")


def _bridge_table(sdata: SpatialData) -> str | None:
    """The table named in ``sdata.attrs["cellspec_sc"]`` (spatialdata.concatenate drops attrs)."""
    return (sdata.attrs.get(ATTRS_KEY) or {}).get("table") if isinstance(sdata.attrs, Mapping) else None


def _cellspec_tables(sdata: SpatialData) -> list[str]:
    """Keys of the tables that carry both records of ``to_spatialdata``."""
    return [k for k, t in sdata.tables.items() if ANNDATA_UNS_KEY in t.uns and UNS_KEY in t.uns]


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
    for region, rows in _rows_by_region(table.obs[region_key]):
        element = sdata.shapes.get(region)
        if element is None:
            gone[region] = int(rows.size)
        else:
            keep[rows] = _keys(table.obs[instance_key].iloc[rows]).isin(_keys(element.index))
    if gone:
        warnings.warn(f"cells of shapes elements that are not in the SpatialData are left out: {gone} "
                      "(restrict_to_shapes=False keeps them)", SpatialDataBridgeWarning, stacklevel=3)
    return None if keep.all() else keep


def _rows_by_region(regions: pd.Series) -> list[tuple[str, np.ndarray]]:
    """(region name, row positions) for every region that has rows (missing regions left out)."""
    codes = pd.Categorical(regions)
    return [(str(name), np.flatnonzero(codes.codes == k)) for k, name in enumerate(codes.categories)
            if (codes.codes == k).any()]


def _keys(values: pd.Series | pd.Index) -> pd.Index:
    """Instance ids as strings, so that ids stored as numbers match ids stored as text (object
    dtype: pandas' ``isin`` on Arrow strings loops in Python)."""
    return pd.Index(values.astype(str).to_numpy(dtype=object), dtype=object)


def _plain_anndata(table: anndata.AnnData, record: Mapping[str, Any], keep: np.ndarray | None) -> anndata.AnnData:
    """The AnnData of ``to_anndata`` again: original obs names, no SpatialData annotations."""
    import anndata

    source = table if keep is None else table[keep]
    renamed = record.get("obs_columns_renamed") or {}
    obs = source.obs.drop(columns=[record["region_key"]]).rename(columns=renamed)
    uns = {k: v for k, v in source.uns.items() if k not in (UNS_KEY, OUTLINE_FILES_KEY, "spatialdata_attrs")}
    layers = {k: v for k, v in source.layers.items() if k is not None}  # a view lists X as layers[None]
    return anndata.AnnData(X=source.X, obs=obs, var=source.var, obsm=dict(source.obsm), obsp=dict(source.obsp),
                           layers=layers, varm=dict(source.varm), uns=uns)


# -- files -----------------------------------------------------------------------------------------
def is_spatialdata_zarr(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a SpatialData zarr store: its root group has ``spatialdata_attrs``."""
    import zarr

    if not Path(path).is_dir():
        return False
    try:
        return "spatialdata_attrs" in zarr.open_group(str(path), mode="r").attrs
    except Exception:  # noqa: BLE001 - anything zarr cannot open is not a SpatialData store
        return False


SPATIALDATA_ZARR = TargetKind("a SpatialData .zarr store", True, is_spatialdata_zarr)


def read_spatialdata(path: str | os.PathLike, **options: Any) -> CellSpec:
    """Read a SpatialData zarr store and convert it with :func:`from_spatialdata` (``options`` as there).

    Outline files carried by the store go to ``outline_dir`` when given, else to a temporary
    directory removed when the process ends (so ``cellspec convert`` can write them).
    """
    try:
        sdata = _read_zarr(path)
        if options.get("outline_dir") is None and stored_outline_files(sdata, options.get("table_key")):
            options["outline_dir"] = _temporary_directory()
        return from_spatialdata(sdata, **options)
    except InputError as err:
        raise InputError(f"{path}: {err}") from None


def write_spatialdata(x: CellSpec, path: str | os.PathLike, *, overwrite: bool = False, **options: Any) -> Path:
    """Write ``to_spatialdata(x, **options)`` as a zarr store and return its path.

    The store is written under a hidden name next to ``path`` and published atomically
    (:func:`cellspec_sc.io.publish.publishing`). An existing ``path`` is replaced only with
    ``overwrite=True`` and only if it is a SpatialData store.
    """
    check_target(path, SPATIALDATA_ZARR, overwrite=overwrite)
    refuse_unstorable(x, path, "a SpatialData .zarr store", text=False, names=True)
    sdata = to_spatialdata(x, **options)
    with publishing(path, SPATIALDATA_ZARR, overwrite=overwrite) as payload, \
            progress(1, f"writing {Path(path).name}", unit="file", size=np.size(x.measurements)):
        sdata.write(str(payload))  # spatialdata writes only to a path that does not exist yet
    return Path(path)


def _temporary_directory() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="cellspec-outlines-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return directory


def _read_zarr(path: str | os.PathLike) -> SpatialData:
    import spatialdata

    try:
        return spatialdata.read_zarr(str(path))
    except Exception as err:  # noqa: BLE001 - zarr, anndata and geopandas raise many types on a damaged store
        raise FormatError(f"{path}: not a readable SpatialData zarr store ({type(err).__name__}: {err})") from None


# -- foreign SpatialData -------------------------------------------------------------------------
def from_foreign_spatialdata(sdata: SpatialData, *, table_key: str | None = None,
                             coordinate_system: str | None = None, **options: Any) -> CellSpec:
    """A cellspec from a SpatialData not made by :func:`to_spatialdata` (spatialdata-io, ...).

    The table is read by :func:`~cellspec_sc.bridges.anndata_foreign.from_foreign_anndata`,
    which needs the facts a SpatialData does not hold (``sample_id`` or ``sample_key``,
    ``pixel_size``, ``coordinate_unit``; optionally ``features``, ``producer``); a
    :class:`~cellspec_sc.InputError` names each one that is missing. When the table annotates
    shapes (``region`` / ``region_key`` / ``instance_key`` in ``uns["spatialdata_attrs"]``) the
    defaults come from there: cell ids from the instance key, image ids from the region (the
    element name), and, unless ``coordinates=`` is given, centroids from the shapes (circle
    centres, polygon centroids) in their own coordinates, or in ``coordinate_system`` when
    given. Rows whose shape is missing are left out (with a warning).

    >>> import cellspec_sc as cs
    >>> sdata = cs.to_spatialdata(cs.example())
    >>> del sdata.tables["table"].uns["cellspec"]
    >>> cs.from_spatialdata(sdata)
    Traceback (most recent call last):
    ...
    cellspec_sc.errors.InputError: ...sample_id='<id>' or sample_key='<obs column>'...
    """
    from spatialdata.models import get_table_keys

    key = _table_key(sdata, table_key)
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


FUNCTION = "cellspec_sc.from_spatialdata"
_CENTROIDS = "cellspec_shape_centroids"


def _with_shape_centroids(sdata: SpatialData, table: anndata.AnnData, region_key: str, instance_key: str,
                          coordinate_system: str | None) -> anndata.AnnData:
    """The rows of ``table`` that have a shape, with ``obsm["cellspec_shape_centroids"]`` added."""
    instances = _keys(table.obs[instance_key])
    xy = np.full((table.n_obs, 2), np.nan)
    for region, rows in _rows_by_region(table.obs[region_key]):
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
                        index=_keys(element.index))
