"""Choosing a feature through the dictionary's levels (kind -> marker -> compartment -> statistic), and the
overview of which markers were measured in which compartments."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

LEVELS = ("kind", "marker", "compartment", "statistic")
NONE = ""  # stands for NA in a dictionary level (a dropdown cannot hold NA)


@dataclass(frozen=True)
class FeatureChoice:
    """Options of each dictionary level given the levels above it, the resolved selection and its feature id."""

    options: dict[str, list[str]]
    selected: dict[str, str]
    feature_id: str | None


def dictionary_levels(dictionary: pd.DataFrame) -> pd.DataFrame:
    """feature_id and the four levels as plain str columns, NA as :data:`NONE`.

    >>> from cellspec_sc import example
    >>> dictionary_levels(example().dictionary).iloc[-1].tolist()
    ['other:detection_probability', 'other', '', '', 'detection_probability']
    """
    cols = {"feature_id": dictionary["feature_id"]}
    cols.update({level: dictionary[level] for level in LEVELS})
    return pd.DataFrame({k: np.asarray(v.astype(object).where(v.notna(), NONE), dtype=object)
                         for k, v in cols.items()})


def choose_feature(levels: pd.DataFrame, **wanted: str | None) -> FeatureChoice:
    """Narrow kind -> marker -> compartment -> statistic; a wanted value that is not offered falls back to the first.

    >>> from cellspec_sc import example
    >>> c = choose_feature(dictionary_levels(example().dictionary), kind="intensity", marker="FOXP3")
    >>> c.options["compartment"], c.feature_id
    (['cell', 'nucleus'], 'cell:FOXP3:mean')
    """
    unknown = set(wanted) - set(LEVELS)
    if unknown:
        raise TypeError(f"unknown level(s) {sorted(unknown)}; levels are {LEVELS}")
    rows = levels
    options: dict[str, list[str]] = {}
    selected: dict[str, str] = {}
    for level in LEVELS:
        offered = list(dict.fromkeys(rows[level].tolist()))
        options[level] = offered
        want = wanted.get(level)
        pick = want if want in offered else (offered[0] if offered else NONE)
        selected[level] = pick
        rows = rows[rows[level] == pick]
    return FeatureChoice(options, selected, str(rows["feature_id"].iloc[0]) if len(rows) else None)


def levels_of(levels: pd.DataFrame, feature_id: str) -> dict[str, str]:
    """The dictionary levels of one feature (to set the controls from a feature id)."""
    row = levels[levels["feature_id"] == feature_id]
    if not len(row):
        raise KeyError(feature_id)
    return {level: str(row[level].iloc[0]) for level in LEVELS}


def marker_compartment_overview(dictionary: pd.DataFrame) -> pd.DataFrame:
    """Which features exist: one row per marker (shape features under ``(shape)``), one column per
    compartment, each cell the statistics present, comma-separated ("" where none).

    >>> from cellspec_sc import example
    >>> marker_compartment_overview(example().dictionary).loc["FOXP3", "nucleus"]
    'mean, median'
    """
    lv = dictionary_levels(dictionary)
    lv = lv[lv["kind"].isin(("intensity", "shape"))]
    row = np.where(lv["kind"] == "shape", "(shape)", lv["marker"])
    markers = list(dict.fromkeys(row.tolist()))
    compartments = list(dict.fromkeys(lv["compartment"].tolist()))
    table = pd.DataFrame("", index=pd.Index(markers, name="marker", dtype=object),
                         columns=pd.Index(compartments, name="compartment", dtype=object), dtype=object)
    for (m, c), stats in lv.assign(row=row).groupby(["row", "compartment"], sort=False)["statistic"]:
        table.loc[m, c] = ", ".join(dict.fromkeys(stats))
    return table

