"""What a Luxar scene records about the cells it shows: the root attribute ``cellspec``, encoded and decoded.

The record names the layers asked for, the layout, the images (or samples) in scene order with the node name of
each, and the colour layers in their order on the ``colour by`` dimension. It is written with a
``format_version``; scenes written before versions were stored carry none and are read as version
:data:`LEGACY_VERSION` (the same fields); a record of a newer major version is refused, naming both versions.

>>> record = SceneRecord(layers=("cells",), layout="side", images=("img1",), image_nodes=("img1",),
...                      colour_layers=("classification",))
>>> encode(record)["format_version"]
'1.0'
>>> decode(encode(record), where="s.luxar.zarr") == record
True
>>> decode({**encode(record), "format_version": "2.0"}, where="s.luxar.zarr")  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
cellspec_sc.errors.FormatError: s.luxar.zarr: the cellspec record of a Luxar scene (root attribute 'cellspec')
is version 2.0, newer than the 1.0 this cellspec_sc reads; install a newer cellspec_sc (pip install -U cellspec_sc)
to read it
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cellspec_sc._codec import RecordFormat
from cellspec_sc.bridges.luxar._scene import LAYOUTS
from cellspec_sc.errors import FormatError
from cellspec_sc.io import zarr_root_attributes

ATTRIBUTE = "cellspec"  # the root attribute of the scene that holds the record
FORMAT = RecordFormat(f"the cellspec record of a Luxar scene (root attribute {ATTRIBUTE!r})", "1.0")
LEGACY_VERSION = "0.1"  # what a record without format_version is read as (scenes written before versions were)


@dataclass(frozen=True)
class SceneRecord:
    """The cellspec record of one scene.

    Parameters
    ----------
    layers
        The layer strings asked for, in order (``"cells"``, ``"marker:CD3e"``, ...).
    layout
        ``"side"`` or ``"stack"``.
    images
        The ids of the images (or of the samples, stacked by ``sample_id``) in scene order.
    image_nodes
        The node name of each entry of ``images``.
    colour_layers
        The titles of the colour layers in their order on the ``colour by`` dimension.
    format_version
        The version the record was read as (not compared: a record means the same in every version).
    """

    layers: tuple[str, ...]
    layout: str
    images: tuple[str, ...]
    image_nodes: tuple[str, ...]
    colour_layers: tuple[str, ...]
    format_version: str = field(default=FORMAT.version, compare=False)


def encode(record: SceneRecord) -> dict[str, Any]:
    """The JSON-ready root attribute ``cellspec`` of a scene, its format version first.

    Parameters
    ----------
    record
        What the scene holds.

    Returns
    -------
    dict
        ``format_version``, ``layers`` (one ``{"layer": text}`` each), ``layout``, ``images``, ``image_nodes``
        and ``colour_layers``.

    Examples
    --------
    >>> encode(SceneRecord(("cells",), "stack", ("s1",), ("s1",), ("cells",)))["layers"]
    [{'layer': 'cells'}]
    """
    return FORMAT.stamp({"layers": [{"layer": text} for text in record.layers], "layout": record.layout,
                         "images": list(record.images), "image_nodes": list(record.image_nodes),
                         "colour_layers": list(record.colour_layers)})


def decode(attribute: Any, *, where: str) -> SceneRecord:
    """The record in a scene's root attribute ``cellspec`` (of any version this package reads).

    Parameters
    ----------
    attribute
        The attribute as stored (a mapping).
    where
        The scene, for messages.

    Returns
    -------
    SceneRecord
        With ``format_version`` the version the record was written in (:data:`LEGACY_VERSION` when it has none).

    Raises
    ------
    FormatError
        When the attribute is not a record of this shape, or is of a newer major version.

    Examples
    --------
    >>> decode({"layers": [{"layer": "cells"}], "layout": "side", "images": ["a"], "image_nodes": ["a"],
    ...         "colour_layers": ["cells"]}, where="s.luxar.zarr").format_version
    '0.1'
    """
    if not isinstance(attribute, Mapping):
        raise FormatError(f"{where}: root attribute {ATTRIBUTE!r} is a {type(attribute).__name__}, not a record")
    major, minor = FORMAT.version_of(attribute, where=where, legacy=lambda _: LEGACY_VERSION)
    layers = _strings(attribute, "layers", where, item=lambda entry: entry.get("layer")
                      if isinstance(entry, Mapping) else None)
    layout = attribute.get("layout")
    if layout not in LAYOUTS:
        raise FormatError(f"{where}: {ATTRIBUTE}.layout is {layout!r}, not one of {', '.join(LAYOUTS)}")
    images, nodes = _strings(attribute, "images", where), _strings(attribute, "image_nodes", where)
    if len(images) != len(nodes):
        raise FormatError(f"{where}: {ATTRIBUTE}.images has {len(images)} entries but image_nodes {len(nodes)}")
    return SceneRecord(layers, layout, images, nodes, _strings(attribute, "colour_layers", where),
                       format_version=f"{major}.{minor}")


def read_scene_record(path: str | os.PathLike) -> SceneRecord:
    """The cellspec record of the scene at ``path`` (a directory written by ``to_luxar``).

    Raises
    ------
    FormatError
        When the scene has no readable record.
    """
    attrs = zarr_root_attributes(path)
    if ATTRIBUTE not in attrs:
        raise FormatError(f"{path}: no root attribute {ATTRIBUTE!r}; not a scene written by cellspec_sc.to_luxar")
    return decode(attrs[ATTRIBUTE], where=str(path))


def _strings(attribute: Mapping[str, Any], key: str, where: str, item: Callable[[Any], Any] | None = None
             ) -> tuple[str, ...]:
    """``attribute[key]`` as a tuple of strings (each entry through ``item`` first), else FormatError."""
    values = attribute.get(key)
    if not isinstance(values, list):
        raise FormatError(f"{where}: {ATTRIBUTE}.{key} is {type(values).__name__}, not a list")
    out = [item(v) if item is not None else v for v in values]
    bad = next((i for i, v in enumerate(out) if not isinstance(v, str)), None)
    if bad is not None:
        raise FormatError(f"{where}: {ATTRIBUTE}.{key}[{bad}] is {values[bad]!r}, not a string")
    return tuple(out)
