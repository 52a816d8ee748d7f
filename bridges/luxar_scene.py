"""The nodes of a Luxar scene of cells: one Layers-panel group per image, shared layers, overlays.

Each image is a group (a toggle in the viewer's Layers panel) holding its
frame, its name and one points node per colour layer; a continuous colour
layer is a group of its own that carries the window as its gain, so that its
range control in the Layers panel starts from the window. Colour layers sit at
their index on the ``colour by`` dimension; the legend of each layer is shown
only at that index. Adjacency, outlines and embeddings are one group each.
Hover labels read ``<cell_id> · <image_id> · <class> · <layer> = <value>``;
right-click copies the cell id and, with a link template, opens it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from cellspec_sc.bridges.luxar_colour import NA_COLOUR, Colouring, legend_html, linear_lut, linear_rgb, stored_scalars
from cellspec_sc.bridges.luxar_input import SceneInput
from cellspec_sc.bridges.luxar_layout import (ALL_CATEGORIES, COLOUR_DIM, FRAME_COLOUR, NAME_COLOUR, HiddenDims, Layout,
                                              embedding_x0, frame_lines, name_height, node_name, text_mesh)
from cellspec_sc.io import image_outlines

SHARPNESS = 1.0  # crisp discs: luxar's default is a soft Gaussian splat
DISC_SCALE = 0.55  # luxar draws a sharp point out to about twice its radius (measured in the viewer)
LINE_COLOUR = (0.4, 0.4, 0.4)
OUTLINE_COLOUR = (0.9, 0.9, 0.9)


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
        group.add_lines("frame", pos, widths=width, colors=tuple(linear_rgb(FRAME_COLOUR).tolist()), indices=indices, line_type="indexed",
                        dim_order=order, labels=[label] * 4)
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
            parent.add_lines("contacts", pos, widths=width, colors=tuple(linear_rgb(LINE_COLOUR).tolist()), indices=indices, line_type="indexed",
                             dim_order=order, keys=self.keys[rows].tolist(),
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
                                 colors=tuple(linear_rgb(OUTLINE_COLOUR).tolist()), indices=indices, line_type="indexed", dim_order=order,
                                 keys=self.keys[cell_rows].tolist(), copy="{hover_key}", **_moved(moves),
                                 labels=[f"{self.base[i]} · {text[i]}" if text[i] else self.base[i]
                                         for i in cell_rows.tolist()])

    # -- overlays
    def add_overlays(self, title: str) -> None:
        scene = self.scene
        scene.add_text(title, position=(0.08, 0.02), font_size=0.03, anchor="top-left",
                       color="rgba(255,255,255,0.85)", name="title")
        for layer in self.layers:
            visible = {COLOUR_DIM: layer.index} if COLOUR_DIM in self.dims.categories else None
            scene.add_html(legend_html(layer.colouring), position=(0.99, 0.02), anchor="top-right", width=0.2,
                           name=node_name(f"legend_{layer.name}", "legend"), visible_range=visible)
        if self.geometry.mode == "stack":
            for k, image in enumerate(self.geometry.image_ids):
                dim = self.geometry.stack_dim
                scene.add_text(f"{dim}: {image}", position=(0.08, 0.07), font_size=0.022, anchor="top-left",
                               color="rgba(255,255,255,0.85)", name=f"image_name_{k}", visible_range={dim: k})
        # the hover text sits bottom left, clear of the legend (top right) and the title (top left)
        scene.add_text("{hover_label}", position=(0.08, 0.97), font_size=0.02, anchor="bottom-left", hover=True,
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


def category_values(values: Sequence[str]) -> list[str]:
    """The labels of a category dimension: 'all', then the categories."""
    return [ALL_CATEGORIES, *values]
