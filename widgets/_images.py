"""The preview's images: each channel of the selected image as a thumbnail, a composite of up to six chosen
channels in their colours with the cells drawn on top (rings of their true size where ``area`` is known,
coloured by the selected feature or category; on a whole slide, where they are a few screen pixels across, the pixel
under each centroid in its colour), and a region to zoom into (micrometres).

Only the pyramid level the drawing needs is read (:func:`cellspec_sc.images.read_downsampled`); every channel
gets its contrast window from the shared display rule (:func:`cellspec_sc.display.robust_window`). In the
composite PNG the axes fill the figure, so PNG pixel ``(u, v)`` shows micrometre
``(x0 + (u + 0.5) * (x1 - x0) / width, y0 + (v + 0.5) * (y1 - y0) / height)`` of :attr:`ChannelView.box_um`.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import ipywidgets as W
import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.collections import EllipseCollection
from matplotlib.colors import to_rgba_array
from matplotlib.figure import Figure

from cellspec_sc.display import robust_window
from cellspec_sc.errors import InputError
from cellspec_sc.images import COMPOSITE_COLOURS, Image, composite, read_downsampled, windowed
from cellspec_sc.widgets import _figures as figures
from cellspec_sc.widgets._data import DENSITY, FEATURE, PreviewData

MAX_COMPOSITE = len(COMPOSITE_COLOURS)
THUMBNAIL_SIDE = 160
COMPOSITE_SIDE = 720
_NEUTRAL = (1.0, 1.0, 1.0, 0.9)
RING_MIN_PX = 4.0  # cells narrower than this on screen are painted as a pixel each, not drawn as rings
RINGS_AT_MOST = 50_000


@dataclass(frozen=True)
class ChannelView:
    """What the images part of the Channels panel draws for one image."""

    image_id: str
    thumbnails: tuple[tuple[str, np.ndarray], ...]  # (channel name, windowed grey plane 0..1)
    channels: tuple[str, ...]  # the composite's channels, in COMPOSITE_COLOURS order
    composite: np.ndarray  # (y, x, 3) in 0..1
    box_um: tuple[float, float, float, float]  # x0, y0, x1, y1 the composite covers
    cell_xy: np.ndarray  # (n, 2) micrometres, the cells inside the box
    cell_radius: np.ndarray  # micrometres (NaN where area is unknown: drawn as dots)
    cell_rgba: np.ndarray  # (n, 4)


def channel_view(data: PreviewData, image_id: str, image: Image, channels: Sequence[str],
                 region: tuple[float, float, float, float] | None, colour_by: str, feature: str | None
                 ) -> ChannelView:
    """The thumbnails, composite and cells of ``image`` (``region``: x0, y0, x1, y1 in micrometres)."""
    x = data.x
    row = x.images[x.images["image_id"].astype(str) == image_id].iloc[0]
    ps_x = float(row["pixel_size"])
    ps_y = ps_x if "pixel_size_y" not in x.images or pd.isna(row.get("pixel_size_y")) else float(row["pixel_size_y"])
    region_px = None if region is None else (region[0] / ps_x, region[1] / ps_y, region[2] / ps_x, region[3] / ps_y)
    small, _ = read_downsampled(image, THUMBNAIL_SIDE, region_px)
    thumbnails = tuple((name, windowed(plane)) for name, plane in zip(image.channel_names, small, strict=True))
    chosen = [image.channel(c) for c in channels]
    pixels, covered = read_downsampled(image, COMPOSITE_SIDE, region_px, channels=chosen)
    rgb = composite(pixels)
    box = (covered[0] * ps_x, covered[1] * ps_y, covered[2] * ps_x, covered[3] * ps_y)
    rows = data.rows(image_id)
    cells = x.cells.iloc[rows]
    xy = np.column_stack([cells["x"].to_numpy(np.float64), cells["y"].to_numpy(np.float64)])
    inside = (xy[:, 0] >= box[0]) & (xy[:, 0] <= box[2]) & (xy[:, 1] >= box[1]) & (xy[:, 1] <= box[3])
    area = pd.to_numeric(cells["area"], errors="coerce").to_numpy(np.float64) if "area" in cells else \
        np.full(len(cells), np.nan)
    return ChannelView(image_id=image_id, thumbnails=thumbnails, channels=tuple(image.channel_names[c] for c in chosen),
                       composite=rgb, box_um=box, cell_xy=xy[inside], cell_radius=np.sqrt(area / np.pi)[inside],
                       cell_rgba=_cell_colours(data, rows, colour_by, feature)[inside])


def _cell_colours(data: PreviewData, rows: np.ndarray, colour_by: str, feature: str | None) -> np.ndarray:
    """RGBA per cell: the selected feature on viridis over its colour window, a category's colours (the column's
    one style, as in every other view), or white."""
    if colour_by == FEATURE and feature is not None:
        values = np.asarray(data.x.measurement_frame([feature]).to_numpy()[rows, 0], dtype=np.float64)
        lo, hi = robust_window(values)
        return colormaps["viridis"](np.clip((values - lo) / (hi - lo), 0, 1))
    if colour_by not in (FEATURE, DENSITY) and colour_by in data.x.cells:
        column = data.x.cells[colour_by].iloc[rows].astype(object)
        colours = data.style(colour_by).colour_map()
        return to_rgba_array([colours.get(str(v), "#999999") for v in column])
    return np.tile(_NEUTRAL, (rows.size, 1))


@figures.plain_text
def thumbnails_png(view: ChannelView) -> bytes:
    """Each channel, greyscale in its window, side by side with its name."""
    count = len(view.thumbnails)
    columns = min(count, 6)
    lines = -(-count // columns)
    fig = Figure(figsize=(1.9 * columns, 1.9 * lines))
    for k, (name, plane) in enumerate(view.thumbnails):
        ax = fig.add_subplot(lines, columns, k + 1)
        ax.imshow(plane, cmap="gray", vmin=0, vmax=1, interpolation="nearest")
        ax.set_title(name, fontsize=8)
        ax.set_axis_off()
    fig.tight_layout()
    return figures.to_png(fig)


@figures.plain_text
def composite_png(view: ChannelView, *, cells: bool = True) -> bytes:
    """The composite with the cells on top; the axes fill the figure (see the module's docstring).

    Cells drawn narrower than :data:`RING_MIN_PX` screen pixels across, or more than :data:`RINGS_AT_MOST` of them,
    are not drawn as rings (which would blur into each other, and take matplotlib seconds for a slide): each is
    the composite pixel under its centroid, painted in its colour."""
    height, width = view.composite.shape[:2]
    scale = max(1, round(COMPOSITE_SIDE / max(height, width)))  # small images are shown larger, pixel for pixel
    x0, y0, x1, y1 = view.box_um
    shown = cells and len(view.cell_xy) > 0
    rings = shown and _as_rings(view, width * scale / (x1 - x0))
    fig = Figure(figsize=(width * scale / figures.DPI, height * scale / figures.DPI))
    ax = fig.add_axes((0, 0, 1, 1))
    pixels = _painted_cells(view) if shown and not rings else view.composite
    ax.imshow(pixels, extent=(x0, x1, y1, y0), interpolation="nearest", aspect="auto")
    if rings:
        sized = np.isfinite(view.cell_radius) & (view.cell_radius > 0)
        if sized.any():
            diameters = 2 * view.cell_radius[sized]
            ax.add_collection(EllipseCollection(diameters, diameters, np.zeros(sized.sum()), units="xy",
                                                offsets=view.cell_xy[sized], offset_transform=ax.transData,
                                                facecolors="none", edgecolors=view.cell_rgba[sized], linewidths=1.2))
        if (~sized).any():
            ax.scatter(view.cell_xy[~sized, 0], view.cell_xy[~sized, 1], s=9, c=view.cell_rgba[~sized])
    ax.set_xlim(x0, x1)
    ax.set_ylim(y1, y0)
    ax.set_axis_off()
    return figures.to_png(fig)


def _as_rings(view: ChannelView, screen_px_per_um: float) -> bool:
    """Whether the cells are few and big enough on screen to be drawn as rings (or dots where area is unknown)."""
    if len(view.cell_xy) > RINGS_AT_MOST:
        return False
    sized = view.cell_radius[np.isfinite(view.cell_radius) & (view.cell_radius > 0)]
    return not sized.size or float(np.median(2 * sized)) * screen_px_per_um >= RING_MIN_PX


def _painted_cells(view: ChannelView) -> np.ndarray:
    """The composite with the pixel under each cell's centroid in the cell's colour (a later cell wins a pixel)."""
    height, width = view.composite.shape[:2]
    x0, y0, x1, y1 = view.box_um
    u = np.clip(np.floor((view.cell_xy[:, 0] - x0) / (x1 - x0) * width), 0, width - 1).astype(np.int64)
    v = np.clip(np.floor((view.cell_xy[:, 1] - y0) / (y1 - y0) * height), 0, height - 1).astype(np.int64)
    painted = view.composite.copy()
    painted[v, u] = view.cell_rgba[:, :3]
    return painted


def legend_html(view: ChannelView) -> str:
    """The composite's channels in their colours."""
    items = "".join(f"<span style='color:{c};margin-right:1em'>&#9632; {html.escape(n)}</span>"
                    for n, c in zip(view.channels, COMPOSITE_COLOURS, strict=False))
    x0, y0, x1, y1 = view.box_um
    return f"<div>{items}<span style='color:#555'>region {x0:.0f}–{x1:.0f} × {y0:.0f}–{y1:.0f} µm</span></div>"


class ChannelImages(W.VBox):
    """The images part of the Channels tab: a channel chooser, a cells switch, thumbnails and the composite."""

    def __init__(self, data: PreviewData, images: Mapping[str, Image], channels: Sequence[str] | None = None,
                 region: tuple[float, float, float, float] | None = None):
        self.data, self.images = data, dict(images)
        self.region = _region(region)
        self._wanted = list(channels) if channels is not None else None
        self.channels = W.SelectMultiple(description="composite", rows=4, layout=W.Layout(width="auto"))
        self.show_cells = W.Checkbox(value=True, description="cells on top")
        self.legend = W.HTML()
        self.thumbnails = W.Image(format="png", layout=W.Layout(max_width="720px"))
        self.composite = W.Image(format="png", layout=W.Layout(max_width="720px"))
        self.message = W.HTML()
        super().__init__([W.HBox([self.channels, self.show_cells]), self.message, self.thumbnails, self.legend,
                          self.composite])
        self._image_id: str | None = None
        self._colouring: tuple[str, str | None] = (FEATURE, None)
        self._updating = False
        self.channels.observe(self._choose, names="value")
        self.show_cells.observe(lambda _: self._image_id and self.draw(self._image_id, *self._colouring),
                                names="value")

    def chosen(self, image_id: str) -> list[str]:
        """The composite's channels for ``image_id``: those asked for (first six), else the first three."""
        names = list(self.images[image_id].channel_names)
        wanted = [c for c in (self._wanted or names[:3]) if c in names] or names[:1]
        if len(wanted) > MAX_COMPOSITE:
            raise InputError(f"a composite shows at most {MAX_COMPOSITE} channels, not {len(wanted)}")
        return wanted

    def view(self, image_id: str, colour_by: str, feature: str | None) -> ChannelView | None:
        if image_id not in self.images:
            return None
        return channel_view(self.data, image_id, self.images[image_id], self.chosen(image_id), self.region,
                            colour_by, feature)

    def draw(self, image_id: str | None, colour_by: str, feature: str | None) -> None:
        view = self.view(image_id, colour_by, feature) if image_id is not None else None
        if view is None:
            self.message.value = f"<i>no image handed over for {html.escape(str(image_id))}</i>"
            self.thumbnails.value = self.composite.value = b""
            return
        self._colouring = (colour_by, feature)
        if image_id != self._image_id:
            self._image_id = image_id
            self._updating = True
            try:
                self.channels.options = list(self.images[image_id].channel_names)
                self.channels.value = tuple(self.chosen(image_id))
            finally:
                self._updating = False
        self.message.value = ""
        self.thumbnails.value = thumbnails_png(view)
        self.legend.value = legend_html(view)
        self.composite.value = composite_png(view, cells=self.show_cells.value)

    def _choose(self, change: dict) -> None:
        if self._updating:
            return
        self._wanted = list(change["new"])[:MAX_COMPOSITE]
        self.draw(self._image_id, *self._colouring)


def _region(region: tuple[float, float, float, float] | None) -> tuple[float, float, float, float] | None:
    if region is None:
        return None
    try:
        x0, y0, x1, y1 = (float(v) for v in region)
    except (TypeError, ValueError):
        raise InputError(f"region must be (x0, y0, x1, y1) in micrometres, not {region!r}") from None
    if not (x1 > x0 and y1 > y0):
        raise InputError(f"region (x0, y0, x1, y1) must have x1 > x0 and y1 > y0, not {region!r}")
    return x0, y0, x1, y1
