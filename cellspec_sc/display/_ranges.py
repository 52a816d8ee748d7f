"""The colour window: the value range a colour map spans, one rule for the preview, Luxar scenes and image
channels: the 1st to 99th percentile of the finite values (:data:`WINDOW_PERCENTILES`).

>>> robust_window(np.arange(101.0))
(1.0, 99.0)
"""

from __future__ import annotations

import numpy as np

WINDOW_PERCENTILES = (1.0, 99.0)  # the one default: the preview, Luxar layers and image channels


def finite(values: np.ndarray) -> np.ndarray:
    """The finite values of ``values`` (NaN and infinities dropped).

    >>> finite(np.array([1.0, np.nan, np.inf, 2.0])).tolist()
    [1.0, 2.0]
    """
    return values[np.isfinite(values)]


def robust_window(values: np.ndarray, percentiles: tuple[float, float] = WINDOW_PERCENTILES) -> tuple[float, float]:
    """The colour window of ``values``: the percentiles of the finite values; when those coincide, min..max;
    when all values are equal, widened around them (by half their magnitude, at least 0.5); (0, 1) when there
    is no finite value. Never empty.

    >>> robust_window(np.r_[np.zeros(200), 1.0]), robust_window(np.array([4.0, 4.0]))
    ((0.0, 1.0), (2.0, 6.0))
    >>> robust_window(np.array([np.nan])), robust_window(np.arange(101.0), (2, 98))
    ((0.0, 1.0), (2.0, 98.0))
    """
    kept = finite(np.asarray(values, dtype=np.float64))
    if kept.size == 0:
        return (0.0, 1.0)
    lo, hi = (float(v) for v in np.percentile(kept, percentiles))
    if not _apart(lo, hi):
        lo, hi = float(kept.min()), float(kept.max())
    if not _apart(lo, hi):  # equal (or subnormally close): widen around them
        pad = max(abs(lo) * 0.5, 0.5)
        lo, hi = lo - pad, hi + pad
    return (lo, hi)


def _apart(lo: float, hi: float) -> bool:
    return hi - lo > 1e-9 * max(1.0, abs(lo), abs(hi))
