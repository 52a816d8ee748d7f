"""One cellspec from a SpatialData that holds several tables of ``to_spatialdata``, as
``spatialdata.concatenate({"a": sa, "b": sb})`` makes (one table per object, ``table-a``, ``table-b``).

Each table is converted on its own (:func:`~cellspec_sc.bridges.spatialdata.from_spatialdata`
with its ``table_key``), then the parts are joined: cells, measurements, images, channels and
contacts one after the other. The parts must have the same dictionary, cells columns and spec
version (else :class:`~cellspec_sc.InputError` names the difference). An image id found in
several parts is renamed in each of them as spatialdata renamed its element: ``img1`` of
table ``table-a`` becomes ``img1-a`` (in cells, images, channels and adjacency); other ids are
kept. The provenance is the first part's, with one history step naming every part and its
producer, reader and creation time.

``concatenate(..., concatenate_tables=True)`` keeps no ``uns``, so the images, channels,
dictionary and contacts are gone: ``from_spatialdata`` refuses that table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cellspec_sc.errors import InputError
from cellspec_sc.model.cellspec import CellSpec
from cellspec_sc.model.ownership import sealed
from cellspec_sc.model.provenance import with_history_step
from cellspec_sc.spec.types import canonical_frame

if TYPE_CHECKING:
    from spatialdata import SpatialData

FUNCTION = "cellspec_sc.from_spatialdata"


def from_concatenated(sdata: SpatialData, table_keys: list[str], convert: Callable[[str], CellSpec]) -> CellSpec:
    """Join ``convert(key)`` of every table in ``table_keys`` (see module doc)."""
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
