"""Where things go in a Luxar scene: images side by side or stacked, the hidden dimensions, the camera.

Side by side, image k sits at x offset ``offsets[k]``; stacked, every image is
at the origin and its index on the categorical ``image`` dimension picks it.
Colour layers are the values of a categorical ``colour by`` dimension (legends
follow it), a ``category:`` layer adds a dimension that shows one category at a
time, and side by side a ``go to`` dimension carries one camera waypoint per
image (stacked, the ``image`` dimension carries them). y grows downward through
the camera (QuPath's view), never by mirroring the data.

>>> Layout("side", ["a", "b"], ["a", "b"], np.array([0.0, 110.0]), np.array([100.0, 50.0]),
...        np.array([80.0, 40.0]), [], 5.0).total_width
160.0
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from cellspec_sc.errors import InputError

LAYOUTS = ("side", "stack")
FLOAT32_MAX = float(np.finfo(np.float32).max)  # luxar stores positions as float32
COLOUR_DIM, IMAGE_DIM, GOTO_DIM = "colour by", "image", "go to"
ALL_IMAGES, ALL_CATEGORIES = "all images", "all"
FRAME_COLOUR = (0.55, 0.55, 0.6)
NAME_COLOUR = (0.92, 0.92, 0.92)


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
        dims += [Dimension(name, unit="", categories=labels, display=False) for name, labels in self.categories.items()]
        return Dimensions(dims)


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


def camera_facing(box: tuple[float, float, float, float], depth: float, zoom: float | None = None) -> object:
    """An orthographic camera looking at the centre of ``box`` (x0, y0, x1, y1) with y downward on screen."""
    from luxar import CameraConfig

    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return CameraConfig(position=(cx, cy, -depth), target=(cx, cy, 0.0), up=(0.0, -1.0, 0.0), zoom=zoom)


VIEW_ASPECT = 1.4  # narrowest browser window (width / height) a waypoint frames its image for
VIEW_MARGIN = 1.45  # room around a framed image, the viewer's dimension panel included


def waypoints(geometry: Layout, right: float) -> list[object]:
    """One waypoint per image (``go to`` side by side, the stacking dimension stacked) and, side by side, one
    back to all images, which is also where the viewer opens. ``right`` is the right edge of the scene
    (the embedding included).

    Luxar's orthographic camera opens with a view 4/3 of the scene's largest extent tall (measured in the
    viewer); a waypoint's zoom is relative to that.
    """
    from luxar import Waypoint

    if len(geometry.image_ids) < 2:
        return []
    whole = scene_box(geometry)
    whole = (whole[0], whole[1], max(whole[2], right), whole[3])
    base_height = 4.0 / 3.0 * max(whole[2] - whole[0], whole[3] - whole[1], 1e-9)
    depth = 2.0 * base_height
    dim = GOTO_DIM if geometry.mode == "side" else geometry.stack_dim
    out = []
    if geometry.mode == "side":
        out.append(Waypoint(when={dim: 0}, camera=camera_facing(whole, depth, _fit_zoom(whole, base_height)),
                            duration_ms=600))
    for k in range(len(geometry.image_ids)):
        box = image_box(geometry, k)
        step = k + 1 if geometry.mode == "side" else k
        out.append(Waypoint(when={dim: step}, camera=camera_facing(box, depth, _fit_zoom(box, base_height)),
                            duration_ms=600))
    return out


def _fit_zoom(box: tuple[float, float, float, float], base_height: float) -> float:
    """Orthographic zoom that fits ``box`` into a view ``base_height`` tall at zoom 1."""
    height = max(box[3] - box[1], (box[2] - box[0]) / VIEW_ASPECT, 1e-9) * VIEW_MARGIN
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
