"""Matplotlib drawings of the preview's figures, rendered to PNG bytes (object API, no pyplot state).

The data comes from :mod:`cellspec_sc.widgets.compute`; nothing here computes
statistics. Maps are drawn with one ``imshow`` of a precomputed RGBA raster,
so the cost does not depend on the number of cells.

>>> import numpy as np
>>> from cellspec_sc.widgets import compute
>>> png = histogram_png(compute.histogram({"img1": np.arange(10.0)}), title="cell:area", unit="um2")
>>> png[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
True
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from . import compute

DPI = 100
_PNG_METADATA = {"Software": None}  # no tool URL inside the exported images


def to_png(fig: Figure) -> bytes:
    """The figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata=_PNG_METADATA)
    return buf.getvalue()


def image_colours(image_ids: Sequence[str]) -> dict[str, str]:
    """A stable colour per image (tab10 order)."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    palette = colormaps["tab10"].colors
    return {image_id: to_hex(palette[i % len(palette)]) for i, image_id in enumerate(image_ids)}


def draw_histogram(ax, hist: compute.Histogram, *, title: str, unit: str = "") -> None:
    """Step outlines of each image's histogram on the shared bins."""
    colours = image_colours(list(hist.counts))
    for image_id, counts in hist.counts.items():
        ax.stairs(counts, hist.edges, color=colours[image_id], linewidth=1.4, label=image_id)
    if hist.scale == "log":
        ax.set_xscale("log")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(f"value ({unit})" if unit else "value", fontsize=9)
    ax.set_ylabel("cells", fontsize=9)
    ax.tick_params(labelsize=8)
    if 1 < len(hist.counts) <= 12:
        ax.legend(fontsize=8, frameon=False)
    excluded = sum(hist.excluded.values())
    if excluded:
        ax.text(0.99, 0.98, f"{excluded} values <= 0 not shown on log scale", transform=ax.transAxes,
                ha="right", va="top", fontsize=7, color="#555555")


def draw_space(fig: Figure, ax, grid: compute.Grid, rgba: np.ndarray, *, title: str,
               colour_range: tuple[float, float, str, str] | None = None,
               legend: Sequence[compute.LegendEntry] = ()) -> None:
    """The raster in micrometres, y downward, with a colour bar (lo, hi, cmap, label) or a legend, and a scale bar."""
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from mpl_toolkits.axes_grid1.anchored_artists import AnchoredSizeBar

    right, bottom = grid.nx * grid.bin_um, grid.ny * grid.bin_um
    ax.imshow(rgba, extent=(0.0, right, bottom, 0.0), origin="upper", interpolation="nearest", aspect="equal")
    ax.set_xlim(0.0, grid.width)
    ax.set_ylim(grid.height, 0.0)  # y downward, as in the source tool
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("x (um)", fontsize=9)
    ax.set_ylabel("y (um)", fontsize=9)
    ax.tick_params(labelsize=8)
    length = compute.nice_length(grid.width)
    ax.add_artist(AnchoredSizeBar(ax.transData, length, f"{length:g} um", "lower right", pad=0.4, color="black",
                                  frameon=True, size_vertical=grid.height / 150,
                                  fontproperties={"size": 8}))
    if colour_range is not None:
        lo, hi, cmap, label = colour_range
        bar = fig.colorbar(ScalarMappable(Normalize(lo, hi), colormaps[cmap]), ax=ax, extend="both", shrink=0.85)
        bar.set_label(label, fontsize=8)
        bar.ax.tick_params(labelsize=7)
        ax.legend(handles=[Patch(color=compute.NA_GREY, label="NA")], loc="upper right", fontsize=7,
                  framealpha=0.8)
    if legend:
        ax.legend(handles=[Patch(color=e.colour, label=f"{e.label} ({e.cells})") for e in legend],
                  loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False, borderaxespad=0.0)


def histogram_png(hist: compute.Histogram, *, title: str, unit: str = "", size: tuple[float, float] = (6.0, 3.2)) -> bytes:
    fig = Figure(figsize=size, layout="constrained")
    draw_histogram(fig.add_subplot(), hist, title=title, unit=unit)
    return to_png(fig)


def space_png(grid: compute.Grid, rgba: np.ndarray, *, title: str, size: tuple[float, float] = (6.4, 4.6),
              **kwargs) -> bytes:
    fig = Figure(figsize=size, layout="constrained")
    draw_space(fig, fig.add_subplot(), grid, rgba, title=title, **kwargs)
    return to_png(fig)
