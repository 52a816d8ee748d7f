"""Robust display ranges: the value window a colour map spans, from percentiles of the finite values.

The widgets use :func:`robust_range` (2nd to 98th percentile, falling back to min..max); the Luxar bridge
uses :func:`robust_window` (1st to 99th percentile by default, widened around a single value).
Both ignore NaN and infinities and never return an empty window.

>>> robust_range(np.arange(101.0)), robust_window(np.arange(101.0))
((2.0, 98.0), (1.0, 99.0))
"""

from __future__ import annotations

import numpy as np


def finite(values: np.ndarray) -> np.ndarray:
    """The finite values of ``values`` (NaN and infinities dropped).

    >>> finite(np.array([1.0, np.nan, np.inf, 2.0])).tolist()
    [1.0, 2.0]
    """
    return values[np.isfinite(values)]


def robust_range(values: np.ndarray, quantiles: tuple[float, float] = (0.02, 0.98)) -> tuple[float, float]:
    """Colour range from the 2nd to the 98th percentile of the finite values; when those coincide, min..max;
    when all values are equal, that value +-0.5; (0, 1) when there is no finite value.

    >>> robust_range(np.array([3.0, 3.0])), robust_range(np.array([np.nan]))
    ((2.5, 3.5), (0.0, 1.0))
    """
    kept = finite(values)
    if not kept.size:
        return 0.0, 1.0
    lo, hi = (float(v) for v in np.quantile(kept, quantiles))
    if hi <= lo:
        lo, hi = float(kept.min()), float(kept.max())
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def robust_window(values: np.ndarray, percentiles: tuple[float, float] = (1.0, 99.0)) -> tuple[float, float]:
    """Display window from percentiles of the finite values, widened around them when they coincide
    (by half their magnitude, at least 0.5); (0, 1) when there is no finite value.

    >>> robust_window(np.arange(101.0), (1, 99)), robust_window(np.array([4.0, 4.0]))
    ((1.0, 99.0), (2.0, 6.0))
    """
    kept = finite(values)
    if kept.size == 0:
        return (0.0, 1.0)
    lo, hi = (float(v) for v in np.percentile(kept, percentiles))
    if not hi - lo > 1e-9 * max(1.0, abs(lo), abs(hi)):  # equal (or subnormally close): widen around them
        pad = max(abs(lo) * 0.5, 0.5)
        lo, hi = lo - pad, hi + pad
    return (lo, hi)
