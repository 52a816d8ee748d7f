"""The nodes of a Luxar scene of cells and where they go: layout, hidden dimensions, camera, nodes, overlays.

Where things go. Side by side, image k sits at x offset ``offsets[k]``;
stacked, every image is at the origin and its index on the categorical
``image`` dimension picks it. Colour layers are the values of a categorical
``colour by`` dimension (legends follow it), a ``category:`` layer adds a
dimension that shows one category at a time, and side by side a ``go to``
dimension carries one camera waypoint per image (stacked, the ``image``
dimension carries them). y grows downward through the camera (QuPath's view),
never by mirroring the data.

The nodes. Each image is a group (a toggle in the viewer's Layers panel)
holding its frame, its name and one points node per colour layer; a continuous
colour layer is a group of its own that carries the window as its gain, so
that its range control in the Layers panel starts from the window. Colour
layers sit at their index on the ``colour by`` dimension; the legend of each
layer is shown only at that index. Adjacency, outlines and embeddings are one
group each. Hover labels read ``<cell_id> · <image_id> · <class> · <layer> =
<value>``; right-click copies the cell id and, with a link template, opens it.

>>> Layout("side", ["a", "b"], ["a", "b"], np.array([0.0, 110.0]), np.array([100.0, 50.0]),
...        np.array([80.0, 40.0]), [], 5.0).total_width
160.0
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from cellspec_sc.bridges.luxar._colour import (
    FLOAT32_MAX,
    FRAME_COLOUR,
    LINE_COLOUR,
    NA_COLOUR,
    NAME_COLOUR,
    OUTLINE_COLOUR,
    Colouring,
    legend_html,
    linear_lut,
    linear_rgb,
    stored_scalars,
)
from cellspec_sc.bridges.luxar._input import SceneInput
from cellspec_sc.display import LABEL_LIMIT, short_name
from cellspec_sc.errors import InputError
from cellspec_sc.io import image_outlines

LAYOUTS = ("side", "stack")
COLOUR_DIM, IMAGE_DIM, GOTO_DIM = "colour by", "image", "go to"
ALL_IMAGES, ALL_CATEGORIES = "all images", "all"
SHARPNESS = 1.0  # crisp discs: luxar's default is a soft Gaussian splat
DISC_SCALE = 0.55  # luxar draws a sharp point out to about twice its radius (measured in the viewer)


# -- where the images go ---------------------------------------------------------------------------

@dataclass
class Layout:
    """Where each image goes: x offsets side by side, or an index along the categorical ``image`` dimension."""

    mode: str
    image_ids: list[str]
    node_names: list[str]
    offsets: np.ndarray  # x offset of each image (side), zeros (stack)
    widths: np.ndarray
    heights: np.ndarray
    rows: list[np.ndarray]  # row positions of the cells of each image, in cell order
    gap: float
    stack_dim: str = "image"  # the dimension of the stacked layout ("sample" when stacked by sample_id)

    @property
    def total_width(self) -> float:
        return float(self.offsets[-1] + self.widths[-1]) if len(self.offsets) else 0.0

    @property
    def height(self) -> float:
        return float(self.heights.max()) if len(self.heights) else 0.0


def image_layout(cells: pd.DataFrame, images: pd.DataFrame, image_ids: list[str], mode: str,
                 by: str = "image_id") -> Layout:
    """Group the cells by image (or by ``by``, e.g. sample_id) and place the groups (``side`` or ``stack``).
    Grouped by another column, a group's extent is that of its cells."""
    if mode not in LAYOUTS:
        raise InputError(f"layout must be one of {', '.join(LAYOUTS)}, not {mode!r}")
    codes = pd.Index(image_ids, dtype=object).get_indexer(cells[by].astype(object))
    if (codes < 0).any():
        unknown = cells[by][codes < 0].iloc[0]
        raise InputError(f"cells row {int(np.flatnonzero(codes < 0)[0])}: {by} {unknown!r} is not in images")
    if by != "image_id":
        images = pd.DataFrame({"image_id": image_ids})
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(image_ids) + 1))
    rows = [order[bounds[k]:bounds[k + 1]] for k in range(len(image_ids))]
    x, y = cells["x"].to_numpy(dtype=np.float64), cells["y"].to_numpy(dtype=np.float64)
    widths = _extent(images, "width_px", [x[r] for r in rows])
    heights = _extent(images, "height_px", [y[r] for r in rows], pixel_column="pixel_size_y")
    gap = 0.08 * float(widths.max()) if len(widths) and 0 < widths.max() < FLOAT32_MAX else 50.0
    if mode == "side":
        offsets = np.concatenate([[0.0], np.cumsum(widths + gap)[:-1]]) if len(widths) else np.zeros(0)
    else:
        offsets = np.zeros(len(image_ids))
    _check_float32_reach(x, y, offsets, rows)
    return Layout(mode, image_ids, unique_node_names(image_ids, "image"), offsets, widths, heights, rows, gap,
                  IMAGE_DIM if by == "image_id" else by.removesuffix("_id"))


def _check_float32_reach(x: np.ndarray, y: np.ndarray, offsets: np.ndarray, rows: list[np.ndarray]) -> None:
    """Refuse centroids that would not survive luxar's float32 positions (valid doubles can be far larger)."""
    for k, r in enumerate(rows):
        for name, values, shift in (("x", x[r], offsets[k]), ("y", y[r], 0.0)):
            bad = np.flatnonzero(~(np.abs(values + shift) < FLOAT32_MAX / 4))
            if bad.size:
                row = int(r[bad[0]])
                raise InputError(f"cells row {row}: {name} = {float(values[bad[0]])!r} um cannot be placed in a Luxar "
                                 f"scene (luxar stores positions as float32, up to about 3.4e38)")


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


def node_name(text: str, fallback: str) -> str:
    """A node name that is also a portable file name (no ':' or '/', no leading dot).

    >>> node_name("marker:CD3e", "layer")
    'marker_CD3e'
    """
    name = _UNSAFE.sub("_", text).strip("_.")
    return name or fallback


def unique_node_names(texts: Sequence[str], fallback: str) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for text in texts:
        name = node_name(text, fallback)
        if name in seen:
            seen[name] += 1
            name = f"{name}_{seen[name]}"
        seen.setdefault(name, 0)
        out.append(name)
    return out


# -- dimensions and camera -------------------------------------------------------------------------

@dataclass
class HiddenDims:
    """The scene's hidden dimensions: name -> category labels (the first label is where the viewer opens)."""

    categories: dict[str, list[str]]

    @property
    def names(self) -> list[str]:
        return list(self.categories)

    def luxar(self) -> object:
        from luxar import Dimension, Dimensions

        dims = [Dimension("x", unit="um", display=True), Dimension("y", unit="um", display=True)]
        dims += [Dimension(name, unit="", categories=panel_labels(labels), display=False)
                 for name, labels in self.categories.items()]
        return Dimensions(dims)


def panel_labels(labels: list[str]) -> list[str]:
    """Category labels as the viewer's panel shows them: at most ``LABEL_LIMIT`` characters (luxar refuses
    longer than 1,024), shortened in the middle and kept distinct (the hover labels keep the whole text).

    >>> panel_labels(["all", "a" * 100 + "1", "a" * 100 + "1b"])[1:] == ["a" * 39 + "…" + "a" * 39 + "1",
    ...                                                                  "a" * 39 + "…" + "a" * 38 + "1b"]
    True
    >>> len(set(panel_labels(["x" * 90 + "1" + "y" * 40, "x" * 90 + "2" + "y" * 40])))
    2
    """
    shown: list[str] = []
    for label in labels:
        short = short_name(label, LABEL_LIMIT)
        k = 1
        while short in shown:  # two long labels that differ only in their middle
            k += 1
            short = short_name(label, LABEL_LIMIT - len(f" ({k})")) + f" ({k})"
        shown.append(short)
    return shown


def hidden_dims(geometry: Layout, colour_titles: list[str], category_dims: dict[str, list[str]]) -> HiddenDims:
    """``image`` (stacked), ``colour by`` (two or more colour layers), one per ``category:`` layer, ``go to``."""
    dims: dict[str, list[str]] = {}
    if geometry.mode == "stack":
        dims[geometry.stack_dim] = list(geometry.image_ids)
    if len(colour_titles) > 1:
        dims[COLOUR_DIM] = list(colour_titles)
    dims.update(category_dims)
    if geometry.mode == "side" and len(geometry.image_ids) > 1:
        dims[GOTO_DIM] = [ALL_IMAGES, *geometry.image_ids]
    return HiddenDims(dims)


def category_dim_name(column: str, taken: Sequence[str]) -> str:
    """The dimension of a ``category:`` layer: the column's name, unless a dimension already has it."""
    name = column if column not in (*taken, "x", "y", COLOUR_DIM, IMAGE_DIM, GOTO_DIM) else f"{column} (category)"
    return name[:1024]


def camera_facing(box: tuple[float, float, float, float], depth: float, zoom: float | None = None,
                  shift: float = 0.0) -> object:
    """An orthographic camera looking at the centre of ``box`` (x0, y0, x1, y1) with y downward on screen,
    ``shift`` (scene units) below it, so that the box shows that much higher on screen."""
    from luxar import CameraConfig

    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2 + shift
    return CameraConfig(position=(cx, cy, -depth), target=(cx, cy, 0.0), up=(0.0, -1.0, 0.0), zoom=zoom)


def framing(box: tuple[float, float, float, float], depth: float, view_axis: str | None = None) -> object:
    """A camera ``depth`` away that shows ``box`` whole in the part of the view above the viewer's dimension
    panel (the bottom :data:`PANEL_SHARE` of the view) and right of its control rail.

    luxar's orthographic view is :data:`VIEW_PER_DEPTH` times the camera's distance tall, divided by its zoom
    (measured in the viewer)."""
    zoom = _fit_zoom(box, VIEW_PER_DEPTH * depth)
    camera = camera_facing(box, depth, zoom, shift=PANEL_SHARE / 2 * VIEW_PER_DEPTH * depth / zoom)
    if view_axis is not None:
        camera.view_axis = view_axis  # Home / F re-frame facing x-y
    return camera


def scene_depth(whole: tuple[float, float, float, float]) -> float:
    """A camera distance well beyond the scene (the orthographic view does not depend on it but for the zoom)."""
    return 2.0 * 4.0 / 3.0 * max(whole[2] - whole[0], whole[3] - whole[1], 1e-9)


def opening_camera(geometry: Layout, right: float) -> object:
    """Where the viewer opens: the whole scene, above the dimension panel, facing x-y with y downward."""
    whole = scene_box(geometry)
    whole = (whole[0], whole[1], max(whole[2], right), whole[3])
    return framing(whole, scene_depth(whole), view_axis="xy")


VIEW_ASPECT = 1.4  # narrowest browser window (width / height) a waypoint frames its image for
VIEW_MARGIN = 1.15  # room around a framed image (its name above it is in the box)
VIEW_PER_DEPTH = 0.87  # luxar's orthographic view height at zoom 1 per unit of camera distance (measured)
HOVER_TOP = 0.115  # the hover text's top edge, a fraction of the view's height below its top
PANEL_SHARE = 0.3  # bottom of the view the viewer's dimension panel may cover (131 px of an 800 px window + margin)


def waypoints(geometry: Layout, right: float) -> list[object]:
    """One waypoint per image (``go to`` side by side, the stacking dimension stacked) and, side by side, one
    back to all images, which is also where the viewer opens. ``right`` is the right edge of the scene
    (the embedding included).

    Each frames its box above the dimension panel (:func:`framing`).
    """
    from luxar import Waypoint

    if len(geometry.image_ids) < 2:
        return []
    whole = scene_box(geometry)
    whole = (whole[0], whole[1], max(whole[2], right), whole[3])
    depth = scene_depth(whole)
    dim = GOTO_DIM if geometry.mode == "side" else geometry.stack_dim
    out = []
    if geometry.mode == "side":
        out.append(Waypoint(when={dim: 0}, camera=framing(whole, depth), duration_ms=600))
    for k in range(len(geometry.image_ids)):
        box = image_box(geometry, k)
        step = k + 1 if geometry.mode == "side" else k
        out.append(Waypoint(when={dim: step}, camera=framing(box, depth), duration_ms=600))
    return out


def _fit_zoom(box: tuple[float, float, float, float], base_height: float) -> float:
    """Orthographic zoom that fits ``box`` into the part of a view ``base_height`` tall (at zoom 1) above the
    dimension panel."""
    height = max(box[3] - box[1], (box[2] - box[0]) / VIEW_ASPECT, 1e-9) * VIEW_MARGIN / (1.0 - PANEL_SHARE)
    return float(base_height / height)


def embedding_x0(geometry: Layout, index: int = 0) -> float:
    """Left edge of the ``index``-th embedding view, right of the images."""
    right = geometry.total_width if geometry.mode == "side" else float(geometry.widths.max(initial=0.0))
    return right + 2 * geometry.gap + index * (geometry.height + 2 * geometry.gap)


def image_box(geometry: Layout, k: int) -> tuple[float, float, float, float]:
    """The extent of image k in scene coordinates, with room for its name above it."""
    x0 = float(geometry.offsets[k])
    return (x0, -name_height(geometry) * 1.6, x0 + float(geometry.widths[k]), float(geometry.heights[k]))


def scene_box(geometry: Layout) -> tuple[float, float, float, float]:
    right = geometry.total_width if geometry.mode == "side" else float(geometry.widths.max(initial=0.0))
    return (0.0, -name_height(geometry) * 1.6, right, geometry.height)


def name_height(geometry: Layout) -> float:
    """Height of the image names drawn above the images: 4% of the tallest image."""
    return 0.04 * max(geometry.height, float(geometry.widths.max(initial=0.0)), 1.0)


# -- frames and names ------------------------------------------------------------------------------

def frame_lines(width: float, height: float) -> tuple[np.ndarray, np.ndarray]:
    """Vertices and segment indices of a rectangle from (0, 0) to (width, height).

    >>> frame_lines(2.0, 1.0)[0].tolist()
    [[0.0, 0.0], [2.0, 0.0], [2.0, 1.0], [0.0, 1.0]]
    """
    vertices = np.array([[0.0, 0.0], [width, 0.0], [width, height], [0.0, height]])
    return vertices, np.array([[0, 1], [1, 2], [2, 3], [3, 0]], dtype=np.uint32)


def text_mesh(text: str, height: float) -> tuple[np.ndarray, np.ndarray]:
    """Triangles of ``text`` set in bold sans serif, ``height`` tall, baseline at y = 0, growing upward on
    screen (negative y, as the scene's y points down). Returns (vertices (n, 2), faces (m, 3)).

    >>> vertices, faces = text_mesh("a1", 10.0)
    >>> bool(vertices[:, 1].min() < -5 and faces.shape[1] == 3)
    True
    >>> [text_mesh(t, 10.0)[1].shape for t in (" ", "\u200b")]  # nothing to draw
    [(0, 3), (0, 3)]
    """
    import shapely
    from matplotlib.font_manager import FontProperties
    from matplotlib.path import Path
    from matplotlib.textpath import text_to_path

    # set at size 1 and scaled: FreeType's layout time grows with the size asked for. Not TextPath: for a text
    # with no outline at all (" ", a zero-width space) it fails inside matplotlib (AttributeError)
    outline, codes = text_to_path.get_text_path(FontProperties(family="DejaVu Sans", weight="bold"), text)
    if len(outline) == 0:
        return np.zeros((0, 2)), np.zeros((0, 3), dtype=np.uint32)
    path = Path(np.asarray(outline, dtype=np.float64) / text_to_path.FONT_SCALE, codes)
    shape = None
    for ring in path.to_polygons():
        if len(ring) < 3:
            continue
        polygon = shapely.make_valid(shapely.Polygon(ring))
        shape = polygon if shape is None else shape.symmetric_difference(polygon)  # holes by even-odd
    if shape is None or shape.is_empty:
        return np.zeros((0, 2)), np.zeros((0, 3), dtype=np.uint32)
    triangles = shapely.get_parts(shapely.constrained_delaunay_triangles(shape))
    corners = shapely.get_coordinates(shapely.get_exterior_ring(triangles)).reshape(len(triangles), 4, 2)[:, :3]
    vertices = corners.reshape(-1, 2) * np.array([height, -height])
    return vertices, np.arange(len(vertices), dtype=np.uint32).reshape(-1, 3)


# -- the nodes ------------------------------------------------------------------------------------

@dataclass
class ColourLayer:
    """A colour layer as placed in the scene: its node name, index on ``colour by`` and category dimension."""

    name: str
    colouring: Colouring
    index: int
    category_dim: str | None = None


class SceneBuilder:
    """Adds the nodes of one scene to an open luxar scene."""

    def __init__(self, scene: Any, src: SceneInput, geometry: Layout, dims: HiddenDims, layers: list[ColourLayer],
                 radii: np.ndarray, link: str | None = None):
        self.scene, self.src, self.geometry, self.dims, self.layers = scene, src, geometry, dims, layers
        self.radii = (radii * DISC_SCALE).astype(np.float32)
        self.link = link
        self.xy = src.cells[["x", "y"]].to_numpy(dtype=np.float64)
        self.keys = src.cells["cell_id"].astype(object).map(str).to_numpy(dtype=object)
        self.image_of = src.cells["image_id"].astype(object).map(str).to_numpy(dtype=object)
        self.base = _hover_base(src.cells)
        self.n_embeddings = 0
        self.image_groups = [self._image_group(k) for k in range(len(geometry.image_ids))]

    # -- placement
    def _coordinates(self, rows: np.ndarray, xy: np.ndarray, k: int, extra: dict[str, Any]
                     ) -> tuple[np.ndarray, list[str], dict[str, Any]]:
        """Positions (x, y, then the hidden dimensions given), their dim_order and the node's nd_transform;
        dimensions not given extend to all values.

        A colour layer's points are stored at 'colour by' = 0 and moved to the layer's index by a permutation
        of the dimension's categories (``nd_transform``): the positions of colour layers with the same cells
        are then byte-identical, and luxar stores them once (an ``array_ref``)."""
        columns, order, moves = [xy[rows, 0], xy[rows, 1]], ["x", "y"], {}
        if self.geometry.mode == "stack":
            columns.append(np.full(rows.size, float(k)))
            order.append(self.geometry.stack_dim)
        for dim, value in extra.items():
            if dim not in self.dims.categories:
                continue
            if dim == COLOUR_DIM and value:
                moves[dim] = {"permutation": swap_first(len(self.dims.categories[dim]), int(value))}
                value = 0
            columns.append(np.broadcast_to(np.asarray(value, dtype=np.float64), rows.shape))
            order.append(dim)
        return np.column_stack(columns).astype(np.float32), order, moves

    def _image_group(self, k: int) -> Any:
        import luxar

        name = self.geometry.node_names[k]
        transform = luxar.translate(float(self.geometry.offsets[k]), 0.0, 0.0)
        group = self.scene.add_group(name, layer=True, blending_mode="normal", layer_order=10, transform=transform)
        self._frame_and_name(group, k)
        return group

    def _frame_and_name(self, group: Any, k: int) -> None:
        vertices, indices = frame_lines(float(self.geometry.widths[k]), float(self.geometry.heights[k]))
        label = f"image {self.geometry.image_ids[k]}"
        width = 0.0015 * max(self.geometry.height, 1.0)
        pos, order, _ = self._coordinates(np.arange(4), vertices, k, {})
        group.add_lines("frame", pos, widths=width, colors=tuple(linear_rgb(FRAME_COLOUR).tolist()), indices=indices,
                        line_type="indexed", dim_order=order, labels=[label] * 4)
        glyphs, faces = text_mesh(self.geometry.image_ids[k], name_height(self.geometry))
        if len(faces):
            glyphs = glyphs + np.array([0.0, -0.4 * name_height(self.geometry)])
            pos, order, _ = self._coordinates(np.arange(len(glyphs)), glyphs, k, {})
            group.add_mesh("name", pos, faces, colors=np.tile(linear_rgb(NAME_COLOUR), (len(pos), 1)),
                           shading="none", dim_order=order, labels=[label] * len(pos))

    # -- colour layers
    def add_colour_layers(self) -> None:
        for layer in self.layers:
            for k, rows in enumerate(self.geometry.rows):
                if rows.size:
                    self._colour_nodes(self.image_groups[k], f"{self.geometry.node_names[k]}.{layer.name}", layer,
                                       rows, self.xy, k)

    def _colour_nodes(self, parent: Any, name: str, layer: ColourLayer, rows: np.ndarray, xy: np.ndarray,
                      k: int) -> None:
        """One layer's points of one image (or of its cells in the embedding): RGB points named ``name``, or
        scalars in a group ``name`` that carries the window (a Layers-panel entry) and grey NA points beside it
        (outside the group: its gain would also scale their direct colours)."""
        colouring = layer.colouring
        if not colouring.continuous:
            self._rgb_points(parent, name, layer, rows, xy, k)
            return
        values = colouring.values[rows]
        finite = np.isfinite(values)
        if finite.any():
            scalars, intensity, offset = stored_scalars(values[finite], colouring.window)
            group = parent.add_group(name, layer=True, intensity=intensity, offset=offset)
            self._points(group, "cells", layer, rows[finite], xy, k, {COLOUR_DIM: layer.index}, scalars=scalars,
                         colormap=linear_lut(colouring.colormap))
        if not finite.all():
            na = rows[~finite]
            self._points(parent, f"{name}.NA", layer, na, xy, k, {COLOUR_DIM: layer.index},
                         colors=np.tile(linear_rgb(NA_COLOUR), (na.size, 1)))

    def _rgb_points(self, parent: Any, name: str, layer: ColourLayer, rows: np.ndarray, xy: np.ndarray,
                    k: int) -> None:
        extra: dict[str, Any] = {COLOUR_DIM: layer.index}
        if layer.category_dim is not None:
            # each cell twice: at 'all' (0) and at its own category, so the dimension shows one category at a time
            codes = layer.colouring.codes[rows]
            own = np.where(codes >= 0, codes + 1, len(layer.colouring.categories) + 1).astype(np.float64)
            extra[layer.category_dim] = np.concatenate([np.zeros(rows.size), own])
            rows = np.concatenate([rows, rows])
        self._points(parent, name, layer, rows, xy, k, extra, colors=linear_rgb(layer.colouring.rgb[rows]))

    def _points(self, parent: Any, name: str, layer: ColourLayer, rows: np.ndarray, xy: np.ndarray, k: int,
                extra: dict[str, Any], **appearance: Any) -> None:
        pos, order, moves = self._coordinates(rows, xy, k, extra)
        text = layer.colouring.value_text
        labels = [f"{self.base[i]} · {text[i]}" if text[i] else self.base[i] for i in rows.tolist()]
        parent.add_points(name, pos, radii=self.radii[rows], sharpness=SHARPNESS, dim_order=order, labels=labels,
                          keys=self.keys[rows].tolist(), **self._actions(rows), **_moved(moves), **appearance)

    def _actions(self, rows: np.ndarray) -> dict[str, str]:
        """Right-click: copy the cell id; with a link template, open it (one image per node, so {image_id} is
        filled in here and {cell_id} becomes luxar's {hover_key})."""
        actions = {"copy": "{hover_key}"}
        if self.link and rows.size:
            images = set(self.image_of[rows].tolist())
            if len(images) == 1:
                actions["link"] = self.link.replace("{image_id}", quote(images.pop(), safe="")) \
                    .replace("{cell_id}", "{hover_key}")
        return actions

    # -- embedding
    def add_embedding(self, key: str, emb: np.ndarray) -> None:
        """The embedding right of the images, one copy per colour layer, split by image (stacked: on its image)."""
        import luxar

        keep = np.isfinite(emb[:, :2]).all(axis=1)
        xy = fit_embedding(emb[:, :2], keep, self.geometry.height or 1000.0)
        x0 = embedding_x0(self.geometry, self.n_embeddings)
        self.n_embeddings += 1
        name = node_name(f"embedding_{key}", "embedding")
        group = self.scene.add_group(name, layer=True, blending_mode="normal", layer_order=10,
                                     transform=luxar.translate(x0, 0.0, 0.0))
        for layer in self.layers:
            for k, rows in enumerate(self.geometry.rows):
                rows = rows[keep[rows]]
                if rows.size:
                    self._colour_nodes(group, f"{self.geometry.node_names[k]}.{layer.name}", layer, rows, xy, k)

    # -- lines
    def add_adjacency(self, contacts: tuple[np.ndarray, np.ndarray]) -> None:
        import luxar

        a, b = contacts
        group = self.scene.add_group("adjacency", layer=True, blending_mode="normal", layer_order=0)
        local = np.empty(self.src.n_cells, dtype=np.int64)
        image_of = np.empty(self.src.n_cells, dtype=np.int64)
        for k, rows in enumerate(self.geometry.rows):
            image_of[rows], local[rows] = k, np.arange(rows.size)
        degree = np.bincount(np.concatenate([a, b]), minlength=self.src.n_cells)
        width = 0.1 * float(np.median(self.radii)) if self.radii.size else 0.5
        for k, rows in enumerate(self.geometry.rows):
            pairs = np.flatnonzero(image_of[a] == k)
            if pairs.size == 0:
                continue
            parent = group.add_group(self.geometry.node_names[k],
                                     transform=luxar.translate(float(self.geometry.offsets[k]), 0.0, 0.0))
            indices = np.column_stack([local[a[pairs]], local[b[pairs]]]).astype(np.uint32)
            pos, order, _ = self._coordinates(rows, self.xy, k, {})
            parent.add_lines("contacts", pos, widths=width, colors=tuple(linear_rgb(LINE_COLOUR).tolist()),
                             indices=indices, line_type="indexed", dim_order=order, keys=self.keys[rows].tolist(),
                             labels=[f"{self.base[i]} · {degree[i]} contacts" for i in rows.tolist()])

    def add_outlines(self) -> None:
        """Outline rings (exteriors) as closed lines, once per colour layer so the hover names its value."""
        import luxar

        outlines = image_outlines(self.src.cellspec)
        group = self.scene.add_group("outlines", layer=True, blending_mode="normal", layer_order=20)
        width = 0.05 * float(np.median(self.radii)) / DISC_SCALE if self.radii.size else 0.25
        for k, rows in enumerate(self.geometry.rows):
            found = outlines.get(self.geometry.image_ids[k])
            rings = None if found is None or rows.size == 0 else _rings(found, rows, self.keys)
            if rings is None:
                continue
            coords, indices, cell_rows = rings
            parent = group.add_group(self.geometry.node_names[k],
                                     transform=luxar.translate(float(self.geometry.offsets[k]), 0.0, 0.0))
            for layer in self.layers:
                pos, order, moves = self._coordinates(np.arange(len(coords)), coords, k, {COLOUR_DIM: layer.index})
                text = layer.colouring.value_text
                parent.add_lines(node_name(f"outlines.{layer.name}", "outlines"), pos, widths=width,
                                 colors=tuple(linear_rgb(OUTLINE_COLOUR).tolist()), indices=indices,
                                 line_type="indexed", dim_order=order,
                                 keys=self.keys[cell_rows].tolist(), copy="{hover_key}", **_moved(moves),
                                 labels=[f"{self.base[i]} · {text[i]}" if text[i] else self.base[i]
                                         for i in cell_rows.tolist()])

    # -- overlays
    def add_overlays(self, title: str) -> None:
        scene = self.scene
        scene.add_text(short_name(title, LABEL_LIMIT), position=(0.08, 0.02), font_size=0.03, anchor="top-left",
                       color="rgba(255,255,255,0.85)", name="title")
        for layer in self.layers:
            visible = {COLOUR_DIM: layer.index} if COLOUR_DIM in self.dims.categories else None
            scene.add_html(legend_html(layer.colouring), position=(0.99, 0.02), anchor="top-right", width=0.2,
                           name=node_name(f"legend_{layer.name}", "legend"), visible_range=visible)
        if self.geometry.mode == "stack":
            for k, image in enumerate(self.geometry.image_ids):
                dim = self.geometry.stack_dim
                scene.add_text(short_name(f"{dim}: {image}", LABEL_LIMIT), position=(0.08, 0.07), font_size=0.022,
                               anchor="top-left", color="rgba(255,255,255,0.85)", name=f"image_name_{k}",
                               visible_range={dim: k})
        # the hover text sits under the title (and the stacked image's name), clear of the legend (top right),
        # the scale bar (bottom left) and the dimension panel (bottom centre)
        scene.add_text("{hover_label}", position=(0.08, HOVER_TOP), font_size=0.02, anchor="top-left", hover=True,
                       background="rgba(0,0,0,0.7)", name="hover")


def swap_first(n: int, index: int) -> list[int]:
    """The permutation of n categories that exchanges the first and ``index`` (luxar: effective index =
    permutation[stored index]).

    >>> swap_first(4, 2)
    [2, 1, 0, 3]
    """
    order = list(range(n))
    order[0], order[index] = index, 0
    return order


def _moved(moves: dict[str, Any]) -> dict[str, Any]:
    return {"nd_transform": moves} if moves else {}


def _hover_base(cells: pd.DataFrame) -> list[str]:
    """'<cell_id> · <image_id>', then ' · <classification>' where the cell has one."""
    ids = cells["cell_id"].astype(object).map(str).tolist()
    images = cells["image_id"].astype(object).map(str).tolist()
    base = [f"{c} · {i}" for c, i in zip(ids, images, strict=True)]
    if "classification" in cells.columns:
        classes = cells["classification"].astype(object).tolist()
        base = [f"{b} · {c}" if isinstance(c, str) and c else b for b, c in zip(base, classes, strict=True)]
    return base


def fit_embedding(emb: np.ndarray, keep: np.ndarray, size: float) -> np.ndarray:
    """Scale an embedding into a square ``size`` tall, y flipped so it reads like scanpy's plot.

    >>> fit_embedding(np.array([[0.0, 0.0], [1.0, 2.0]]), np.array([True, True]), 10.0).tolist()
    [[0.0, 10.0], [5.0, 0.0]]
    """
    out = np.zeros_like(emb)
    if not keep.any():
        return out
    lo, hi = emb[keep].min(axis=0), emb[keep].max(axis=0)
    span = float(max((hi - lo).max(), 1e-12))
    out[:, 0] = (emb[:, 0] - lo[0]) / span * size
    out[:, 1] = (hi[1] - emb[:, 1]) / span * size
    return np.where(keep[:, None], out, 0.0)


def _rings(found: Any, rows: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(vertices, segment indices, cell row of each vertex) of the exterior rings of the cells in ``rows``."""
    import shapely

    ids = keys[rows]
    shapes = found.for_cells(ids)
    if shapes.empty:
        return None
    row_of = pd.Series(rows, index=pd.Index([str(i) for i in ids], dtype=object))
    parts, owner = shapely.get_parts(shapes.to_numpy(), return_index=True)
    coords, ring = shapely.get_coordinates(shapely.get_exterior_ring(parts), return_index=True)
    same = ring[:-1] == ring[1:]  # consecutive points of one ring (its last point repeats its first)
    indices = np.column_stack([np.flatnonzero(same), np.flatnonzero(same) + 1]).astype(np.uint32)
    cell_rows = row_of.loc[[str(i) for i in shapes.index.to_numpy()[owner[ring]]]].to_numpy()
    return coords, indices, cell_rows
