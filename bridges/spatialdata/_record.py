"""What ``to_spatialdata`` stores besides the AnnData table, as one versioned codec: the keys and names the
bridge uses, its record in ``table.uns``, its ``sdata.attrs`` entry and the outline files, each encoded and
decoded side by side.

Three things travel with a SpatialData made by the bridge, next to the table of ``to_anndata``:

* ``table.uns["cellspec_spatialdata"]``, JSON text (:class:`BridgeRecord`): the element and coordinate-system
  names of every image, the obs columns renamed for SpatialData, the radius rule and fallback counts, the
  outlines read;
* ``sdata.attrs["cellspec_sc"]``: the producing package and the key of the table
  (``spatialdata.concatenate`` drops attrs, so only the table key is read back);
* ``table.uns["cellspec_outline_files"]``: the ``images.geometry_ref`` files, byte for byte.

The record and the attrs carry ``format_version`` (:data:`RECORD`). Version 1.0 is what the bridge wrote before
versions were stored (``"bridge_version": "1"`` and no ``format_version``); 1.1 writes ``format_version`` in
its place and nothing else changed, so 1.0 readers read it. A record of a newer major version is refused.

>>> record = BridgeRecord(images=[{"image_id": "img1", "name": "img1"}], obs_columns_renamed={"x_index": "_index"},
...                       fallback_cells={})
>>> text = encode(record)
>>> text[:60]
'{"format_version": "1.1", "region_key": "cs__region", "insta'
>>> decode(text, where="table 'table'") == record
True
>>> decode(text.replace('"1.1"', '"2.0"'), where="table 'table'")
Traceback (most recent call last):
...
cellspec_sc.errors.FormatError: table 'table': the cellspec SpatialData record is version 2.0, newer than the 1.1 ...
>>> decode_files({"paths": np.array(["a.geojson"], dtype=object), "f0": np.frombuffer(b"{}", np.uint8)})
{'a.geojson': b'{}'}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cellspec_sc._codec import RecordFormat
from cellspec_sc.bridges.anndata import UNS_KEY as ANNDATA_UNS_KEY
from cellspec_sc.bridges.anndata import from_json_text, to_json_text
from cellspec_sc.errors import CellspecWarning, InputError
from cellspec_sc.model import package_version

if TYPE_CHECKING:
    import anndata

RECORD = RecordFormat("the cellspec SpatialData record", "1.1")
LEGACY_VERSION = "1.0"  # records written before format_version: they carry "bridge_version": "1"

TABLE_KEY = "table"
REGION_KEY = "cs__region"  # the spec reserves cs__ for internal use, so no cells column has this name
INSTANCE_KEY = "cell_id"
UNS_KEY = "cellspec_spatialdata"
OUTLINE_FILES_KEY = "cellspec_outline_files"
ATTRS_KEY = "cellspec_sc"
OUTLINES_SUFFIX = "_outlines"
PIXEL_SUFFIX = "_px"
RADIUS_FALLBACK_KEY = "radius_is_fallback"
RADIUS_RULE = "sqrt(area / pi)"
FALLBACK_RULE = ("median radius of the image's cells with an area; one pixel (pixel_size) "
                 "if no cell of the image has an area")


class SpatialDataBridgeWarning(CellspecWarning):
    """Something of a SpatialData was not carried into the cellspec, or an outline did not match."""


@dataclass(frozen=True)
class BridgeRecord:
    """What ``table.uns["cellspec_spatialdata"]`` holds.

    Parameters
    ----------
    images
        One entry per image of the cellspec, in images order: ``image_id``, element ``name``, ``n_cells`` and,
        for an image with cells, ``circles``, ``coordinate_system``, ``pixel_coordinate_system`` (None when
        ``1 / pixel_size`` overflows) and ``pixel_size`` ``[x, y]``; ``outlines`` (counts and element) when
        outlines were read.
    obs_columns_renamed
        ``{name in the table: original cells column}`` for the columns SpatialData refuses.
    fallback_cells
        ``{image_id: number of circles}`` whose radius is the fallback (no usable area).
    region_key, instance_key
        The table's obs columns naming each row's element and shape.
    """

    images: list[dict[str, Any]]
    obs_columns_renamed: dict[str, str]
    fallback_cells: dict[str, int]
    region_key: str = REGION_KEY
    instance_key: str = INSTANCE_KEY


def encode(record: BridgeRecord) -> str:
    """The record as the JSON text stored in ``table.uns["cellspec_spatialdata"]``, stamped with its version.

    Parameters
    ----------
    record
        What :func:`to_spatialdata` made.

    Returns
    -------
    str
        JSON text (plain ASCII, lossless for doubles).
    """
    return to_json_text(RECORD.stamp({
        "region_key": record.region_key,
        "instance_key": record.instance_key,
        "images": list(record.images),
        "obs_columns_renamed": dict(record.obs_columns_renamed),
        "radius": {"rule": RADIUS_RULE, "fallback_rule": FALLBACK_RULE, "fallback_cells": dict(record.fallback_cells),
                   "fallback_column": RADIUS_FALLBACK_KEY},
    }))


def decode(text: Any, *, where: str) -> BridgeRecord:
    """The record stored by :func:`encode` (or by the bridge before versions were stored).

    Parameters
    ----------
    text
        ``table.uns["cellspec_spatialdata"]`` (a str, or a numpy string scalar read back from zarr).
    where
        The table, for messages.

    Returns
    -------
    BridgeRecord

    Raises
    ------
    InputError
        The text is not JSON or not a record of the bridge.
    FormatError
        The record is of a newer major version than this package reads.
    """
    try:
        stored = from_json_text(text)
    except (TypeError, ValueError) as err:
        raise InputError(f"{where}: uns[{UNS_KEY!r}] is not the JSON text written by to_spatialdata ({err})") from None
    if not isinstance(stored, dict) or not {"region_key", "instance_key"} <= set(stored):
        raise InputError(f"{where}: uns[{UNS_KEY!r}] was not written by cellspec_sc.to_spatialdata")
    RECORD.version_of(stored, where=where, legacy=_legacy)
    return BridgeRecord(images=list(stored.get("images") or []),
                        obs_columns_renamed=dict(stored.get("obs_columns_renamed") or {}),
                        fallback_cells=dict((stored.get("radius") or {}).get("fallback_cells") or {}),
                        region_key=stored["region_key"], instance_key=stored["instance_key"])


def _legacy(record: Mapping[str, Any]) -> str:
    """The version of a record or attrs entry written before ``format_version`` was: there was one."""
    return LEGACY_VERSION


def encode_attrs(spec_version: str) -> dict[str, Any]:
    """The ``sdata.attrs["cellspec_sc"]`` entry: producing package, spec version and the table's key."""
    return RECORD.stamp({"package": "cellspec_sc", "version": package_version(), "spec_version": spec_version,
                         "table": TABLE_KEY})


def table_in_attrs(attrs: Any) -> str | None:
    """The table key named by ``sdata.attrs["cellspec_sc"]`` (None without that entry: ``spatialdata.concatenate``
    drops attrs).

    Raises
    ------
    FormatError
        The entry is of a newer major version than this package reads.

    Examples
    --------
    >>> table_in_attrs({"cellspec_sc": encode_attrs("1.0.0")}), table_in_attrs({})
    ('table', None)
    """
    entry = attrs.get(ATTRS_KEY) if isinstance(attrs, Mapping) else None
    if not isinstance(entry, Mapping):
        return None
    RECORD.version_of(entry, where=f"SpatialData attrs[{ATTRS_KEY!r}]", legacy=_legacy)
    return entry.get("table")


def carries_record(table: anndata.AnnData) -> bool:
    """Whether ``table`` holds both records of ``to_spatialdata`` (``uns["cellspec"]`` and this one)."""
    return ANNDATA_UNS_KEY in table.uns and UNS_KEY in table.uns


def lost_record(table: anndata.AnnData) -> bool:
    """Whether ``table`` was made by ``to_spatialdata`` (it has ``obs["cs__region"]``) but holds neither record,
    as after ``anndata.concat``, which keeps no ``uns``."""
    return REGION_KEY in table.obs.columns and ANNDATA_UNS_KEY not in table.uns and UNS_KEY not in table.uns


def encode_files(files: Mapping[str, Path]) -> dict[str, Any]:
    """Outline files, byte for byte, as arrays anndata writes to zarr and h5ad (``{geometry_ref: path}``)."""
    out: dict[str, Any] = {"paths": np.array(list(files), dtype=object)}
    for i, path in enumerate(files.values()):
        out[f"f{i}"] = np.frombuffer(path.read_bytes(), dtype=np.uint8)
    return out


def decode_files(stored: Any) -> dict[str, bytes]:
    """The outline files stored by :func:`encode_files` (``{geometry_ref: bytes}``; empty when none)."""
    if not isinstance(stored, Mapping) or "paths" not in stored:
        return {}
    paths = [str(p) for p in np.asarray(stored["paths"]).tolist()]
    return {ref: np.asarray(stored[f"f{i}"], dtype=np.uint8).tobytes() for i, ref in enumerate(paths)}
