"""How a Luxar scene colours cells and its own lines, and the legend that says so: the encoding luxar's viewer
needs. Category palettes, the NA greys and the default window come from :mod:`cellspec_sc.display` (the
widgets take their palettes from it too, so a class has one colour everywhere).

A continuous layer (feature, marker) maps its window [lo, hi] onto a matplotlib
colormap: values are clipped to the window and stored as scalars, the window
is the ``intensity``/``offset`` gain of the layer node that owns them (the
node the viewer's Layers panel controls, so its range control starts from the
window), and the colormap is written as a custom look-up table. The table holds
the colormap's colours *linearised*: luxar's viewer treats stored colours and
colormaps as linear light and encodes the frame as sRGB, so plain sRGB colours
render washed out (viridis' dark purple as magenta, tab10's red as salmon).
Category colours are linearised the same way (:func:`linear_rgb`); ``rgb``
holds the sRGB colours a legend shows.

>>> colouring = feature_colouring(np.array([0.0, 5.0, np.nan, 10.0]), "CD3e", window=(0.0, 10.0))
>>> colouring.window, colouring.n_na
((0.0, 10.0), 1)
>>> colouring.value_text[2]
'CD3e = NA'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

import numpy as np

from cellspec_sc.display import (
    LABEL_LIMIT,
    NA_COLOUR,
    UNCOLOURED,
    WINDOW_PERCENTILES,
    CategoryStyle,
    dark_end_lift,
    format_number,
    hex_colour,
    lifted,
    robust_window,
    short_name,
)
from cellspec_sc.errors import InputError

FLOAT32_MAX = float(np.finfo(np.float32).max)  # luxar stores positions and scalars as float32
MAX_INTENSITY, MAX_OFFSET = 100.0, 10.0  # luxar's limits on a node's intensity and |offset|
LEGEND_ROWS = 24  # categories listed in a legend before "... n more"
# the scene's own lines and glyphs (sRGB, written linearised): image frames and names, contacts, outlines
FRAME_COLOUR, NAME_COLOUR = (0.55, 0.55, 0.6), (0.92, 0.92, 0.92)
LINE_COLOUR, OUTLINE_COLOUR = (0.4, 0.4, 0.4), (0.9, 0.9, 0.9)


@dataclass
class Colouring:
    """One colour layer: RGB per cell (categories) or values through a colormap (features, markers)."""

    title: str  # what the legend and the hover text call the layer
    value_text: list[str]  # per cell: "<title> = <value>" (the hover line)
    rgb: np.ndarray | None = None  # (n, 3) float32 sRGB, categories (written linearised)
    values: np.ndarray | None = None  # (n,) float64, NaN = NA, continuous layers
    colormap: str | None = None
    window: tuple[float, float] | None = None
    window_note: str = ""  # how the window was chosen
    unit: str = ""  # the unit of continuous values (the dictionary's), shown by the colour bar
    categories: list[str] = field(default_factory=list)
    codes: np.ndarray | None = None  # category code per cell, -1 = NA
    palette: np.ndarray | None = None  # (k, 3) colour of each category
    class_column: str | None = None  # the cells column a category layer shows

    @property
    def continuous(self) -> bool:
        return self.values is not None

    @property
    def n_na(self) -> int:
        if self.continuous:
            return int(np.isnan(self.values).sum())
        return int((self.codes < 0).sum()) if self.codes is not None else 0


def linear_rgb(srgb: np.ndarray | Sequence[float]) -> np.ndarray:
    """sRGB colours (0-1) in linear light, float32: what luxar's viewer must be given to show ``srgb`` (it treats
    stored colours as linear and encodes the frame as sRGB).

    >>> [round(float(c), 4) for c in linear_rgb([1.0, 0.5, 0.0])]
    [1.0, 0.214, 0.0]
    """
    c = np.asarray(srgb, dtype=np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4).astype(np.float32)


def linear_lut(colormap: str) -> np.ndarray:
    """(256, 3) uint8 look-up table of a matplotlib colormap in linear light, as luxar's viewer needs it.

    >>> linear_lut("gray")[[0, 255]].tolist()  # the dark end lifted off black (see colormap_rgb)
    [[26, 26, 26], [255, 255, 255]]
    """
    from matplotlib import colormaps

    if colormap not in colormaps:
        raise InputError(f"unknown colormap {colormap!r}; use a matplotlib name such as viridis, magma or cividis")
    return np.round(linear_rgb(colormap_rgb(colormap, np.linspace(0.0, 1.0, 256))) * 255).astype(np.uint8)


def colormap_rgb(colormap: str, fractions: np.ndarray) -> np.ndarray:
    """sRGB colours (0-1) of a colormap at fractions of the colour window, as the scene, its legend and a test
    show them: the colormap from where its dark end is lifted clear of the black background
    (:func:`cellspec_sc.display.dark_end_lift`) to its bright end.

    >>> [round(float(v), 3) for v in colormap_rgb("gray", np.array([0.0]))[0]]
    [0.353, 0.353, 0.353]
    """
    from matplotlib import colormaps

    shown = lifted(np.asarray(fractions, dtype=np.float64), dark_end_lift(colormap))
    return np.asarray(colormaps[colormap](shown))[..., :3]


def check_window(window: Sequence[float]) -> tuple[float, float]:
    """A user's ``window=(lo, hi)``: two finite numbers with lo < hi."""
    try:
        lo, hi = (float(v) for v in window)
    except (TypeError, ValueError):
        raise InputError(f"window must be two numbers (lo, hi), not {window!r}") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise InputError(f"window must be finite with lo < hi, not ({lo!r}, {hi!r})")
    return (lo, hi)


def stored_scalars(values: np.ndarray, window: tuple[float, float]) -> tuple[np.ndarray, float, float]:
    """(scalars, intensity, offset) to write for values shown through ``window``.

    The values are clipped to the window; the gain maps the window onto the
    colormap. When luxar's limits on the gain (intensity <= 100, |offset| <= 10)
    cannot express the window in the values' own units, the scalars are stored
    in window units shifted to [1, 2] (the hover text keeps the measured value).

    >>> stored_scalars(np.array([0.0, 5.0, 20.0]), (0.0, 10.0))
    (array([ 0.,  5., 10.], dtype=float32), 0.1, -0.0)
    >>> stored_scalars(np.array([1000.0, 1001.0]), (1000.0, 1001.0))[0].tolist()
    [1.0, 2.0]
    """
    lo, hi = window
    span = hi - lo
    clipped = np.clip(values, lo, hi)
    intensity, offset = 1.0 / span, -lo / span
    if intensity <= MAX_INTENSITY and abs(offset) <= MAX_OFFSET and (intensity, offset) != (1.0, 0.0):
        return clipped.astype(np.float32), intensity, offset
    return (1.0 + (clipped - lo) / span).astype(np.float32), 1.0, -1.0


# -- colourings ------------------------------------------------------------------------------------

def category_colouring(column: str, style: CategoryStyle, codes: np.ndarray) -> Colouring:
    """Colours of a categorical column in its style (:mod:`cellspec_sc.display`); code -1 = NA, grey."""
    categories = list(style.categories)
    colours = style.rgb()
    rgb = np.vstack([colours, np.asarray([NA_COLOUR], dtype=np.float32)])[codes]
    text = np.asarray([*categories, "NA"], dtype=object)[codes]
    return Colouring(title=column, value_text=[f"{column}: {t}" for t in text.tolist()], rgb=rgb.astype(np.float32),
                     categories=categories, codes=np.asarray(codes), palette=colours, class_column=column)


def feature_colouring(values: np.ndarray, title: str, *, colormap: str = "viridis",
                      window: tuple[float, float] | None = None,
                      percentiles: tuple[float, float] = WINDOW_PERCENTILES, unit: str = "") -> Colouring:
    """A continuous layer: the window is ``window`` when given, else the percentiles of the values."""
    linear_lut(colormap)  # refuses an unknown colormap before anything is written
    # luxar stores scalars as float32: larger magnitudes are drawn at the float32 limit (hover keeps the value)
    shown = np.clip(values, -FLOAT32_MAX, FLOAT32_MAX)
    if window is None:
        window = robust_window(shown, percentiles)
        note = f"percentiles {percentiles[0]:g}-{percentiles[1]:g}"
    else:
        window, note = check_window(window), "fixed"
    text = [f"{title} = {v:.6g}" if v == v else f"{title} = NA" for v in values.tolist()]
    return Colouring(title=title, value_text=text, values=shown, colormap=colormap, window=window, window_note=note,
                     unit=unit)


def plain_colouring(n: int) -> Colouring:
    return Colouring(title="cells", value_text=[""] * n, rgb=np.tile(np.asarray(UNCOLOURED, dtype=np.float32), (n, 1)))


# -- legends ---------------------------------------------------------------------------------------

def _swatch(rgb: Sequence[float]) -> str:
    return (f'<span style="display:inline-block;width:10px;height:10px;margin-right:5px;'
            f'background:{hex_colour(rgb)}"></span>')


def legend_html(colouring: Colouring) -> str:
    """The legend of one colour layer: a colour bar with tick values, or swatches with counts."""
    body = _colour_bar(colouring) if colouring.continuous else _swatches(colouring)
    if colouring.n_na:
        body += f"<div>{_swatch(NA_COLOUR)}NA ({format_number(colouring.n_na)})</div>"
    return (f'<div style="background:rgba(0,0,0,0.6);padding:6px 8px;font-size:12px;color:#eee">'
            f"<b>{drawn_name(colouring.title)}</b>{body}</div>")


def drawn_name(text: str) -> str:
    """``text`` as HTML, at most :data:`~cellspec_sc.display.LABEL_LIMIT` characters shown (shortened in the
    middle) with the whole text as its tooltip.

    >>> drawn_name("CD3e")
    'CD3e'
    >>> shown = drawn_name("m" * 100_000)
    >>> len(shown) < 100_200 and shown.count("…") == 1 and shown.startswith('<span title="mmm')
    True
    """
    text = str(text)
    if len(text) <= LABEL_LIMIT:
        return escape(text)
    return f'<span title="{escape(text, quote=True)}">{escape(short_name(text, LABEL_LIMIT))}</span>'


def _colour_bar(colouring: Colouring) -> str:
    lo, hi = colouring.window
    stops = ", ".join(hex_colour(c) for c in colormap_rgb(colouring.colormap, np.linspace(0.0, 1.0, 17)))
    ticks = "".join(f'<td style="text-align:{align}">{format_number(v)}</td>'
                    for v, align in zip((lo, (lo + hi) / 2, hi), ("left", "center", "right"), strict=True))
    unit = f"{drawn_name(colouring.unit)}, " if colouring.unit else ""
    return (f'<div class="colour-bar" style="height:12px;margin:4px 0 2px;background:linear-gradient(to right, '
            f'{stops})"></div><table style="width:100%;border-collapse:collapse;font-size:11px"><tr>{ticks}'
            f"</tr></table><div style=\"font-size:10px;color:#bbb\">{unit}{escape(colouring.colormap)}, window "
            f"{escape(colouring.window_note)}</div>")


def _swatches(colouring: Colouring) -> str:
    """One swatch per category with cells, in the category order (categories without cells left out)."""
    if colouring.codes is None:
        return ""
    counts = np.bincount(colouring.codes[colouring.codes >= 0], minlength=len(colouring.categories))
    shown = np.flatnonzero(counts)
    rows = [f"<div>{_swatch(colouring.palette[i])}{drawn_name(colouring.categories[i])} "
            f"({format_number(int(counts[i]))})</div>" for i in shown[:LEGEND_ROWS]]
    if shown.size > LEGEND_ROWS:
        rows.append(f"<div>... {shown.size - LEGEND_ROWS} more</div>")
    return "".join(rows)
