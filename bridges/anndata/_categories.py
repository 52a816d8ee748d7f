"""Category order and colours between a cellspec and an AnnData: ``obs`` categoricals in the column's order with
scanpy's ``uns["<key>_colors"]`` on the way out, and on the way back whatever scanpy (or the user) set, stored
in provenance by :mod:`cellspec_sc.display` (the one home every view reads).

>>> import cellspec_sc as cs
>>> x = cs.example()
>>> obs = pd.DataFrame({"leiden": pd.Categorical(["10", "2", "2"], categories=["2", "10"])})
>>> captured = captured_styles(obs, {"leiden_colors": ["#ff0000", "#0000ff"]}, {"leiden": "leiden"}, {})
>>> captured["categories"]
{'leiden': {'order': ['2', '10'], 'colours': ['#ff0000', '#0000ff']}}
>>> ordered, colours = scverse_categorical(pd.Series(["10", "2", "2"], dtype="string"), "leiden", captured)
>>> list(ordered.cat.categories), colours
(['2', '10'], ['#ff0000', '#0000ff'])
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import pandas as pd

from cellspec_sc.display import CategoryStyle, category_style, present_labels, stored_style, style_record, with_styles

COLOURS_SUFFIX = "_colors"  # scanpy's uns key of a categorical obs column's colours: "<column>_colors"


def colours_key(column: Any) -> str:
    """scanpy's ``uns`` key of a column's colours.

    >>> colours_key("leiden")
    'leiden_colors'
    """
    return f"{column}{COLOURS_SUFFIX}"


def rename_colour_keys(uns: Any, renamed: Mapping[str, str]) -> None:
    """Move ``uns["<old>_colors"]`` to ``uns["<new>_colors"]`` for obs columns renamed ``{new: old}``, in place.

    >>> uns = {"my score_colors": ["#ff0000"]}
    >>> rename_colour_keys(uns, {"my_score": "my score"}); uns
    {'my_score_colors': ['#ff0000']}
    """
    for new, old in renamed.items():
        if colours_key(old) in uns:
            uns[colours_key(new)] = uns.pop(colours_key(old))


def scverse_categorical(column: pd.Series, name: str, provenance: Any,
                        categorical: pd.Categorical | None = None) -> tuple[pd.Series, list[str]]:
    """A cells column as an ``obs`` categorical in its style's order (categories without cells left out) and
    the colour of each category, for ``uns["<name>_colors"]``.

    ``categorical``: the column already encoded (any category order), to spare encoding it again.
    """
    style = category_style(column, stored_style(provenance, name))
    values = pd.Series(categorical if categorical is not None else pd.Categorical(column.astype(object)),
                       index=column.index, name=column.name)
    present = set(present_labels(values))
    order = [c for c in style.categories if c in present]
    if [str(c) for c in values.cat.categories] != order:
        values = values.cat.rename_categories([str(c) for c in values.cat.categories]).cat.set_categories(order)
    by_category = style.colour_map()
    return values, [by_category[c] for c in order]


def captured_styles(obs: pd.DataFrame, uns: Mapping[str, Any], names: Mapping[Any, str], provenance: Any, *,
                    stored: Collection[Any] = ()) -> dict[str, Any]:
    """``provenance`` with the style of every categorical ``obs`` column carried into cells (``names``: obs
    column -> cells column) as the AnnData now has it: its category order and ``uns["<key>_colors"]``.

    ``stored``: obs columns that were cells columns already. ``to_anndata`` gives each categorical it makes
    its colours, so one of them without colours is a text column anndata made categorical when it wrote the
    file (in an order of its own): its order is not the user's and is not captured.

    A column whose categories and colours are those the stored style already gives (for the categories it
    holds) keeps its stored entry, so a round trip leaves provenance as it was.
    """
    records: dict[str, dict[str, list[str]] | None] = {}
    for obs_name, cells_name in names.items():
        series = obs[obs_name]
        if not isinstance(series.dtype, pd.CategoricalDtype):
            continue
        colours = _colour_list(uns.get(colours_key(obs_name)))
        if colours is None and (obs_name in stored or _sorted_by_pandas(series)):
            continue  # anndata's own categorical of a text column (written to h5ad/zarr): no order of the user's
        given = category_style(series, colours=colours)
        kept = stored_style(provenance, cells_name)
        if kept is not None and _same_where_present(given, category_style(series.astype(object), kept), series):
            continue
        text = series.astype(object).where(series.notna(), None).map(lambda v: v if v is None else str(v))
        records[cells_name] = style_record(given, text)
    return with_styles(provenance, records) if records else dict(provenance)


def _sorted_by_pandas(series: pd.Series) -> bool:
    """Whether a categorical's categories are in the order pandas sorts them (as ``pd.Categorical`` of the
    values, and anndata when it stores a text column, make them)."""
    categories = series.cat.categories
    return categories.equals(categories.sort_values())


def _same_where_present(a: CategoryStyle, b: CategoryStyle, values: pd.Series) -> bool:
    present = set(present_labels(values))
    return [(c, k) for c, k in zip(a.categories, a.colours, strict=True) if c in present] == \
        [(c, k) for c, k in zip(b.categories, b.colours, strict=True) if c in present]


def _colour_list(value: Any) -> list[str] | None:
    """scanpy's colours (a list or an array of text), or None for anything else."""
    if value is None or isinstance(value, (str, bytes, Mapping)):
        return None
    try:
        colours = [str(v) for v in list(value)]
    except TypeError:
        return None
    return colours
