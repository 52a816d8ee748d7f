"""The map of the Space section: cells binned into a raster (per-bin mean or majority category), its RGBA image,
category colours and legend, and the scale bar's length.

>>> g = grid_for(100.0, 50.0, 4)
>>> r = value_raster(bin_index(np.array([1.0, 99.0]), np.array([1.0, 49.0]), g), np.array([2.0, 4.0]), g)
>>> float(np.nanmax(r.mean)), int(r.cells.sum())
(4.0, 2)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.colors import to_rgba

from cellspec_sc.display import EMPTY, NA_GREY, OTHER_GREY, category_colour_map

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


def category_codes(values: pd.Series, *, max_categories: int = MAX_CATEGORIES) -> tuple[np.ndarray, list[str]]:
    """Codes 0..k-1 for the most frequent ``max_categories - 1`` labels (by count, then name), ``(other)`` for
    the rest and ``NA`` for missing; returns (codes, labels).

    >>> codes, labels = category_codes(pd.Series(["b", "a", "b", None]))
    >>> codes.tolist(), labels
    ([0, 1, 0, 2], ['b', 'a', 'NA'])
    """
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    counts = np.bincount(codes[codes >= 0], minlength=len(uniques))
    names = [str(u) for u in uniques]
    order = sorted(range(len(uniques)), key=lambda i: (-counts[i], names[i]))
    keep = order if len(order) <= max_categories - 1 else order[:max_categories - 1]
    rest = len(order) > len(keep)
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
    """Majority category per bin (ties: the smaller code, i.e. the more frequent category overall).

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


def category_colours(labels: Sequence[str], order: Sequence[str]) -> list[str]:
    """One ``"#rrggbb"`` per map label: grey for ``NA``, a dark grey for ``(other)``; the others by their
    position in ``order`` (the column's category order), the rule Luxar scenes colour by.

    >>> category_colours(["T cell", OTHER, NA_LABEL, "B cell"], order=["B cell", "T cell"])
    ['#ff7f0e', '#555555', '#b0b0b0', '#1f77b4']
    """
    by_order = category_colour_map(order)
    return [CATEGORY_FIXED.get(label) or by_order[label] for label in labels]


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
