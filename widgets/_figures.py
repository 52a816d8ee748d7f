"""Matplotlib drawings of the preview's figures, rendered to PNG bytes (object API, no pyplot state).

The data comes from :mod:`cellspec_sc.widgets._compute`; nothing here computes
statistics. Maps are drawn with one ``imshow`` of a precomputed RGBA raster,
so the cost does not depend on the number of cells.

>>> import numpy as np
>>> from cellspec_sc.widgets import _compute as compute
>>> png = histogram_png(compute.histogram({"img1": np.arange(10.0)}), title="cell:area", unit="um2")
>>> png[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
True
"""

from __future__ import annotations

import functools
import io
import re
from collections.abc import Callable, Sequence

import numpy as np
from matplotlib import colormaps, rc_context, style
from matplotlib import image as mpimg
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter
from mpl_toolkits.axes_grid1.anchored_artists import AnchoredSizeBar

from cellspec_sc.display import LABEL_LIMIT, NA_GREY, format_number, image_colours, short_name, wrapped
from cellspec_sc.widgets import _compute as compute

DPI = 100
TITLE_WIDTH, LABEL_WIDTH = 60, 40  # characters per line of a title and of a colour bar's label
_PNG_METADATA = {"Software": None}  # no tool URL inside the exported images
MAX_LABEL = LABEL_LIMIT  # characters of a name drawn (the full name stays in the data and the page's text)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def capped_label(text: object) -> str:
    r"""A name as drawn: control characters as spaces, at most :data:`MAX_LABEL` characters (cut with an
    ellipsis). matplotlib lays out every character of a label: a 100,000-character name took minutes.

    >>> capped_label("CD3e"), len(capped_label("m" * 100_000)), capped_label("a\nb")
    ('CD3e', 80, 'a b')
    """
    plain = _CONTROL.sub(" ", str(text))
    return plain if len(plain) <= MAX_LABEL else plain[:MAX_LABEL - 1] + "\u2026"


def plain_text[**P, R](draw: Callable[P, R]) -> Callable[P, R]:
    """``draw`` in matplotlib's default style with math parsing off: a name such as ``$\\foo$`` or 400 nested
    braces is drawn as the text it is, never parsed as mathtext (which raised, or recursed until Python gave up),
    and a style another library set (scanpy's, a notebook's ``plt.style.use``) does not change the pictures."""
    @functools.wraps(draw)
    def drawn(*args: P.args, **kwargs: P.kwargs) -> R:
        with style.context("default"), rc_context({"text.parse_math": False, "text.usetex": False}):
            return draw(*args, **kwargs)
    return drawn


def to_png(fig: Figure) -> bytes:
    """The figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata=_PNG_METADATA)
    return buf.getvalue()


def stacked_png(pngs: Sequence[bytes]) -> bytes:
    """PNG images one under the other on white, left-aligned (the preview's PNG with its image panels)."""
    images = [mpimg.imread(io.BytesIO(p), format="png")[..., :3] for p in pngs]
    out = np.ones((sum(i.shape[0] for i in images), max(i.shape[1] for i in images), 3), dtype=np.float32)
    top = 0
    for image in images:
        out[top:top + image.shape[0], :image.shape[1]] = image
        top += image.shape[0]
    buf = io.BytesIO()
    mpimg.imsave(buf, out, format="png", metadata=_PNG_METADATA)
    return buf.getvalue()


def draw_histogram(ax, hist: compute.Histogram, *, title: str, unit: str = "") -> None:
    """Step outlines of each image's histogram on the shared bins."""
    colours = image_colours(list(hist.counts))
    factor = 1.0 if hist.scale == "log" else compute.display_factor(hist.edges[0], hist.edges[-1])
    for image_id, counts in hist.counts.items():
        ax.stairs(counts, hist.edges / factor, color=colours[image_id], linewidth=1.4,
                  label=short_name(capped_label(image_id)))
    if hist.scale == "log":
        ax.set_xscale("log")
    ax.set_title(wrapped(capped_label(title), TITLE_WIDTH), fontsize=10)
    label = capped_label(f"value ({unit})" if unit else "value")
    ax.set_xlabel(label if factor == 1.0 else f"{label} / {factor:.0e}", fontsize=9)
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
               legend: Sequence[compute.LegendEntry] = (),
               colourbar_rect: tuple[float, float, float, float] | None = None, na: bool = False) -> None:
    """The raster in micrometres, y downward, with a colour bar (lo, hi, cmap, label; an NA swatch when ``na``:
    some bins hold only NA) or a legend, and a scale bar. Names are shortened, titles wrapped, numbers in the
    one number format (:func:`cellspec_sc.display.format_number`)."""
    right, bottom = grid.nx * grid.bin_um, grid.ny * grid.bin_um
    # true proportions, unless an absurd aspect ratio would squash the axes to nothing
    aspect = "equal" if 1 / 50 <= grid.width / grid.height <= 50 else "auto"
    ax.imshow(rgba, extent=(0.0, right, bottom, 0.0), origin="upper", interpolation="nearest", aspect=aspect)
    ax.set_xlim(0.0, grid.width)
    ax.set_ylim(grid.height, 0.0)  # y downward, as in the source tool
    ax.set_title(wrapped(capped_label(title), TITLE_WIDTH), fontsize=10)
    ax.set_xlabel("x (um)", fontsize=9)
    ax.set_ylabel("y (um)", fontsize=9)
    ax.tick_params(labelsize=8)
    length = compute.nice_length(grid.width)
    ax.add_artist(AnchoredSizeBar(ax.transData, length, f"{length:g} um", "lower right", pad=0.4, color="black",
                                  frameon=True, size_vertical=grid.height / 150,
                                  fontproperties={"size": 8}))
    if colour_range is not None:
        lo, hi, cmap, label = colour_range
        factor = compute.display_factor(lo, hi)
        label = label if factor == 1.0 else f"{label} / {factor:.0e}"
        mappable = ScalarMappable(Normalize(lo / factor, hi / factor), colormaps[cmap])
        bar = (fig.colorbar(mappable, cax=fig.add_axes(colourbar_rect), extend="both") if colourbar_rect
               else fig.colorbar(mappable, ax=ax, extend="both", shrink=0.85))
        bar.set_label(wrapped(capped_label(label), LABEL_WIDTH), fontsize=8)
        bar.ax.tick_params(labelsize=7)
        bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_number(v)))
        if na:
            ax.legend(handles=[Patch(color=NA_GREY, label="NA")], loc="upper right", fontsize=7,
                      framealpha=0.8)
    if legend:
        ax.legend(handles=[Patch(color=e.colour,
                                 label=f"{short_name(capped_label(e.label))} ({format_number(e.cells)})")
                           for e in legend],
                  loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False, borderaxespad=0.0)


# Fixed axes positions (figure fractions): cheaper than a layout engine and the same for every redraw.
HISTOGRAM_AXES = (0.11, 0.15, 0.86, 0.75)
SPACE_AXES = (0.1, 0.1, 0.6, 0.82)
SPACE_COLOURBAR = (0.75, 0.15, 0.025, 0.7)
VIEW_SIZE = (12.4, 4.8)
VIEW_AXES = ((0.055, 0.12, 0.4, 0.78), (0.52, 0.1, 0.3, 0.82), (0.845, 0.15, 0.012, 0.7))


@plain_text
def histogram_png(hist: compute.Histogram, *, title: str, unit: str = "",
                  size: tuple[float, float] = (6.0, 3.2)) -> bytes:
    fig = Figure(figsize=size)
    draw_histogram(fig.add_axes(HISTOGRAM_AXES), hist, title=title, unit=unit)
    return to_png(fig)


@plain_text
def space_png(grid: compute.Grid, rgba: np.ndarray, *, title: str, size: tuple[float, float] = (6.4, 4.6),
              **kwargs) -> bytes:
    fig = Figure(figsize=size)
    draw_space(fig, fig.add_axes(SPACE_AXES), grid, rgba, title=title, colourbar_rect=SPACE_COLOURBAR, **kwargs)
    return to_png(fig)


@plain_text
def view_png(hist: compute.Histogram | None, space: dict | None, *, title: str, unit: str = "") -> bytes:
    """Histogram left, map right (``space``: the keyword arguments of :func:`draw_space` without fig/ax)."""
    fig = Figure(figsize=VIEW_SIZE)
    left, right, bar = VIEW_AXES
    if hist is not None:
        draw_histogram(fig.add_axes(left), hist, title=title, unit=unit)
    if space is not None:
        draw_space(fig, fig.add_axes(right), colourbar_rect=bar, **space)
    return to_png(fig)
