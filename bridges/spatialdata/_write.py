"""cellspec -> SpatialData: one circles element (and outlines) per image, two coordinate systems, one table;
and the same written as a ``.zarr`` store, published atomically.

Element names, coordinate-system names and obs columns must be names SpatialData accepts. SpatialData 0.8
(``spatialdata._core.validation.check_valid_name``) accepts an element name or table key when it is non-empty,
not ``.`` or ``..``, does not start with ``__`` and holds only alphanumeric characters, ``_``, ``-`` and ``.``;
names must also be unique when case is ignored, and table columns may not be called ``_index``. Its
``isalnum`` is Unicode-aware, but we keep names ASCII so that the zarr store works on every file system, and
refuse a leading ``.`` as well: spatialdata accepts ``.a`` but its ``read_zarr`` skips hidden groups, so the
element would be lost on disk.

:func:`sanitise` maps one string; :func:`allocate` maps a list of strings to unique names
(case-insensitively), keeping names that are already valid and adding ``-2``, ``-3``, ... where two ids would
collide. The result is a dict ``{original: name}`` that the record stores so the mapping can be reversed.

>>> sanitise("Tumour core #1")
'Tumour_core__1'
>>> sanitise("__x"), sanitise("."), sanitise(".hidden"), sanitise("éa")
('x__x', 'x.', 'x.hidden', '_a')
>>> allocate(["a b", "a_b", "A_B"])
{'a b': 'a_b-3', 'a_b': 'a_b', 'A_B': 'A_B-2'}
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc.bridges.anndata import rename_colour_keys, text_array, to_anndata
from cellspec_sc.bridges.spatialdata._images import IMAGE_SUFFIX, image_elements
from cellspec_sc.bridges.spatialdata._read import SPATIALDATA_ZARR
from cellspec_sc.bridges.spatialdata._record import (
    ATTRS_KEY,
    INSTANCE_KEY,
    OUTLINE_FILES_KEY,
    OUTLINES_SUFFIX,
    PIXEL_SUFFIX,
    RADIUS_FALLBACK_KEY,
    REGION_KEY,
    TABLE_KEY,
    UNS_KEY,
    BridgeRecord,
    SpatialDataBridgeWarning,
    encode,
    encode_attrs,
    encode_files,
)
from cellspec_sc.errors import Unstorable, require_extra
from cellspec_sc.images import ImageInput, checked_images
from cellspec_sc.io import check_target, check_url_target_of, image_outlines, is_url, outline_files, publishing
from cellspec_sc.model import CellSpec
from cellspec_sc.progress import progress
from cellspec_sc.validation import refuse_unstorable

if TYPE_CHECKING:
    import anndata
    import geopandas as gpd
    from spatialdata import SpatialData


def to_spatialdata(x: CellSpec, *, source_dir: str | os.PathLike | None = None, outlines: bool = True,
                   outline_units: str = "px", images: Mapping[str, ImageInput] | None = None,
                   verify: bool = True) -> SpatialData:
    """The cellspec as a SpatialData with one circles element (and, given outlines, one polygons
    element) per image, two coordinate systems per image and one table; ``x`` is not changed.

    Parameters
    ----------
    x
        The cellspec; it must pass structure validation.
    source_dir
        The cellspec directory that ``images.geometry_ref`` is relative to (default ``x.source_dir``).
    outlines
        ``False`` skips the GeoJSON outline files.
    outline_units
        Whether the outlines' coordinates are full-resolution pixels (``"px"``, QuPath) or ``"um"``.
    images
        ``{image_id: path or cs.open_image(...)}``: each becomes a multiscale image element ``<name>_image``
        (channel names on ``c``), lazy until written, in the image's pixel and micrometre coordinate systems;
        each is checked against ``x`` first (``docs/images.md``).
    verify
        Compare each image file's SHA-256 with ``images.source_image_sha256`` where that is set.

    Returns
    -------
    spatialdata.SpatialData
        Shapes, coordinate systems and the table ``"table"`` (``to_anndata(x)`` annotating the circles),
        mapped as ``docs/spatialdata.md`` shows.

    Raises
    ------
    ValidationError
        ``x`` fails a structure check.
    ImageError
        An image does not match its row of ``x.images`` or its ``image_id`` is unknown.

    Examples
    --------
    >>> import cellspec_sc as cs
    >>> sdata = cs.to_spatialdata(cs.example())
    >>> bool(sdata.shapes["img1"].geometry.iloc[0].x == cs.example().cells["x"].iloc[0])
    True
    """
    require_extra("spatialdata", "cellspec_sc.to_spatialdata")
    import spatialdata

    x.validate().raise_if_failed("to_spatialdata")
    opened = checked_images(x, images, verify=verify)
    names = _image_names(x)
    image_codes = _image_codes(x, names)
    groups = _cell_rows_by_image(image_codes, names)
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
        table.uns[OUTLINE_FILES_KEY] = encode_files(files)
    renamed = _make_obs_names_valid(table)
    table.obs[REGION_KEY] = _region_column(image_codes, groups, names)
    table.uns[UNS_KEY] = encode(_bridge_record(x, names, groups, renamed, fallback, outline_record))
    _annotate(table, [names[i] for i in groups])
    pixel_sizes = {image_id: _pixel_sizes(x.images, image_id) for image_id in opened}
    sdata = spatialdata.SpatialData(shapes=shapes, images=image_elements(opened, names, pixel_sizes),
                                    tables={TABLE_KEY: table})
    sdata.attrs[ATTRS_KEY] = encode_attrs(str(x.spec_version))
    refuse_long_file_names(sdata)
    return sdata


def write_spatialdata(x: CellSpec, path: str | os.PathLike, *, overwrite: bool = False, **options: Any) -> Path:
    """Write ``to_spatialdata(x, **options)`` as a zarr store and return its path.

    The store is written under a hidden name next to ``path`` and published atomically
    (:func:`cellspec_sc.io._publish.publishing`).

    Parameters
    ----------
    x
        The cellspec.
    path
        The store to write (``*.spatialdata.zarr`` by convention).
    overwrite
        Replace an existing ``path``, only if it is a SpatialData store.
    **options
        Passed to :func:`to_spatialdata`.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    FormatError
        ``path`` exists (``TargetExists``): without ``overwrite``, or it is not a SpatialData store.
    InputError
        ``x`` holds a name or value the store cannot hold (``Unstorable``).
    ValidationError
        ``x`` fails a structure check.
    WriteFailed
        The operating system refused a write; nothing was published.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import cellspec_sc as cs
    >>> from cellspec_sc.bridges.spatialdata import is_spatialdata_zarr
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = write_spatialdata(cs.example(), pathlib.Path(folder) / "x.spatialdata.zarr")
    ...     is_spatialdata_zarr(path)
    True
    """
    if is_url(path):
        check_url_target_of(SPATIALDATA_ZARR, str(path), overwrite=overwrite)
    check_target(path, SPATIALDATA_ZARR, overwrite=overwrite)
    refuse_unstorable(x, path, "a SpatialData .zarr store", text=False, names=True)
    sdata = to_spatialdata(x, **options)
    with publishing(path, SPATIALDATA_ZARR, overwrite=overwrite) as payload, \
            progress(1, f"writing {Path(path).name}", unit="file", size=np.size(x.measurements)):
        sdata.write(str(payload))  # spatialdata writes only to a path that does not exist yet
    return Path(path)


# zarr makes every element, table column and uns key a folder name; no common file system takes a longer one
FILE_NAME_MAX_BYTES = 255


def refuse_long_file_names(sdata: SpatialData) -> None:
    """Raise Unstorable when a name ``sdata`` would write as a file or folder name of its zarr store (element
    names, table keys, obs/var columns, obsm/layers/... keys, uns keys at any depth) is longer than
    :data:`FILE_NAME_MAX_BYTES`: refused here, before ``sdata.write`` has written anything, rather than as an
    OSError half way through the store."""
    for where, name in _file_names(sdata):
        size = len(str(name).encode("utf-8", "surrogatepass"))
        if size > FILE_NAME_MAX_BYTES:
            raise Unstorable(f"{where} {str(name)[:40]!r}... is {size} bytes long: a SpatialData .zarr store makes it "
                             f"a file name, and file names are at most {FILE_NAME_MAX_BYTES} bytes; nothing was "
                             "written (shorten the image id or column name; a cellspec directory can hold it)")


def _file_names(sdata: SpatialData) -> Iterator[tuple[str, Any]]:
    for kind in ("images", "labels", "points", "shapes", "tables"):
        for name in getattr(sdata, kind):
            yield f"{kind} element", name
    for key, table in sdata.tables.items():
        for frame in ("obs", "var"):
            for column in getattr(table, frame).columns:
                yield f"table {key!r} {frame} column", column
        for part in ("obsm", "varm", "obsp", "varp", "layers"):
            for name in getattr(table, part).keys():
                yield f"table {key!r} {part} key", name
        yield from _uns_names(f"table {key!r} uns key", table.uns)


def _uns_names(where: str, uns: Mapping[Any, Any]) -> Iterator[tuple[str, Any]]:
    for name, value in uns.items():
        yield where, name
        if isinstance(value, Mapping):
            yield from _uns_names(where, value)


def _image_names(x: CellSpec) -> dict[str, str]:
    """Element / coordinate system base name of every image, in images order (validation has
    made sure that every image of a cell is there)."""
    ids = [str(i) for i in x.images["image_id"]]
    return allocate(ids, taken=[TABLE_KEY], suffixes=("", OUTLINES_SUFFIX, PIXEL_SUFFIX, IMAGE_SUFFIX))


def _image_codes(x: CellSpec, names: Mapping[str, str]) -> np.ndarray:
    """Position in ``names`` of every cell's image (-1 for an image ``names`` lacks, which validation refuses);
    text columns are looked up in Arrow, without a Python string per cell."""
    column = x.cells["image_id"]
    if isinstance(column.dtype, pd.StringDtype):
        found = pc.index_in(text_array(column), value_set=pa.array(list(names), type=pa.string()))
        return found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.intp, copy=False)
    return pd.Categorical(column.astype(object).to_numpy(), categories=list(names)).codes.astype(np.intp)


def _cell_rows_by_image(image_codes: np.ndarray, names: Mapping[str, str]) -> dict[str, np.ndarray]:
    """Row positions of the cells of each image that has cells, in ``names`` order."""
    order = np.argsort(image_codes, kind="stable")
    bounds = np.searchsorted(image_codes[order], np.arange(len(names) + 1))
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
    import shapely
    from spatialdata.models import ShapesModel

    cells = x.cells
    area = cells["area"].to_numpy(dtype=np.float64, na_value=np.nan)[rows] if "area" in cells \
        else np.full(len(rows), np.nan)
    radius = np.sqrt(area / np.pi)
    missing = ~np.isfinite(radius) | (radius <= 0)
    if missing.any():
        known = radius[~missing]
        image_id = str(cells["image_id"].iloc[rows[0]])
        radius[missing] = np.median(known) if known.size else _pixel_sizes(x.images, image_id)[0]
    # shapely builds points from one (n, 2) array faster than from separate x and y
    xy = np.column_stack([cells["x"].to_numpy(dtype=np.float64)[rows], cells["y"].to_numpy(dtype=np.float64)[rows]])
    index = pd.Index(cell_ids.array.take(rows), dtype=cell_ids.dtype, name=None)
    frame = gpd.GeoDataFrame({"radius": radius, RADIUS_FALLBACK_KEY: missing},
                             geometry=gpd.array.from_shapely(shapely.points(xy)), index=index)
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


def _make_obs_names_valid(table: anndata.AnnData) -> dict[str, str]:
    """Rename obs columns SpatialData refuses, and their ``uns["<column>_colors"]`` with them; returns
    ``{new: original}``."""
    columns = [str(c) for c in table.obs.columns]
    mapping = allocate(columns, taken=[REGION_KEY], column=True)
    renamed = {new: old for old, new in mapping.items() if new != old}
    if renamed:
        table.obs.columns = [mapping[c] for c in columns]
        rename_colour_keys(table.uns, renamed)
    return renamed


def _region_column(image_codes: np.ndarray, groups: Mapping[str, np.ndarray], names: Mapping[str, str]
                   ) -> pd.Categorical:
    """The element name of every cell, categorical over the annotated elements."""
    region_of_image = np.full(len(names) + 1, -1, dtype=np.intp)  # the last entry: an image names lacks
    for k, image_id in enumerate(groups):
        region_of_image[list(names).index(image_id)] = k
    return pd.Categorical.from_codes(region_of_image[image_codes], categories=[names[i] for i in groups])


def _annotate(table: anndata.AnnData, regions: list[str]) -> None:
    """Make ``table`` annotate the circles ``regions``: what ``TableModel.parse(table, region=regions,
    region_key=REGION_KEY, instance_key=INSTANCE_KEY)`` makes of it, then ``TableModel.validate``.

    Parse's own check that ``cell_id`` is unique within each region groups every obs column by region (most of
    the call's time for a million cells); it holds by construction, as a region is one image and validation has
    refused a repeated ``(image_id, cell_id)`` (``cells_key_unique``).
    """
    from spatialdata.models import TableModel

    table.uns[TableModel.ATTRS_KEY] = {TableModel.REGION_KEY: regions, TableModel.REGION_KEY_KEY: REGION_KEY,
                                       TableModel.INSTANCE_KEY: INSTANCE_KEY}
    TableModel.validate(table)


def _bridge_record(x: CellSpec, names: Mapping[str, str], groups: Mapping[str, np.ndarray],
                   renamed: Mapping[str, str], fallback: Mapping[str, int], outlines: Mapping[str, Any]
                   ) -> BridgeRecord:
    """What the record tells of each image, the renamed obs columns and the fallback radii."""
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
    return BridgeRecord(images=images, obs_columns_renamed=dict(renamed), fallback_cells=dict(fallback))


# -- names SpatialData accepts ---------------------------------------------------------------------
_INVALID = re.compile(r"[^A-Za-z0-9_.-]")
_RESERVED_COLUMNS = frozenset({"_index"})


def is_valid(name: str, *, column: bool = False) -> bool:
    """Whether SpatialData accepts ``name`` unchanged (ASCII subset; ``column`` adds the ``_index`` rule),
    and it survives a zarr round trip: spatialdata 0.8 accepts ``.a`` but ``read_zarr`` skips
    such a hidden group, so a leading ``.`` is refused too."""
    return (bool(name) and not name.startswith(("__", ".")) and _INVALID.search(name) is None
            and not (column and name in _RESERVED_COLUMNS))


def sanitise(name: str, *, column: bool = False) -> str:
    """``name`` with every character outside ``A-Za-z0-9_.-`` replaced by ``_``; a name that
    would still be refused (empty, leading ``.`` or ``__``, ``_index`` for columns) gets the
    prefix ``x``."""
    out = _INVALID.sub("_", str(name))
    return out if is_valid(out, column=column) else "x" + out


def allocate(names: Sequence[str], *, taken: Iterable[str] = (), suffixes: Sequence[str] = ("",),
             column: bool = False) -> dict[str, str]:
    """Unique valid names for ``names`` (``{original: name}``, in input order).

    ``taken`` are names already in use. Each result ``n`` reserves ``n + s``
    for every ``s`` in ``suffixes`` (e.g. ``("", "_px")`` when an image also
    names a pixel coordinate system), all compared case-insensitively. Names
    that are already valid are placed first, so they are kept whenever they
    do not collide among themselves.
    """
    used = {t.lower() for t in taken}
    out: dict[str, str] = {}
    valid_first = [n for n in names if is_valid(n, column=column)] + \
                  [n for n in names if not is_valid(n, column=column)]
    for name in valid_first:
        if name in out:
            continue
        base = name if is_valid(name, column=column) else sanitise(name, column=column)
        candidate, k = base, 2
        while any((candidate + s).lower() in used for s in suffixes):
            candidate, k = f"{base}-{k}", k + 1
        used.update((candidate + s).lower() for s in suffixes)
        out[name] = candidate
    return {n: out[n] for n in dict.fromkeys(names)}
