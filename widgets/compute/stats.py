"""The Features section's numbers: histograms on shared bins (linear or log), summary tables, and the factor
that keeps matplotlib's tick arithmetic finite.

>>> summary_row(np.array([1.0, np.nan, 3.0]))["na"]
1
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

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

