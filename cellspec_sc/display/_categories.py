"""The one home of a category column's order and colours, read by every view (the preview, Luxar scenes, the
AnnData and SpatialData tables).

A column's style is its categories in order, each with a ``"#rrggbb"`` colour. The order is the one stored
for the column, else a pandas categorical's own order, else the distinct values in their natural order
(integer-like labels such as leiden's numerically, other text by code point); categories the stored order
does not name follow in natural order. The colours are the stored (or given, e.g. scanpy's
``uns["<key>_colors"]``) ones, else the default palette by position in the order (:func:`category_rgb`).

Only what differs from that default is stored: ``provenance["categories"][column]`` holds ``"order"`` and,
when they are not the default, ``"colours"`` (the spec's provenance has "at least" its listed fields, so a
cellspec 1.0 reader keeps this one and ignores it).

>>> style = category_style(pd.Series(["2", "10", None, "2"]))
>>> style.categories, style.colours
(('2', '10'), ('#1f77b4', '#ff7f0e'))
>>> style_record(style, pd.Series(["2", "10"])) is None
True
>>> leiden = pd.Series(pd.Categorical(["2", "10"], categories=["2", "10"]))
>>> recoloured = category_style(leiden, colours=["#ff0000", "#00ff00"])  # scanpy's uns["leiden_colors"]
>>> style_record(recoloured, pd.Series(["2", "10"]))
{'order': ['2', '10'], 'colours': ['#ff0000', '#00ff00']}
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cellspec_sc.display._colors import category_rgb, hex_colour, natural_order

STYLE_FIELD = "categories"  # the provenance field holding stored styles, by cells column
_HEX = re.compile(r"^#[0-9a-fA-F]{6}$")


def present_labels(values: pd.Series) -> list[str]:
    """The distinct non-missing values of a column as text (first-seen order).

    >>> present_labels(pd.Series(pd.Categorical(["b", None, "a", "b"], categories=["a", "b", "c"])))
    ['b', 'a']
    >>> present_labels(pd.Series(["2", None, "10", "2"], dtype="string"))
    ['2', '10']
    """
    if isinstance(values.dtype, pd.CategoricalDtype):
        # the categories in the order their codes first appear: no object array of every value
        codes = values.cat.codes.to_numpy()
        return [str(c) for c in values.cat.categories[pd.unique(codes[codes >= 0])]]
    if isinstance(values.dtype, pd.StringDtype):
        return [str(v) for v in pd.unique(values.dropna())]
    return [str(v) for v in pd.unique(values.dropna().astype(object))]


@dataclass(frozen=True)
class CategoryStyle:
    """Categories in order and the ``"#rrggbb"`` colour of each."""

    categories: tuple[str, ...]
    colours: tuple[str, ...]

    def colour_map(self) -> dict[str, str]:
        """``{category: "#rrggbb"}``."""
        return dict(zip(self.categories, self.colours, strict=True))

    def rgb(self) -> np.ndarray:
        """(n, 3) float32 sRGB in 0..1, one row per category."""
        from matplotlib.colors import to_rgb

        return np.array([to_rgb(c) for c in self.colours], dtype=np.float32).reshape(len(self.colours), 3)

    def codes(self, values: pd.Series) -> np.ndarray:
        """The position of every value in :attr:`categories` (-1 for NA).

        >>> CategoryStyle(("a", "b"), ("#000000", "#ffffff")).codes(pd.Series(["b", None, "a"])).tolist()
        [1, -1, 0]
        """
        text = values.astype(object).where(values.notna(), None).map(lambda v: v if v is None else str(v))
        return pd.Index(list(self.categories), dtype=object).get_indexer(text.to_numpy(dtype=object)).astype(np.int64)


def default_colours(order: Sequence[str]) -> list[str]:
    """The default palette by position in ``order`` (see :func:`category_rgb`)."""
    return [hex_colour(rgb) for rgb in category_rgb(list(order))]


def category_style(values: pd.Series, stored: Mapping[str, Any] | None = None, *,
                   colours: Sequence[str] | None = None) -> CategoryStyle:
    """The style of a category column (see the module doc).

    Parameters
    ----------
    values
        The column (text, categorical or logical).
    stored
        The column's stored entry (``{"order": [...], "colours": [...]}``, either optional; see
        :func:`stored_style`), which wins over the column's own categorical order.
    colours
        Colours of the column's own categories, in their order (scanpy's ``uns["<key>_colors"]``); used
        when there is one per category.

    Examples
    --------
    >>> category_style(pd.Series(pd.Categorical(["x", "y"], categories=["y", "x"]))).categories
    ('y', 'x')
    >>> category_style(pd.Series(["a", "c"]), {"order": ["c", "b"], "colours": ["#000000", "#111111"]}).colour_map()
    {'c': '#000000', 'b': '#111111', 'a': '#2ca02c'}
    """
    own = [str(c) for c in values.cat.categories] if isinstance(values.dtype, pd.CategoricalDtype) else None
    given: dict[str, str] = {}
    if own is not None and colours is not None and len(colours) == len(own) and all(_is_colour(c) for c in colours):
        given = {c: _hex(h) for c, h in zip(own, colours, strict=True)}
    base = own if own is not None else []
    if stored:
        order = [str(c) for c in stored.get("order") or []] or base
        stored_colours = stored.get("colours") or []
        if len(stored_colours) == len(order):
            given = {**{c: _hex(h) for c, h in zip(order, stored_colours, strict=True)}, **given}
    else:
        order = base
    order = list(dict.fromkeys(order))
    seen = set(order)
    order += natural_order([v for v in present_labels(values) if v not in seen])
    defaults = default_colours(order)
    return CategoryStyle(tuple(order), tuple(given.get(c, d) for c, d in zip(order, defaults, strict=True)))


def style_record(style: CategoryStyle, values: pd.Series) -> dict[str, list[str]] | None:
    """What to store of ``style`` for a column holding ``values``: its order when it is not the values' natural
    order, its colours when they are not the default palette of that order; None when both are the defaults."""
    recoloured = list(style.colours) != default_colours(style.categories)
    if not recoloured and list(style.categories) == natural_order(present_labels(values)):
        return None
    # the order goes with the colours: they stay aligned in a subset that lacks some categories
    return {"order": list(style.categories), **({"colours": list(style.colours)} if recoloured else {})}


def stored_style(provenance: Any, column: str) -> dict[str, list[str]] | None:
    """The stored entry of ``column`` in a provenance record; None when there is none (or it is not of the
    shape :func:`style_record` writes: an entry edited by hand into something else is ignored).

    >>> stored_style({"categories": {"leiden": {"order": ["1", "0"]}}}, "leiden")
    {'order': ['1', '0']}
    """
    entries = provenance.get(STYLE_FIELD) if isinstance(provenance, Mapping) else None
    entry = entries.get(column) if isinstance(entries, Mapping) else None
    if not isinstance(entry, Mapping):
        return None
    out: dict[str, list[str]] = {}
    for key in ("order", "colours"):
        value = entry.get(key)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            out[key] = list(value)
    if "colours" in out and not all(_is_colour(c) for c in out["colours"]):
        del out["colours"]
    return out or None


def with_styles(provenance: Mapping[str, Any], records: Mapping[str, dict[str, list[str]] | None]) -> dict[str, Any]:
    """A copy of ``provenance`` with the stored entries of ``records``' columns replaced (None removes one); the
    field is left out when no entry remains.

    >>> with_styles({"history": []}, {"leiden": {"order": ["1", "0"]}, "kind": None})
    {'history': [], 'categories': {'leiden': {'order': ['1', '0']}}}
    """
    out = copy.deepcopy(dict(provenance))
    entries = dict(out.get(STYLE_FIELD) or {}) if isinstance(out.get(STYLE_FIELD), Mapping) else {}
    for column, record in records.items():
        if record is None:
            entries.pop(column, None)
        else:
            entries[column] = record
    if entries:
        out[STYLE_FIELD] = entries
    else:
        out.pop(STYLE_FIELD, None)
    return out


def _is_colour(value: Any) -> bool:
    from matplotlib.colors import is_color_like

    return isinstance(value, str) and is_color_like(value)


def _hex(colour: str) -> str:
    """``"#rrggbb"`` (lower case) of any matplotlib colour text (scanpy stores ``"#rrggbb"``, sometimes with alpha)."""
    if _HEX.match(colour):
        return colour.lower()
    from matplotlib.colors import to_rgb

    return hex_colour(to_rgb(colour))
