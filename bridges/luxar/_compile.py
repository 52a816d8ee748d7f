"""Compile cells into a Luxar scene (``.luxar.zarr``) for the browser viewer.

Each image is an entry of the viewer's Layers panel with a frame and its name;
colour layers are picked on the ``colour by`` dimension and each shows its own
legend; hovering a cell names it, its image, class and the coloured value. The
slide looks as it does in QuPath: x to the right, y downward (spec section 8),
through the camera, never by mirroring the data. Scene structure and layout:
:mod:`cellspec_sc.bridges.luxar._scene`; colours: :mod:`cellspec_sc.bridges.luxar._colour`; what the scene
records of its cellspec source: :mod:`cellspec_sc.bridges.luxar._record`.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp()) / "example.luxar.zarr"
>>> cs.to_luxar(cs.example(), out, layers=["cells", "marker:CD3e"]).name
'example.luxar.zarr'
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from cellspec_sc.bridges.luxar._colour import Colouring, category_colouring, feature_colouring, plain_colouring
from cellspec_sc.bridges.luxar._image_layer import add_image_layer, check_image_layer, image_channels
from cellspec_sc.bridges.luxar._input import SceneInput, scene_input
from cellspec_sc.bridges.luxar._record import ATTRIBUTE, SceneRecord, encode
from cellspec_sc.bridges.luxar._scene import (
    ALL_CATEGORIES,
    ColourLayer,
    HiddenDims,
    Layout,
    SceneBuilder,
    category_dim_name,
    embedding_x0,
    hidden_dims,
    image_layout,
    opening_camera,
    unique_node_names,
    waypoints,
)
from cellspec_sc.display import WINDOW_PERCENTILES
from cellspec_sc.errors import CellspecWarning, InputError, require_extra
from cellspec_sc.images import Image, ImageInput, checked_images
from cellspec_sc.io import TargetKind, check_target, publishing, zarr_root_attributes
from cellspec_sc.model import source_line

NAMED_LAYERS = ("cells", "adjacency", "outlines")
PARAMETERISED_LAYERS = ("feature", "marker", "category", "embedding", "image")
DEFAULT_LAYERS = ("cells",)
STACK_BY = ("image_id", "sample_id")
FALLBACK_RADIUS_UM = 5.0  # radius when no cell of the object has an area
RADIUS_RANGE_UM = (0.01, 1e6)  # radii are clipped into this range (luxar needs positive float32 radii)


@dataclass(frozen=True)
class LayerSpec:
    """One entry of ``layers``: its kind (``cells``, ``feature``, ...) and argument (a feature id, a column ...)."""

    kind: str
    argument: str | None = None

    @property
    def text(self) -> str:
        return self.kind if self.argument is None else f"{self.kind}:{self.argument}"


def parse_layer(text: str) -> LayerSpec:
    """Parse a layer string as given on the command line.

    Parameters
    ----------
    text
        ``cells``, ``adjacency``, ``outlines``, ``feature:<feature_id>``, ``marker:<marker>``,
        ``category:<column>``, ``embedding:<obsm key>`` or ``image:<channel>[,<channel>...]``.

    Returns
    -------
    LayerSpec
        The layer's kind and argument.

    Raises
    ------
    InputError
        For any other text, listing the forms above.

    Examples
    --------
    >>> parse_layer("feature:cell:CD3e:mean")
    LayerSpec(kind='feature', argument='cell:CD3e:mean')
    >>> parse_layer("cells")
    LayerSpec(kind='cells', argument=None)
    """
    text = str(text).strip()
    if text in NAMED_LAYERS:
        return LayerSpec(text)
    kind, sep, argument = text.partition(":")
    if sep and kind in PARAMETERISED_LAYERS and argument:
        return LayerSpec(kind, argument)
    raise InputError(f"unknown layer {text!r}; use cells, adjacency, outlines, feature:<feature_id>, "
                     "marker:<marker>, category:<column>, embedding:<obsm key> or image:<channel>[,<channel>]")


def to_luxar(
    obj: Any,
    path: str | Path,
    *,
    layers: Sequence[str] | None = None,
    layout: str = "side",
    title: str | None = None,
    colormap: str = "viridis",
    window: tuple[float, float] | None = None,
    percentiles: tuple[float, float] = WINDOW_PERCENTILES,
    link: str | None = None,
    stack_by: str = "image_id",
    overwrite: bool = True,
    images: Mapping[str, ImageInput] | None = None,
    verify: bool = True,
) -> Path:
    """Compile a CellSpec (or an AnnData from ``to_anndata``) into a Luxar scene directory.

    Parameters
    ----------
    obj
        A :class:`~cellspec_sc.CellSpec`, or an AnnData from ``to_anndata`` (or shaped like one: obs ``cell_id``
        and ``image_id``, ``obsm['spatial']`` or obs ``x``, ``y``).
    path
        Where to write; the scene goes to :func:`scene_path` of it (luxar's naming: the name ends in
        ``.luxar.zarr``).
    layers
        ``"cells"``, ``"adjacency"``, ``"outlines"``, ``"feature:<feature_id>"``, ``"marker:<marker>"``,
        ``"category:<column>"``, ``"embedding:<obsm key>"`` (default: cells, coloured by classification when
        present). Colour layers (cells, feature, marker, category) are the values of the viewer's ``colour by``
        dimension, each with its legend.
    layout
        ``"side"`` puts images side by side from left to right in ``images`` order; ``"stack"`` puts them on a
        categorical dimension.
    title
        The scene's title (default: ``"<n> cells in <k> images"``).
    colormap
        The matplotlib colormap of feature and marker layers.
    window
        ``(lo, hi)`` mapped onto ``colormap`` by feature and marker layers (default: the ``percentiles`` of the
        non-NA values).
    percentiles
        The percentiles that choose the window when ``window`` is not given.
    link
        A URL template with ``{image_id}`` and ``{cell_id}``, offered on right-click beside copying the cell id.
    stack_by
        With ``layout="stack"``: one entry per image (``"image_id"``) or per sample (``"sample_id"``).
    overwrite
        Replace an existing scene at the path once the new one is complete (never anything else); ``False``
        refuses it. See :mod:`cellspec_sc.io._publish`.
    images
        ``{image_id: path or cs.open_image(...)}`` for ``image:`` layers, each checked against the object first
        (``docs/images.md``): the chosen channels as a composite under the cells of that image, read from a
        pyramid level of at most about 2,048 pixels a side.
    verify
        Compare each image file's SHA-256 with ``images.source_image_sha256`` where that is set.

    Returns
    -------
    Path
        The scene directory written.

    Raises
    ------
    InputError
        For a layer the object cannot provide (naming it and what is available), an unknown layout, colormap or
        ``stack_by``, a malformed ``window`` or ``link``, or coordinates a Luxar scene cannot hold (naming the
        cells row).
    TargetExists
        When ``path`` holds something other than a Luxar scene, or a scene and ``overwrite`` is False.

    Examples
    --------
    >>> import cellspec_sc as cs, tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "s.luxar.zarr"
    >>> cs.to_luxar(cs.example(), out, layout="stack").exists()
    True
    """
    require_extra("luxar", "cellspec_sc.to_luxar")
    path = scene_path(path)
    check_target(path, LUXAR_SCENE, overwrite=overwrite)
    specs = [parse_layer(t) for t in (layers if layers is not None else DEFAULT_LAYERS)]
    if not specs:
        raise InputError("no layer selected")
    if stack_by not in STACK_BY:
        raise InputError(f"stack_by must be one of {', '.join(STACK_BY)}, not {stack_by!r}")
    check_link(link)
    src = scene_input(obj)
    _check_layers(src, specs)
    opened = _images_for(src, specs, images, verify)
    group_ids = src.image_ids if stack_by == "image_id" else _sample_ids(src)
    if link is not None and stack_by == "sample_id":
        _warn_link_needs_one_image(src)
    geometry = image_layout(src.cells, src.images, group_ids, layout, by=stack_by)
    colour_layers = _colour_layers(src, specs, colormap, window, percentiles)
    category_dims = {layer.category_dim: _category_labels(layer.colouring) for layer in colour_layers
                     if layer.category_dim}
    dims = hidden_dims(geometry, [layer.colouring.title for layer in colour_layers], category_dims)
    return write_scene(Path(path), src, specs, geometry, dims, colour_layers, title or _default_title(src), link,
                       overwrite, opened)


def write_scene(path: Path, src: SceneInput, specs: list[LayerSpec], geometry: Layout, dims: HiddenDims,
                colour_layers: list[ColourLayer], title: str, link: str | None, overwrite: bool = True,
                images: Mapping[str, Image] | None = None) -> Path:
    """Compile the scene and publish it at ``path`` (the previous scene stays until the new one is complete)."""
    import luxar

    config = _viewer_config(title, geometry, _right_edge(geometry, specs))
    with warnings.catch_warnings(record=True) as caught, \
            publishing(path, LUXAR_SCENE, overwrite=overwrite) as payload, luxar.verbosity("silent"), \
            luxar.LuxarZarrCompiler(payload, atomic=False) as compiler:
        warnings.simplefilter("always")  # luxar's own warnings are collected and said once, in our words, below
        # every node extends over 'go to' (it only moves the camera); luxar warns that no data sits on it
        warnings.filterwarnings("ignore", message="Dimension .* has range ending at")
        # frames, names and colour layers sit at one value of a hidden dimension on purpose
        warnings.filterwarnings("ignore", message=r"(?s).*Set extend_to_all explicitly")
        scene = compiler.create_scene(dimensions=dims.luxar(), viewer_config=config, citation=_citation(src.provenance))
        builder = SceneBuilder(scene, src, geometry, dims, colour_layers, cell_radii(src.cells), link)
        for spec in specs:
            if spec.kind == "image":
                _add_image_layers(scene, builder, geometry, src, images or {}, image_channels(spec.argument))
        builder.add_colour_layers()
        for spec in specs:
            if spec.kind == "embedding":
                builder.add_embedding(spec.argument, _embedding(src, spec.argument))
            elif spec.kind == "adjacency":
                builder.add_adjacency(src.contacts)
            elif spec.kind == "outlines":
                builder.add_outlines()
        builder.add_overlays(title)
        scene.attrs["title"] = title
        scene.attrs["units"] = "um"
        scene.attrs[ATTRIBUTE] = encode(SceneRecord(
            layers=tuple(s.text for s in specs), layout=geometry.mode, images=tuple(geometry.image_ids),
            image_nodes=tuple(geometry.node_names),
            colour_layers=tuple(layer.colouring.title for layer in colour_layers)))
    for message in luxar_warnings([str(w.message) for w in caught]):
        warnings.warn(message, CellspecWarning, stacklevel=3)
    return path


_HEADROOM = re.compile(r"COORDINATE '.*': per-axis extent ([0-9.]+) > 2")
_FLOAT_POSITIONS = re.compile(r"COORDINATE '.*': per-axis extent .* storing float32")


def luxar_warnings(messages: list[str]) -> list[str]:
    """luxar's warnings while compiling, as what they mean for the user: one line each, each said once.

    luxar stores positions as 16-bit fixed point over each node's extent, and warns when an extent passes
    4,096 units that the step grows (beyond 65,536 it stores float32 and warns again, with nothing lost).

    >>> said = luxar_warnings(["COORDINATE 'positions': per-axis extent 9000 > 2¹²; uint16 fixed-point sub-unit "
    ...     "headroom is shrinking (step ≈ 0.1373).", "COORDINATE 'positions': per-axis extent 70000 ≥ 2¹⁶; uint16 "
    ...     "fixed-point cannot resolve a unit step — storing float32."])
    >>> len(said), said[0]  # doctest: +ELLIPSIS
    (1, "the scene spans up to 9,000 um along one axis, so luxar stores cell positions to within 0.14 um (far...)")
    """
    extents = [float(m.group(1)) for m in map(_HEADROOM.search, messages) if m]
    out = []
    if extents:
        extent = max(extents)
        out.append(f"the scene spans up to {extent:,.0f} um along one axis, so luxar stores cell positions to within "
                   f"{extent / 65535:.2g} um (far below a cell's size; nothing to do)")
    others = [m for m in messages if not (_HEADROOM.search(m) or _FLOAT_POSITIONS.search(m))]
    out += [f"luxar: {' '.join(m.split())}" for m in dict.fromkeys(others)]
    return out


def scene_path(path: str | Path) -> Path:
    """Where luxar puts a scene asked for at ``path``: its name always ends in ``.luxar.zarr``.

    >>> scene_path("out/cells"), scene_path("out/s.luxar.zarr")
    (PosixPath('out/cells.luxar.zarr'), PosixPath('out/s.luxar.zarr'))
    """
    from luxar.utils.paths import normalize_zarr_path

    return Path(normalize_zarr_path(Path(path), ".luxar.zarr"))


def is_luxar_scene(path: str | Path) -> bool:
    """A directory whose root zarr attributes say ``type: scene``, as luxar writes it."""
    return zarr_root_attributes(path).get("type") == "scene"


LUXAR_SCENE = TargetKind("a Luxar scene", True, is_luxar_scene)


def _right_edge(geometry: Layout, specs: list[LayerSpec]) -> float:
    """The scene's right edge: the images, and the embedding views right of them."""
    return embedding_x0(geometry, sum(spec.kind == "embedding" for spec in specs)) - 2 * geometry.gap


def check_link(link: str | None) -> None:
    """A link template: absolute http(s) URL whose only placeholders are {image_id} and {cell_id}."""
    if link is None:
        return
    rest = link.replace("{image_id}", "").replace("{cell_id}", "")
    parts = urlsplit(rest)
    if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc or "{" in rest \
            or "}" in rest:
        raise InputError(f"link must be an absolute http(s) URL whose placeholders are {{image_id}} and {{cell_id}}, "
                         f"not {link!r}")


def _sample_ids(src: SceneInput) -> list[str]:
    if "sample_id" not in src.cells.columns or src.cells["sample_id"].isna().any():
        raise InputError("stack_by='sample_id' needs a sample_id for every cell (cells column sample_id)")
    src.cells["sample_id"] = src.cells["sample_id"].astype(str)
    return [str(v) for v in pd.unique(src.cells["sample_id"].to_numpy(dtype=object))]


def _warn_link_needs_one_image(src: SceneInput) -> None:
    """The right-click link fills {image_id} per node; a sample's node with several images gets none."""
    images_per_sample = src.cells.groupby("sample_id", sort=False)["image_id"].nunique()
    mixed = [str(s) for s in images_per_sample.index[images_per_sample.to_numpy() > 1]]
    if mixed:
        warnings.warn(f"link: samples {mixed[:5]} hold cells of several images, so their cells offer no 'open "
                      "link' action (the template's {image_id} is filled per node); stack by image_id to keep "
                      "the link on every cell", CellspecWarning, stacklevel=3)


def _colour_layers(src: SceneInput, specs: list[LayerSpec], colormap: str, window: tuple[float, float] | None,
                   percentiles: tuple[float, float]) -> list[ColourLayer]:
    """The colour layers in order, each once: 'cells' coloured by classification and
    'category:classification' are one layer (the category one, which also filters)."""
    chosen: dict[str, tuple[LayerSpec, Colouring]] = {}
    for spec in specs:
        if spec.kind == "cells":
            has_class = "classification" in src.cells.columns
            key = "category:classification" if has_class else "cells"
            if key not in chosen:
                chosen[key] = (spec, _category(src, "classification") if has_class else plain_colouring(src.n_cells))
        elif spec.kind == "category":
            chosen[spec.text] = (spec, _category(src, spec.argument))
        elif spec.kind in ("feature", "marker"):
            feature = spec.argument if spec.kind == "feature" else src.feature_for_marker(spec.argument)
            label = feature if spec.kind == "feature" else f"{spec.argument} ({feature})"
            chosen.setdefault(spec.text, (spec, feature_colouring(src.feature_column(feature), label,
                                                                   colormap=colormap, window=window,
                                                                   percentiles=percentiles,
                                                                   unit=_unit(src, feature))))
    out: list[ColourLayer] = []
    taken: list[str] = []
    names = unique_node_names([spec.text for spec, _ in chosen.values()], "layer")
    for index, ((spec, colouring), name) in enumerate(zip(chosen.values(), names, strict=True)):
        dim = None
        if spec.kind == "category":
            dim = category_dim_name(spec.argument, taken)
            taken.append(dim)
        out.append(ColourLayer(name, colouring, index, dim))
    return out


def _unit(src: SceneInput, feature: str) -> str:
    """The dictionary's unit of a feature ("" when the dictionary has none)."""
    d = src.dictionary
    if d is None or "unit" not in d.columns or "feature_id" not in d.columns:
        return ""
    units = d.loc[(d["feature_id"].astype(object) == feature).to_numpy(dtype=bool), "unit"].dropna()
    return str(units.iloc[0]) if len(units) else ""


def _category(src: SceneInput, column: str) -> Colouring:
    style, codes = src.category_column(column)
    return category_colouring(column, style, codes)


def _category_labels(colouring: Colouring) -> list[str]:
    return [ALL_CATEGORIES, *colouring.categories] + (["NA"] if colouring.n_na else [])


def _embedding(src: SceneInput, key: str) -> np.ndarray:
    emb = np.asarray(src.embeddings[key], dtype=np.float64)
    if emb.ndim != 2 or emb.shape[0] != src.n_cells or emb.shape[1] < 2:
        raise InputError(f"obsm[{key!r}] has shape {emb.shape}; expected ({src.n_cells}, >=2)")
    return emb


def _viewer_config(title: str, geometry: Layout, right: float) -> Any:
    from luxar import UIConfig, ViewerConfig

    # y downward through the camera (QuPath's view), never by a negative scale that would mirror the slide;
    # the whole scene above the dimension panel.
    camera = opening_camera(geometry, right)
    # tone_mapping "None" keeps legend colours exact on screen.
    return ViewerConfig(camera=camera, control_type="ortho", title=title, tone_mapping="None",
                        bloom_enabled=False, ui=UIConfig(show_scale_bar=True),
                        waypoints=waypoints(geometry, right) or None)


def _check_layers(src: SceneInput, specs: list[LayerSpec]) -> None:
    """Refuse a layer the object cannot provide before anything is compiled."""
    for spec in specs:
        if spec.kind == "feature" and spec.argument not in src.feature_ids:
            src.feature_column(spec.argument)  # raises with the list of known ids
        elif spec.kind == "marker":
            src.feature_for_marker(spec.argument)
        elif spec.kind == "category":
            src.category_column(spec.argument)
        elif spec.kind == "embedding" and spec.argument not in src.embeddings:
            known = ", ".join(src.embeddings) or "none (a CellSpec has no embeddings; pass an AnnData)"
            raise InputError(f"no embedding {spec.argument!r} in obsm; available: {known}")
        elif spec.kind == "adjacency" and src.contacts is None:
            raise InputError("adjacency layer: the object has no adjacency (section 7)")
        elif spec.kind == "outlines" and not _has_geometry_refs(src):
            raise InputError("outlines layer: no image has a geometry_ref (section 5), or the input is an AnnData "
                             "(outlines are read from the cellspec directory the object came from)")


def _images_for(src: SceneInput, specs: list[LayerSpec], images: Mapping[str, ImageInput] | None,
                verify: bool) -> dict[str, Image]:
    """The images of ``image:`` layers, checked against the object (none without such a layer)."""
    image_specs = [spec for spec in specs if spec.kind == "image"]
    if not image_specs:
        return {}
    if src.cellspec is None:
        raise InputError("image layer: the input is an AnnData; images are checked against a cellspec object")
    opened = checked_images(src.cellspec, images, verify=verify)
    for spec in image_specs:
        check_image_layer(spec.argument, opened)
    return opened


def _add_image_layers(scene: Any, builder: SceneBuilder, geometry: Layout, src: SceneInput,
                      images: Mapping[str, Image], channels: list[str]) -> None:
    for k, image_id in enumerate(geometry.image_ids):
        if image_id not in images:
            continue
        row = src.images[src.images["image_id"].astype(str) == image_id].iloc[0]
        ps_x = float(row["pixel_size"])
        ps_y = ps_x if "pixel_size_y" not in src.images or pd.isna(row.get("pixel_size_y")) else \
            float(row["pixel_size_y"])

        def coordinates(rows: np.ndarray, xy: np.ndarray, k: int = k) -> tuple[np.ndarray, list[str]]:
            positions, order, _ = builder._coordinates(rows, xy, k, {})
            return positions, order

        add_image_layer(scene, f"{geometry.node_names[k]}.image", float(geometry.offsets[k]), images[image_id],
                        channels, (ps_x, ps_y), coordinates)


def _has_geometry_refs(src: SceneInput) -> bool:
    images = src.images
    return src.cellspec is not None and "geometry_ref" in images.columns and bool(images["geometry_ref"].notna().any())


def _default_title(src: SceneInput) -> str:
    n_images = len(src.image_ids)
    return f"{src.n_cells:,} cells in {n_images} image{'s' if n_images != 1 else ''}"


def _citation(provenance: dict[str, Any]) -> dict[str, str] | None:
    """``{"short": ...}`` naming the producer, the reader and the input files, on one printable line."""
    if not provenance:
        return None
    text = f"Cells measured by {source_line(provenance)}"
    inputs = [str(i.get("path_basename")) for i in provenance.get("inputs") or [] if isinstance(i, dict)
              and i.get("path_basename")]
    if inputs:
        shown = ", ".join(inputs[:3]) + (f" and {len(inputs) - 3} more" if len(inputs) > 3 else "")
        text += f"; source: {shown}"
    return {"short": _printable(text)}


def _printable(text: str) -> str:
    return "".join(ch if ch.isprintable() else " " for ch in text).strip()


# -- radii ---------------------------------------------------------------------------------------

def cell_radii(cells: pd.DataFrame) -> np.ndarray:
    """Radius in micrometres of the disc with the cell's area; NA (or no area column) gets the median radius
    of the cells that have one, or 5 um when none has. Radii are clipped into 0.01 to 1e6 um.

    >>> cell_radii(pd.DataFrame({"area": [math.pi * 4, None]})).tolist()
    [2.0, 2.0]
    """
    area = pd.to_numeric(cells["area"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan) \
        if "area" in cells.columns else np.full(len(cells), np.nan)
    radius = np.sqrt(np.where(area > 0, area, np.nan) / math.pi)
    known = np.isfinite(radius)
    fallback = float(np.median(radius[known])) if known.any() else FALLBACK_RADIUS_UM
    return np.clip(np.where(known, radius, fallback), *RADIUS_RANGE_UM)
