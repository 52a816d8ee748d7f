"""Compile cells into a Luxar scene (``.luxar.zarr``) for the browser viewer.

Each selected layer becomes one entry of the viewer's Layers panel, holding one
node per image. The slide looks as it does in QuPath: x to the right, y
downward (spec section 8), through the camera, never by mirroring the data.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp()) / "example.luxar.zarr"
>>> cs.to_luxar(cs.example(), out, layers=["cells", "marker:CD3e"]).name
'example.luxar.zarr'
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cellspec_sc.display.colors import NA_COLOUR, UNCOLOURED, category_rgb, hex_colour
from cellspec_sc.display.html import swatch
from cellspec_sc.display.ranges import robust_window
from cellspec_sc.errors import InputError
from cellspec_sc.io.publish import TargetKind, check_target, publishing, zarr_root_attributes
from cellspec_sc.model.provenance import source_line
from cellspec_sc.bridges.luxar_input import SceneInput, scene_input

NAMED_LAYERS = ("cells", "adjacency", "outlines")
PARAMETERISED_LAYERS = ("feature", "marker", "category", "embedding")
DEFAULT_LAYERS = ("cells",)
LAYOUTS = ("side", "stack")
LINE_COLOUR = (0.4, 0.4, 0.4)
OUTLINE_COLOUR = (0.9, 0.9, 0.9)
FALLBACK_RADIUS_UM = 5.0  # radius when no cell of the object has an area
RADIUS_RANGE_UM = (0.01, 1e6)  # radii are clipped into this range (luxar needs positive float32 radii)
FLOAT32_MAX = float(np.finfo(np.float32).max)  # luxar stores positions and scalars as float32
EMBEDDING_PREFIX = "embedding"


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
                     "marker:<marker>, category:<column> or embedding:<obsm key>")


@dataclass
class Colouring:
    """How a points layer is coloured: RGB per cell (categories) or scalars through a colormap (features)."""

    title: str
    rgb: np.ndarray | None = None  # (n, 3) float32
    scalars: np.ndarray | None = None  # (n,) float64, NaN = NA
    colormap: str | None = None
    window: tuple[float, float] | None = None
    hover: list[str] | None = None  # per cell: "<title>: <value>"
    legend: str = ""  # HTML fragment


@dataclass
class Layout:
    """Where each image goes: x offsets side by side, or an index along a categorical ``image`` dimension."""

    mode: str
    image_ids: list[str]
    node_names: list[str]
    offsets: np.ndarray  # x offset of each image (side), zeros (stack)
    widths: np.ndarray
    heights: np.ndarray
    rows: list[np.ndarray]  # row positions of the cells of each image, in cell order
    gap: float

    @property
    def total_width(self) -> float:
        return float(self.offsets[-1] + self.widths[-1]) if len(self.offsets) else 0.0


def to_luxar(
    obj: Any,
    path: str | Path,
    *,
    layers: Sequence[str] | None = None,
    layout: str = "side",
    title: str | None = None,
    colormap: str = "viridis",
    percentiles: tuple[float, float] = (1.0, 99.0),
    overwrite: bool = True,
) -> Path:
    """Compile a CellSpec (or an AnnData from ``to_anndata``) into a Luxar scene directory.

    ``layers``: ``"cells"``, ``"adjacency"``, ``"outlines"``, ``"feature:<feature_id>"``,
    ``"marker:<marker>"``, ``"category:<column>"``, ``"embedding:<obsm key>"`` (default: cells,
    coloured by classification when present). ``layout``: ``"side"`` puts images side by side
    from left to right in ``images`` order; ``"stack"`` puts them on a categorical ``image``
    dimension picked in the viewer. Feature windows span the ``percentiles`` of the non-NA values.
    The scene goes to :func:`scene_path` of ``path`` (luxar's naming: the name ends in ``.luxar.zarr``),
    which is returned. An existing scene there is replaced once the new one is complete (never
    anything else; ``overwrite=False`` refuses it), see :mod:`cellspec_sc.io.publish`.

    >>> import cellspec_sc as cs, tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "s.luxar.zarr"
    >>> cs.to_luxar(cs.example(), out, layout="stack").exists()
    True
    """
    import luxar

    path = scene_path(path)
    check_target(path, LUXAR_SCENE, overwrite=overwrite)
    if layout not in LAYOUTS:
        raise InputError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    specs = [parse_layer(t) for t in (layers if layers is not None else DEFAULT_LAYERS)]
    if not specs:
        raise InputError("no layer selected")
    src = scene_input(obj)
    _check_layers(src, specs)
    geometry = _layout(src, layout)
    title = title or _default_title(src)
    with publishing(path, LUXAR_SCENE, overwrite=overwrite) as payload, luxar.verbosity("silent"), \
            luxar.LuxarZarrCompiler(payload, atomic=False) as compiler:
        scene = compiler.create_scene(dimensions=_dimensions(geometry), viewer_config=_viewer_config(title),
                                      citation=_citation(src.provenance))
        built = _SceneBuilder(scene, src, geometry, colormap, percentiles)
        for spec in specs:
            built.add(spec)
        built.finish(title)
    return path


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


def _has_geometry_refs(src: SceneInput) -> bool:
    images = src.images
    return src.cellspec is not None and "geometry_ref" in images.columns and bool(images["geometry_ref"].notna().any())


# -- layout ----------------------------------------------------------------------------------------

def _layout(src: SceneInput, mode: str) -> Layout:
    image_ids = src.image_ids
    codes = pd.Index(image_ids, dtype=object).get_indexer(src.cells["image_id"].astype(object))
    if (codes < 0).any():
        unknown = src.cells["image_id"][codes < 0].iloc[0]
        raise InputError(f"cells row {int(np.flatnonzero(codes < 0)[0])}: image_id {unknown!r} is not in images")
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(image_ids) + 1))
    rows = [order[bounds[k]:bounds[k + 1]] for k in range(len(image_ids))]
    x, y = src.cells["x"].to_numpy(dtype=np.float64), src.cells["y"].to_numpy(dtype=np.float64)
    widths = _extent(src.images, "width_px", [x[r] for r in rows])
    heights = _extent(src.images, "height_px", [y[r] for r in rows], pixel_column="pixel_size_y")
    gap = 0.05 * float(widths.max()) if len(widths) and 0 < widths.max() < FLOAT32_MAX else 50.0
    if mode == "side":
        offsets = np.concatenate([[0.0], np.cumsum(widths + gap)[:-1]]) if len(widths) else np.zeros(0)
    else:
        offsets = np.zeros(len(image_ids))
    _check_float32_reach(x, y, offsets, rows)
    return Layout(mode, image_ids, _unique_node_names(image_ids, "image"), offsets, widths, heights, rows, gap)


def _check_float32_reach(x: np.ndarray, y: np.ndarray, offsets: np.ndarray, rows: list[np.ndarray]) -> None:
    """Refuse centroids that would not survive luxar's float32 positions (valid doubles can be far larger)."""
    for k, r in enumerate(rows):
        for name, values, shift in (("x", x[r], offsets[k]), ("y", y[r], 0.0)):
            bad = np.flatnonzero(~(np.abs(values + shift) < FLOAT32_MAX / 4))
            if bad.size:
                row = int(r[bad[0]])
                raise InputError(f"cells row {row}: {name} = {float(values[bad[0]])!r} um cannot be placed in a Luxar scene "
                                 f"(luxar stores positions as float32, up to about 3.4e38)")


def _extent(images: pd.DataFrame, size_column: str, coords: list[np.ndarray], pixel_column: str = "pixel_size"
            ) -> np.ndarray:
    """Image extent in micrometres: size in pixels x pixel size, else the largest centroid coordinate."""
    from_cells = np.array([float(np.nanmax(c)) if c.size else 0.0 for c in coords])
    if size_column not in images.columns or "pixel_size" not in images.columns:
        return from_cells
    size = pd.to_numeric(images[size_column], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    pixel = pd.to_numeric(images["pixel_size"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    if pixel_column in images.columns:
        own = pd.to_numeric(images[pixel_column], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        pixel = np.where(np.isfinite(own), own, pixel)
    extent = size * pixel
    usable = np.isfinite(extent) & (extent > 0) & (extent < FLOAT32_MAX / 16)
    return np.where(usable, np.maximum(extent, from_cells), from_cells)


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _node_name(text: str, fallback: str) -> str:
    """A node name that is also a portable file name (no ':' or '/', no leading dot)."""
    name = _UNSAFE.sub("_", text).strip("_.")
    return name or fallback


def _unique_node_names(texts: Sequence[str], fallback: str) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for text in texts:
        name = _node_name(text, fallback)
        if name in seen:
            seen[name] += 1
            name = f"{name}_{seen[name]}"
        seen.setdefault(name, 0)
        out.append(name)
    return out


def _dimensions(geometry: Layout) -> Any:
    from luxar import Dimension, Dimensions

    dims = [Dimension("x", unit="um", display=True), Dimension("y", unit="um", display=True)]
    if geometry.mode == "stack":
        dims.append(Dimension("image", unit="", categories=geometry.image_ids, display=False,
                              description="image of the cellspec object"))
    return Dimensions(dims)


def _viewer_config(title: str) -> Any:
    from luxar import CameraConfig, UIConfig, ViewerConfig

    # y downward through the camera (QuPath's view), never by a negative scale that would mirror the slide.
    camera = CameraConfig(view_axis="xy", up=(0.0, -1.0, 0.0))
    # tone_mapping "None" keeps legend colours exact on screen.
    return ViewerConfig(camera=camera, control_type="ortho", title=title, tone_mapping="None",
                        bloom_enabled=False, ui=UIConfig(show_scale_bar=True))


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


# -- radii and labels ------------------------------------------------------------------------------

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


def _hover_base(cells: pd.DataFrame) -> list[str]:
    ids = cells["cell_id"].astype(object).tolist()
    images = cells["image_id"].astype(object).tolist()
    return [f"{c} · {i}" for c, i in zip(ids, images, strict=True)]


# -- colourings ------------------------------------------------------------------------------------

_MAX_INTENSITY = 100.0  # luxar refuses a points intensity above this


def _windowed(values: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, float, float]:
    """(scalars, intensity, offset) showing the window [lo, hi]: the values as they are, with the window as
    luxar's intensity and offset, unless the window is narrower than 1/100 of a unit (luxar accepts intensities
    up to 100); then the values are stored rescaled to the window (0 at lo, 1 at hi) and the hover text keeps
    the measured value.

    >>> _windowed(np.array([1.0, 3.0]), 1.0, 3.0)[1:]
    (0.5, -0.5)
    >>> _windowed(np.array([1.0, 1.001]), 1.0, 1.001)[0].tolist()
    [0.0, 1.0]
    """
    span = hi - lo
    if span * _MAX_INTENSITY >= 1.0:
        return values.astype(np.float32), 1.0 / span, -lo / span
    return ((values - lo) / span).astype(np.float32), 1.0, 0.0


def _category_colouring(src: SceneInput, column: str) -> Colouring:
    values = src.category_column(column)
    categories = list(values.categories)
    colours = category_rgb(categories, src.palettes.get(column))
    codes = np.asarray(values.codes)
    rgb = np.vstack([colours, np.asarray([NA_COLOUR], dtype=np.float32)])[codes]  # code -1 -> NA grey
    text = np.asarray([*categories, "NA"], dtype=object)[codes]
    counts = np.bincount(codes[codes >= 0], minlength=len(categories))
    return Colouring(title=column, rgb=rgb.astype(np.float32), hover=[f"{column}: {t}" for t in text.tolist()],
                     legend=_category_legend(column, categories, colours, counts, int((codes < 0).sum())))


def _category_legend(column: str, categories: list[str], colours: np.ndarray, counts: np.ndarray, n_na: int,
                     limit: int = 24) -> str:
    rows = [f"{swatch(hex_colour(c))} {escape(name)} ({int(k):,})"
            for name, c, k in zip(categories[:limit], colours[:limit], counts[:limit], strict=True)]
    if len(categories) > limit:
        rows.append(f"... {len(categories) - limit} more")
    if n_na:
        rows.append(f"{swatch(hex_colour(NA_COLOUR))} NA ({n_na:,})")
    return f"<b>{escape(column)}</b><br>" + "<br>".join(rows)


def _feature_colouring(src: SceneInput, feature_id: str, colormap: str,
                       percentiles: tuple[float, float], title: str | None = None) -> Colouring:
    values = src.feature_column(feature_id)
    # luxar stores scalars as float32: larger magnitudes are drawn at the float32 limit (hover keeps the value)
    shown = np.clip(values, -FLOAT32_MAX, FLOAT32_MAX)
    window = robust_window(shown, percentiles)
    n_na = int(np.isnan(values).sum())
    text = [f"{feature_id}: {v:.6g}" if v == v else f"{feature_id}: NA" for v in values.tolist()]
    legend = (f"<b>{escape(title or feature_id)}</b><br>{escape(colormap)}, window {window[0]:.4g} to {window[1]:.4g}"
              f" (percentiles {percentiles[0]:g}-{percentiles[1]:g})")
    if n_na:
        legend += f"<br>{swatch(hex_colour(NA_COLOUR))} NA ({n_na:,})"
    return Colouring(title=feature_id, scalars=shown, colormap=colormap, window=window, hover=text, legend=legend)


def _plain_colouring(n: int) -> Colouring:
    return Colouring(title="cells", rgb=np.tile(np.asarray(UNCOLOURED, dtype=np.float32), (n, 1)))


# -- the scene -------------------------------------------------------------------------------------

class _SceneBuilder:
    """Adds layers to an open luxar scene; keeps the legend and the layer-name mapping."""

    def __init__(self, scene: Any, src: SceneInput, geometry: Layout, colormap: str,
                 percentiles: tuple[float, float]):
        self.scene, self.src, self.geometry = scene, src, geometry
        self.colormap, self.percentiles = colormap, percentiles
        self.radii = cell_radii(src.cells).astype(np.float32)
        self.xy = src.cells[["x", "y"]].to_numpy(dtype=np.float64)
        self.base = _hover_base(src.cells)
        self.keys = src.cells["cell_id"].astype(object).map(str).tolist()
        self.legends: list[str] = []
        self.mapping: list[dict[str, str]] = []
        self.node_names: set[str] = set()
        self.primary: Colouring | None = None
        self.shown_colouring = False
        self.embedding_views: list[str] = []

    # -- dispatch
    def add(self, spec: LayerSpec) -> None:
        if spec.kind == "cells":
            colouring = _category_colouring(self.src, "classification") \
                if "classification" in self.src.cells.columns else _plain_colouring(self.src.n_cells)
            self._colour_layer(spec, colouring)
        elif spec.kind == "feature":
            self._colour_layer(spec, _feature_colouring(self.src, spec.argument, self.colormap, self.percentiles))
        elif spec.kind == "marker":
            feature = self.src.feature_for_marker(spec.argument)
            self._colour_layer(spec, _feature_colouring(self.src, feature, self.colormap, self.percentiles,
                                                        title=f"{spec.argument} ({feature})"))
        elif spec.kind == "category":
            self._colour_layer(spec, _category_colouring(self.src, spec.argument))
        elif spec.kind == "embedding":
            self._embedding_layer(spec)
        elif spec.kind == "adjacency":
            self._adjacency_layer(spec)
        elif spec.kind == "outlines":
            self._outlines_layer(spec)

    def _layer_group(self, spec: LayerSpec, visible: bool = True, order: int = 10) -> Any:
        name = _node_name(spec.text, spec.kind)
        while name in self.node_names:
            name += "_"
        self.node_names.add(name)
        self.mapping.append({"layer": spec.text, "node": name})
        return self.scene.add_group(name, layer=True, visible=visible, blending_mode="normal", layer_order=order)

    def _colour_layer(self, spec: LayerSpec, colouring: Colouring) -> None:
        self.primary = self.primary or colouring  # the embedding takes the colours of the first colour layer
        # The first colour layer starts visible; later ones start hidden (toggle them in the Layers panel)
        # because opaque discs at the same centroids would hide each other anyway.
        visible = not self.shown_colouring
        self.shown_colouring = True
        if colouring.legend:
            self.legends.append(colouring.legend)
        self._points_layer(self._layer_group(spec, visible), self.xy, colouring, self.geometry.offsets)

    def _points_layer(self, group: Any, xy: np.ndarray, colouring: Colouring, offsets: np.ndarray,
                      keep: np.ndarray | None = None) -> None:
        labels = self.base if colouring.hover is None else \
            [f"{b} · {h}" for b, h in zip(self.base, colouring.hover, strict=True)]
        for k, rows in enumerate(self.geometry.rows):
            if keep is not None:
                rows = rows[keep[rows]]
            if rows.size == 0:
                continue
            parent = self._image_group(group, k, offsets[k])
            if colouring.scalars is None:
                self._points(parent, "cells", xy, rows, k, labels, colors=colouring.rgb[rows])
                continue
            values = colouring.scalars[rows]
            finite = np.isfinite(values)
            lo, hi = colouring.window
            if finite.any():
                scalars, intensity, offset = _windowed(values[finite], lo, hi)
                self._points(parent, "cells", xy, rows[finite], k, labels, scalars=scalars,
                             colormap=colouring.colormap, intensity=intensity, offset=offset)
            if not finite.all():
                na = rows[~finite]
                self._points(parent, "NA", xy, na, k, labels,
                             colors=np.tile(np.asarray(NA_COLOUR, dtype=np.float32), (na.size, 1)))

    def _image_group(self, group: Any, k: int, offset: float) -> Any:
        import luxar

        name = self.geometry.node_names[k]
        if self.geometry.mode == "side" or offset:
            return group.add_group(name, transform=luxar.translate(float(offset), 0.0, 0.0))
        return group.add_group(name)

    def _positions(self, xy: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
        pos = xy[rows]
        if self.geometry.mode == "stack":  # the third column is the image's index on the 'image' dimension
            pos = np.column_stack([pos, np.full(rows.size, k, dtype=np.float64)])
        return pos.astype(np.float32)

    def _points(self, parent: Any, name: str, xy: np.ndarray, rows: np.ndarray, k: int, labels: list[str],
                **appearance: Any) -> None:
        parent.add_points(name, self._positions(xy, rows, k), radii=self.radii[rows], extend_to_all=[],
                          labels=[labels[i] for i in rows.tolist()], keys=[self.keys[i] for i in rows.tolist()],
                          **appearance)

    # -- embedding
    def _embedding_layer(self, spec: LayerSpec) -> None:
        key = spec.argument
        emb = np.asarray(self.src.embeddings[key], dtype=np.float64)
        if emb.ndim != 2 or emb.shape[0] != self.src.n_cells or emb.shape[1] < 2:
            raise InputError(f"obsm[{key!r}] has shape {emb.shape}; expected ({self.src.n_cells}, >=2)")
        keep = np.isfinite(emb[:, :2]).all(axis=1)
        xy = self._fit_embedding(emb[:, :2], keep)
        colouring = self.primary or _plain_colouring(self.src.n_cells)
        offsets = np.full(len(self.geometry.image_ids), self.geometry.total_width + 2 * self.geometry.gap)
        self.embedding_views.append(key)
        self._points_layer(self._layer_group(spec), xy, colouring, offsets, keep=keep)

    def _fit_embedding(self, emb: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """Scale an embedding into a square as tall as the tallest image, y flipped so it reads like scanpy's plot."""
        out = np.zeros_like(emb)
        if not keep.any():
            return out
        lo, hi = emb[keep].min(axis=0), emb[keep].max(axis=0)
        span = float(max((hi - lo).max(), 1e-12))
        size = float(self.geometry.heights.max()) if len(self.geometry.heights) and self.geometry.heights.max() > 0 \
            else 1000.0
        out[:, 0] = (emb[:, 0] - lo[0]) / span * size
        out[:, 1] = (hi[1] - emb[:, 1]) / span * size
        return np.where(keep[:, None], out, 0.0)

    # -- lines
    def _adjacency_layer(self, spec: LayerSpec) -> None:
        a, b = self.src.contacts
        group = self._layer_group(spec, order=0)  # drawn under the cells
        image_of = np.empty(self.src.n_cells, dtype=np.int64)
        local = np.empty(self.src.n_cells, dtype=np.int64)
        for k, rows in enumerate(self.geometry.rows):
            image_of[rows] = k
            local[rows] = np.arange(rows.size)
        order = np.argsort(image_of[a], kind="stable")
        bounds = np.searchsorted(image_of[a][order], np.arange(len(self.geometry.rows) + 1))
        width = 0.1 * float(np.median(self.radii)) if self.radii.size else 0.5
        for k, rows in enumerate(self.geometry.rows):
            pairs = order[bounds[k]:bounds[k + 1]]
            if pairs.size == 0:
                continue
            parent = self._image_group(group, k, self.geometry.offsets[k])
            indices = np.column_stack([local[a[pairs]], local[b[pairs]]]).astype(np.uint32)
            parent.add_lines("contacts", self._positions(self.xy, rows, k), widths=width,
                             colors=np.tile(np.asarray(LINE_COLOUR, dtype=np.float32), (rows.size, 1)),
                             indices=indices, line_type="indexed", extend_to_all=[], keys=[self.keys[i] for i in rows.tolist()])

    def _outlines_layer(self, spec: LayerSpec) -> None:
        """Outline rings (exteriors; holes are not drawn) as closed lines, one vertex key per cell_id."""
        import shapely

        from cellspec_sc.io.outlines import image_outlines

        outlines = image_outlines(self.src.cellspec)
        group = self._layer_group(spec, order=20)  # drawn over the cells
        width = 0.05 * float(np.median(self.radii)) if self.radii.size else 0.25
        for k, rows in enumerate(self.geometry.rows):
            found = outlines.get(self.geometry.image_ids[k])
            if found is None or rows.size == 0:
                continue
            ids = self.src.cells["cell_id"].to_numpy(dtype=object)[rows]
            shapes = found.for_cells(ids)
            if shapes.empty:
                continue
            row_of = pd.Series(rows, index=pd.Index([str(i) for i in ids], dtype=object))
            parts, owner = shapely.get_parts(shapes.to_numpy(), return_index=True)
            coords, ring = shapely.get_coordinates(shapely.get_exterior_ring(parts), return_index=True)
            same = ring[:-1] == ring[1:]  # consecutive points of one ring (its last point repeats its first)
            indices = np.column_stack([np.flatnonzero(same), np.flatnonzero(same) + 1]).astype(np.uint32)
            cell_rows = row_of.loc[shapes.index.to_numpy()[owner[ring]]].to_numpy()
            vertices = coords if self.geometry.mode == "side" else \
                np.column_stack([coords, np.full(len(coords), k, dtype=np.float64)])
            parent = self._image_group(group, k, self.geometry.offsets[k])
            parent.add_lines("outlines", vertices.astype(np.float32), widths=width,
                             colors=np.tile(np.asarray(OUTLINE_COLOUR, dtype=np.float32), (len(coords), 1)),
                             indices=indices, line_type="indexed", extend_to_all=[],
                             keys=[self.keys[i] for i in cell_rows.tolist()],
                             labels=[self.base[i] for i in cell_rows.tolist()])

    # -- overlays and attributes
    def finish(self, title: str) -> None:
        scene = self.scene
        scene.attrs["title"] = title
        scene.attrs["units"] = "um"
        scene.attrs["cellspec"] = {"layers": self.mapping, "layout": self.geometry.mode,
                                   "images": self.geometry.image_ids, "image_nodes": self.geometry.node_names}
        scene.add_text(title, position=(0.08, 0.02), font_size=0.03, anchor="top-left",
                       color="rgba(255,255,255,0.85)", name="title")
        scene.add_text(self._layout_caption(), position=(0.08, 0.065), font_size=0.018, anchor="top-left",
                       color="rgba(255,255,255,0.7)", name="images")
        if self.legends:
            html = '<div style="background:rgba(0,0,0,0.55);padding:6px;font-size:12px;color:#eee">' \
                   + "<br><br>".join(self.legends) + "</div>"
            scene.add_html(html, position=(0.99, 0.02), anchor="top-right", width=0.22, name="legend")

    def _layout_caption(self) -> str:
        names = list(self.geometry.image_ids)
        if self.geometry.mode == "stack":
            text = f"{len(names)} images on the 'image' dimension (press N): " + ", ".join(names[:8])
            if len(names) > 8:
                text += ", ..."
        else:
            text = "Left to right: " + " | ".join(names[:12]) + (" | ..." if len(names) > 12 else "")
        for key in self.embedding_views:
            text += f" | {key}"
        return text
