"""One number format for every table, legend and colour bar: integers in full with thousands separators,
other values to four significant digits (with separators from 1,000 on), scientific only beyond 10^15 or
below 10^-3.

>>> [format_number(v) for v in (11200, 11200.0, 2968, 11360.46, 0.66667, 2.5e-05, 3e20, float("nan"))]
['11,200', '11,200', '2,968', '11,360', '0.6667', '2.5e-05', '3e+20', 'NA']
"""

from __future__ import annotations

import math
from numbers import Integral, Real

_FULL_LIMIT = 1e15  # beyond this a double no longer holds every integer digit: scientific notation


def format_number(value: Real) -> str:
    """A number as the tables, legends and colour bars show it (NA for NaN)."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, Integral):
        return f"{int(value):,}"
    v = float(value)
    if math.isnan(v):
        return "NA"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if abs(v) >= _FULL_LIMIT:
        return f"{v:.4g}"
    if v.is_integer() or abs(v) >= 1000:
        return f"{round(v):,}"
    return f"{v:.4g}"
