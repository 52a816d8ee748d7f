"""The numbers behind the preview's figures and tables, free of any widget or plotting code.

Everything here is a plain function of arrays and frames, vectorised so that a redraw at a million cells stays
well under a second, and unit-tested on its own.

**Features**: choosing a feature through the dictionary's levels (kind -> marker -> compartment -> statistic),
and the overview of which markers were measured in which compartments.

**Statistics**: the Features section's histograms on shared bins (linear or log), summary tables, and the factor
that keeps matplotlib's tick arithmetic finite.

>>> h = histogram({"img1": np.array([1.0, 2.0, np.nan, 4.0])}, bins=3)
>>> h.counts["img1"].tolist(), h.n_na["img1"]
([1, 1, 1], 1)
>>> summary_row(np.array([1.0, np.nan, 3.0]))["na"]
1

**Space**: the map of the Space section: cells binned into a raster (per-bin mean or majority category), its
RGBA image, category colours and legend, and the scale bar's length.

>>> g = grid_for(100.0, 50.0, 4)
>>> r = value_raster(bin_index(np.array([1.0, 99.0]), np.array([1.0, 49.0]), g), np.array([2.0, 4.0]), g)
>>> float(np.nanmax(r.mean)), int(r.cells.sum())
(4.0, 2)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.colors import to_rgba

from cellspec_sc.display import EMPTY, NA_GREY, OTHER_GREY, natural_order

__all__ = [
    "CATEGORY_FIXED", "LEVELS", "MAX_CATEGORIES", "MIN_SPAN_UM", "NA_LABEL", "NONE", "OTHER", "QUANTILES",
    "CategoryRaster", "FeatureChoice", "Grid", "Histogram", "LegendEntry", "ValueRaster", "bin_index",
    "category_codes", "category_colours", "category_raster", "category_rgba", "choose_feature", "dictionary_levels",
    "display_factor", "grid_for", "histogram", "legend_entries", "levels_of", "marker_compartment_overview",
    "nice_length", "summary_row", "summary_table", "value_raster", "value_rgba",
]

# -- features ----------------------------------------------------------------------------------------------------------
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


# -- statistics --------------------------------------------------------------------------------------------------------
QUANTILES = (0.01, 0.25, 0.5, 0.75, 0.99)


@dataclass(frozen=True)
class Histogram:
    """Counts per group on shared bin ``edges``; ``excluded`` counts finite values a log scale cannot show."""

    edges: np.ndarray
    counts: dict[str, np.ndarray]
    n_na: dict[str, int]
    excluded: dict[str, int]
    scale: str


def histogram(groups: Mapping[str, np.ndarray], *, bins: int | None = None, scale: str = "linear") -> Histogram:
    """Histogram of each group's finite values on one set of bins (log: log-spaced bins over positive values).

    ``bins=None`` picks about 2 sqrt(n) bins, between 10 and 60, for the n values shown.

    >>> h = histogram({"a": np.array([1.0, 10.0, 100.0, -1.0])}, bins=2, scale="log")
    >>> h.edges.tolist(), h.counts["a"].tolist(), h.excluded["a"]
    ([1.0, 10.0, 100.0], [1, 2], 1)
    """
    if scale not in ("linear", "log"):
        raise ValueError(f"scale must be 'linear' or 'log', not {scale!r}")
    finite = {g: v[np.isfinite(v)] for g, v in groups.items()}
    shown = {g: (v[v > 0] if scale == "log" else v) for g, v in finite.items()}
    if bins is None:
        bins = int(np.clip(round(2 * math.sqrt(sum(v.size for v in shown.values()))), 10, 60))
    edges = _shared_edges(list(shown.values()), bins, scale)
    counts = {g: np.histogram(v, bins=edges)[0] for g, v in shown.items()}
    return Histogram(edges, counts, {g: int(v.size - finite[g].size) for g, v in groups.items()},
                     {g: int(finite[g].size - shown[g].size) for g in groups}, scale)


def _shared_edges(arrays: list[np.ndarray], bins: int, scale: str) -> np.ndarray:
    nonempty = [a for a in arrays if a.size]
    if not nonempty:
        return np.linspace(0.0, 1.0, bins + 1) if scale == "linear" else np.logspace(0.0, 1.0, bins + 1)
    lo = min(float(a.min()) for a in nonempty)
    hi = max(float(a.max()) for a in nonempty)
    if scale == "log":
        lo, hi = math.log10(lo), math.log10(hi)
    if hi <= lo:  # one distinct value: bins around it, on one side only where the other would overflow
        d = max(0.5, abs(lo) * 1e-3)
        lo, hi = (lo - d, hi + d) if math.isfinite(abs(lo) + d) else ((lo - d, hi) if lo > 0 else (lo, hi + d))
    t = np.linspace(0.0, 1.0, bins + 1)
    edges = lo * (1.0 - t) + hi * t  # not lo + t * (hi - lo): that overflows for +-1.8e308
    if scale == "log":
        with np.errstate(over="ignore"):
            edges = np.minimum(10.0 ** edges, np.finfo(np.float64).max)
        # powers round: make sure the extremes are inside and the edges never decrease
        edges[0] = min(edges[0], min(a.min() for a in nonempty))
        edges[-1] = max(edges[-1], max(a.max() for a in nonempty))
    return np.maximum.accumulate(edges)


def summary_row(values: np.ndarray) -> dict[str, float | int]:
    """n, NA count and fraction, min, quantiles, max and mean of one value vector (NaN is NA).

    >>> summary_row(np.array([1.0, 2.0, 3.0, np.nan]))["median"]
    2.0
    """
    finite = values[~np.isnan(values)]
    n, n_na = int(values.size), int(values.size - finite.size)
    with np.errstate(over="ignore", invalid="ignore"):  # the mean of values near 1.8e308 is inf
        return _summary_of(finite, n, n_na)


def _summary_of(finite: np.ndarray, n: int, n_na: int) -> dict[str, float | int]:
    row: dict[str, float | int] = {"n": n, "na": n_na, "na_fraction": n_na / n if n else math.nan}
    if finite.size:
        q = np.quantile(finite, QUANTILES)
        row.update({"min": float(finite.min()), **{_quantile_name(p): float(v) for p, v in zip(QUANTILES, q,
                                                                                                strict=True)},
                    "max": float(finite.max()), "mean": float(finite.mean())})
    else:
        row.update({"min": math.nan, **{_quantile_name(p): math.nan for p in QUANTILES}, "max": math.nan,
                    "mean": math.nan})
    return row


def _quantile_name(p: float) -> str:
    return "median" if p == 0.5 else f"q{round(p * 100):02d}"


def summary_table(groups: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """One :func:`summary_row` per group plus ``all`` (every group together), indexed by group.

    >>> summary_table({"a": np.array([1.0]), "b": np.array([np.nan])})["na"].tolist()
    [0, 1, 1]
    """
    rows = {g: summary_row(v) for g, v in groups.items()}
    if len(groups) != 1:
        rows["all"] = summary_row(np.concatenate(list(groups.values())) if groups else np.zeros(0))
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "image_id"
    return frame



def display_factor(*values: float, limit: float = 1e200) -> float:
    """A power of ten to divide values by so that matplotlib's tick arithmetic cannot overflow (1.0 normally).

    >>> display_factor(1.0, 5.0), display_factor(-1.7976931348623157e308, 1.0)
    (1.0, 1e+109)
    """
    biggest = max((abs(v) for v in values if math.isfinite(v)), default=0.0)
    return 1.0 if biggest <= limit else 10.0 ** math.ceil(math.log10(biggest / limit))


# -- space -------------------------------------------------------------------------------------------------------------
MAX_CATEGORIES = 20  # shown categories per map, the rest is pooled as OTHER
OTHER = "(other)"
NA_LABEL = "NA"


# -- space: binning cells into a raster ----------------------------------------------------------
@dataclass(frozen=True)
class Grid:
    """A raster over ``[0, width] x [0, height]`` micrometres, ``nx`` by ``ny`` square bins of ``bin_um``."""

    width: float
    height: float
    nx: int
    ny: int
    bin_um: float

    @property
    def size(self) -> int:
        return self.nx * self.ny


MIN_SPAN_UM = 1e-3


def grid_for(width: float, height: float, n_cells: int, *, max_bins: int = 512, min_bins: int = 48) -> Grid:
    """Square bins: about three per sqrt(cell) along the longer side, between ``min_bins`` and ``max_bins``.

    >>> grid_for(1000.0, 500.0, 1_000_000).nx, grid_for(1000.0, 500.0, 1_000_000).ny
    (512, 256)
    >>> grid_for(5e-324, 0.0, 1).width  # degenerate extents are widened to MIN_SPAN_UM
    0.001
    """
    # a degenerate extent (all cells on one line, subnormal pixel sizes) is drawn as at least 1 nm: matplotlib's
    # transforms overflow on spans near zero
    width, height = max(width, MIN_SPAN_UM), max(height, MIN_SPAN_UM)
    longer = max(width, height)
    n = int(np.clip(round(3 * math.sqrt(max(n_cells, 1))), min_bins, max_bins))
    bin_um = longer / n
    return Grid(float(width), float(height), max(1, math.ceil(width / bin_um - 1e-9)),
                max(1, math.ceil(height / bin_um - 1e-9)), bin_um)


def bin_index(x: np.ndarray, y: np.ndarray, grid: Grid) -> np.ndarray:
    """Flat raster index (row-major, row 0 at y = 0, i.e. y downward) of each cell; edges are clamped.

    >>> g = Grid(10.0, 10.0, 2, 2, 5.0)
    >>> bin_index(np.array([1.0, 6.0, 1.0, 10.0]), np.array([1.0, 1.0, 6.0, 10.0]), g).tolist()
    [0, 1, 2, 3]
    """
    col = np.clip(x / grid.bin_um, 0, grid.nx - 1).astype(np.int64)
    row = np.clip(y / grid.bin_um, 0, grid.ny - 1).astype(np.int64)
    return row * grid.nx + col


@dataclass(frozen=True)
class ValueRaster:
    """Per-bin mean of the finite values, cell counts, and bins whose cells are all NA."""

    mean: np.ndarray  # (ny, nx) float, NaN where no finite value
    cells: np.ndarray  # (ny, nx) int, cells per bin
    finite: np.ndarray  # (ny, nx) int, cells with a finite value per bin
    sum: np.ndarray  # (ny, nx) float, sum of the finite values

    @property
    def na_only(self) -> np.ndarray:
        return (self.cells > 0) & (self.finite == 0)


def value_raster(index: np.ndarray, values: np.ndarray, grid: Grid) -> ValueRaster:
    """Bin cell values into ``grid`` by their precomputed :func:`bin_index` (one pass of ``np.bincount``).

    >>> r = value_raster(np.array([0, 0, 3]), np.array([1.0, 3.0, np.nan]), Grid(2.0, 2.0, 2, 2, 1.0))
    >>> r.mean[0, 0], bool(r.na_only[1, 1])
    (np.float64(2.0), True)
    """
    ok = np.isfinite(values)
    cells = np.bincount(index, minlength=grid.size)
    finite = np.bincount(index[ok], minlength=grid.size)
    total = np.bincount(index[ok], weights=values[ok], minlength=grid.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(finite > 0, total / np.maximum(finite, 1), np.nan)
    shape = (grid.ny, grid.nx)
    return ValueRaster(mean.reshape(shape), cells.reshape(shape), finite.reshape(shape), total.reshape(shape))


@dataclass(frozen=True)
class CategoryRaster:
    """The most frequent category per bin (-1: no cell) and the legend categories in code order."""

    codes: np.ndarray  # (ny, nx) int
    categories: list[str]
    counts: np.ndarray  # cells per category (all bins)


def category_codes(values: pd.Series, order: Sequence[str] | None = None, *,
                   max_categories: int = MAX_CATEGORIES) -> tuple[np.ndarray, list[str]]:
    """Codes 0..k-1 of the labels in ``order`` (the column's category order; default: natural order), then
    ``(other)`` and ``NA`` when there are such cells; returns (codes, labels). Beyond ``max_categories - 1``
    categories the most frequent keep their own label (still in ``order``) and the rest are ``(other)``.

    >>> codes, labels = category_codes(pd.Series(["b", "a", "b", None]), ["b", "a"])
    >>> codes.tolist(), labels
    ([0, 1, 0, 2], ['b', 'a', 'NA'])
    >>> category_codes(pd.Series(["10", "9", "10"]))[1]
    ['9', '10']
    """
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    names = [str(u) for u in uniques]
    counts = np.bincount(codes[codes >= 0], minlength=len(uniques))
    position = {name: i for i, name in enumerate(order if order is not None else natural_order(names))}
    ranked = sorted(range(len(names)), key=lambda i: (position.get(names[i], len(position)), names[i]))
    if len(ranked) > max_categories - 1:
        frequent = set(sorted(ranked, key=lambda i: (-counts[i], position.get(names[i], len(position))))
                       [:max_categories - 1])
        keep = [i for i in ranked if i in frequent]
    else:
        keep = ranked
    rest = len(ranked) > len(keep)
    remap = np.full(len(uniques) + 1, -1, dtype=np.int64)  # last slot: NA
    remap[keep] = np.arange(len(keep))
    labels = [names[i] for i in keep]
    if rest:
        remap[:-1][remap[:-1] < 0] = len(labels)
        labels.append(OTHER)
    if (codes < 0).any():
        remap[-1] = len(labels)
        labels.append(NA_LABEL)
    return remap[codes], labels


def category_raster(index: np.ndarray, codes: np.ndarray, labels: Sequence[str], grid: Grid) -> CategoryRaster:
    """Majority category per bin (ties: the smaller code, i.e. the earlier category in the column order).

    >>> r = category_raster(np.array([0, 0, 0, 1]), np.array([1, 0, 1, 0]), ["a", "b"], Grid(2.0, 1.0, 2, 1, 1.0))
    >>> r.codes.tolist(), r.counts.tolist()
    ([[1, 0]], [2, 2])
    """
    n_categories = len(labels)
    joint = np.bincount(index * n_categories + codes, minlength=grid.size * n_categories)
    joint = joint.reshape(grid.size, n_categories) if n_categories else np.zeros((grid.size, 0), dtype=np.int64)
    occupied = joint.sum(axis=1) > 0
    winner = np.where(occupied, joint.argmax(axis=1) if n_categories else -1, -1)
    return CategoryRaster(winner.reshape(grid.ny, grid.nx), list(labels), np.bincount(codes, minlength=n_categories))


@dataclass(frozen=True)
class LegendEntry:
    label: str
    cells: int
    colour: str  # "#rrggbb"


CATEGORY_FIXED = {NA_LABEL: NA_GREY, OTHER: OTHER_GREY}  # colours of the pooled labels


def category_colours(labels: Sequence[str], colours: Mapping[str, str]) -> list[str]:
    """One ``"#rrggbb"`` per map label: grey for ``NA``, a dark grey for ``(other)``; the others from the
    column's style (``colours``: category -> colour, see :func:`cellspec_sc.display.category_style`), the
    colours Luxar scenes and the AnnData's ``uns`` use.

    >>> category_colours(["T cell", OTHER, NA_LABEL, "B cell"], {"B cell": "#1f77b4", "T cell": "#ff7f0e"})
    ['#ff7f0e', '#555555', '#b0b0b0', '#1f77b4']
    """
    return [CATEGORY_FIXED.get(label) or colours[label] for label in labels]


def legend_entries(labels: Sequence[str], counts: np.ndarray, colours: Sequence[str]) -> list[LegendEntry]:
    """One entry per category with its cell count and colour.

    >>> [(e.label, e.cells) for e in legend_entries(["T cell", "NA"], np.array([3, 1]), ["#1f77b4", NA_GREY])]
    [('T cell', 3), ('NA', 1)]
    """
    return [LegendEntry(label, int(n), colour) for label, n, colour in zip(labels, counts, colours, strict=True)]


def value_rgba(raster: ValueRaster, lo: float, hi: float, cmap: str = "viridis") -> np.ndarray:
    """RGBA image (uint8) of a value raster: colour map on [lo, hi], NA-only bins grey, empty bins white."""
    scaled = np.clip((raster.mean - lo) / (hi - lo), 0.0, 1.0)
    rgba = colormaps[cmap](np.nan_to_num(scaled), bytes=True)
    rgba[raster.na_only] = np.array(to_rgba(NA_GREY)) * 255
    rgba[raster.cells == 0] = np.array(to_rgba(EMPTY)) * 255
    return rgba


def category_rgba(raster: CategoryRaster, colours: Sequence[str]) -> np.ndarray:
    """RGBA image (uint8) of a category raster, empty bins white."""
    table = np.array([to_rgba(c) for c in (*colours, EMPTY)]) * 255
    return table[raster.codes].astype(np.uint8)  # code -1 picks the last entry: EMPTY



def nice_length(span: float, fraction: float = 0.2) -> float:
    """A round scale-bar length (1, 2 or 5 times a power of ten) near ``fraction * span``.

    >>> nice_length(1000.0), nice_length(37.0)
    (200.0, 5.0)
    """
    target = max(span * fraction, 1e-12)
    power = 10.0 ** math.floor(math.log10(target))
    for step in (5.0, 2.0, 1.0):
        if step * power <= target:
            return step * power
    return power
