"""Colours shared by the widgets and the Luxar bridge: palettes for categories and images, the NA greys.

Colours are ``"#rrggbb"`` strings (widgets, HTML) or RGB float triples in 0..1 (Luxar);
:func:`hex_colour` turns the second into the first.

>>> hex_colour((1.0, 0.5, 0.0))
'#ff8000'
>>> category_colour_map(["B cell", "T cell"])["T cell"]
'#ff7f0e'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

NA_GREY = "#b0b0b0"  # widgets: bins whose cells are all NA, the NA category
OTHER_GREY = "#555555"  # widgets: categories pooled as "(other)"
EMPTY = "#ffffff"  # widgets: bins without cells
NA_COLOUR = (0.45, 0.45, 0.45)  # Luxar: neutral grey for NA values and cells without a class
UNCOLOURED = (0.85, 0.85, 0.85)  # Luxar: cells layer of an object without classification
_INTEGER = re.compile(r"^[+-]?[0-9]+$")


def hex_colour(rgb: Sequence[float]) -> str:
    """``"#rrggbb"`` of an RGB triple in 0..1."""
    return "#" + "".join(f"{int(round(float(c) * 255)):02x}" for c in rgb)


def category_rgb(categories: Sequence[str], given: Mapping[str, str] | None = None) -> np.ndarray:
    """One RGB colour (float32, shape (n, 3)) per category: scanpy's colours when ``given`` covers every
    category, else tab10/tab20, else evenly spaced hues. The colour depends only on the category's position
    in the (sorted) category list.

    >>> category_rgb(["a", "b"]).shape
    (2, 3)
    >>> category_rgb(["a"], {"a": "#ff0000"}).tolist()
    [[1.0, 0.0, 0.0]]
    """
    from matplotlib import colormaps
    from matplotlib.colors import to_rgb

    n = len(categories)
    if given and all(c in given for c in categories):
        return np.array([to_rgb(given[c]) for c in categories], dtype=np.float32).reshape(n, 3)
    if n <= 10:
        base = colormaps["tab10"].colors[:n]
    elif n <= 20:
        base = colormaps["tab20"].colors[:n]
    else:
        base = colormaps["hsv"](np.linspace(0.0, 1.0, n, endpoint=False))[:, :3]
    return np.asarray(base, dtype=np.float32).reshape(n, 3)


def category_order(values: pd.Series) -> list[str]:
    """The order that fixes each category's colour when nothing is stored for the column: a categorical's own
    categories, else the distinct non-missing values in natural order (integer-like labels numerically, other
    text by code point). See :mod:`cellspec_sc.display._categories` for stored orders.

    >>> category_order(pd.Series(["b", None, "a", "b"])), category_order(pd.Series(["10", "9"]))
    (['a', 'b'], ['9', '10'])
    """
    if isinstance(values.dtype, pd.CategoricalDtype):
        return [str(c) for c in values.cat.categories]
    return natural_order(values.dropna().unique())


def natural_order(labels: Sequence[Any]) -> list[str]:
    """Distinct labels as text in natural order: numerically when every label is an integer, else by code point.

    >>> natural_order([3, 1, 20]), natural_order(["10", "2", "1"]), natural_order(["b", "a", "B"])
    (['1', '3', '20'], ['1', '2', '10'], ['B', 'a', 'b'])
    """
    texts = list(dict.fromkeys(str(v) for v in labels))
    if texts and all(_INTEGER.match(t) for t in texts):
        return sorted(texts, key=lambda t: (int(t), t))
    return sorted(texts)


def category_colour_map(order: Sequence[str]) -> dict[str, str]:
    """``"#rrggbb"`` of each category from its position in ``order`` (see :func:`category_rgb`).

    >>> category_colour_map(["B cell", "T cell"])
    {'B cell': '#1f77b4', 'T cell': '#ff7f0e'}
    """
    return {str(c): hex_colour(rgb) for c, rgb in zip(order, category_rgb(list(order)), strict=True)}


def image_colours(image_ids: Sequence[str]) -> dict[str, str]:
    """A stable ``"#rrggbb"`` per image (tab10 order).

    >>> image_colours(["img1", "img2"])
    {'img1': '#1f77b4', 'img2': '#ff7f0e'}
    """
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    palette = colormaps["tab10"].colors
    return {image_id: to_hex(palette[i % len(palette)]) for i, image_id in enumerate(image_ids)}


MIN_LUMINANCE = 0.1  # a colour's relative luminance on a black background: 3:1 contrast, WCAG's floor for graphics


def relative_luminance(rgb: np.ndarray) -> np.ndarray:
    """WCAG relative luminance of sRGB colours (0..1, last axis RGB).

    >>> float(relative_luminance(np.array([1.0, 1.0, 1.0])))
    1.0
    """
    c = np.asarray(rgb, dtype=np.float64)[..., :3]
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


def dark_end_lift(colormap: str, min_luminance: float = MIN_LUMINANCE) -> float:
    """Where a colormap must start on a black background so that its darkest colour keeps 3:1 contrast: the
    first fraction from which every colour of the map is at least ``min_luminance`` bright (0 for a map that
    never goes that dark).

    >>> round(dark_end_lift("viridis"), 2), dark_end_lift("turbo")
    (0.28, 0.0)
    """
    from matplotlib import colormaps

    fractions = np.linspace(0.0, 1.0, 256)
    dark = relative_luminance(colormaps[colormap](fractions)) < min_luminance
    if not dark.any():
        return 0.0
    last_dark = int(np.flatnonzero(dark)[-1])
    return float(fractions[min(last_dark + 1, 255)]) if last_dark < 255 else 0.0


def lifted(fractions: np.ndarray, lift: float) -> np.ndarray:
    """Fractions of a colour window mapped onto the part of a colormap from ``lift`` to its bright end.

    >>> lifted(np.array([0.0, 0.5, 1.0]), 0.5).tolist()
    [0.5, 0.75, 1.0]
    """
    return lift + (1.0 - lift) * np.clip(np.asarray(fractions, dtype=np.float64), 0.0, 1.0)
