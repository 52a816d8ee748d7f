"""What the reader tests share: the folder of test data, numbers spelt as the tools spell them, the marker names
and measured values of generated exports, and a QuPath export of two images written row by row.

>>> number_text(float("nan")), number_text(float("-inf"), inf="inf"), number_text(0.1)
('NaN', '-inf', '0.1')
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

DATA = Path(__file__).parent / "data"

MARKER_ALPHABET = "ABCDEFGHKLMPQRSTXYZabcdefgkpqrxyz0123456789-+"
SPECIAL_VALUES = [math.nan, 0.0, -0.0, 5e-324, 1.7976931348623157e308]

export_markers = st.text(alphabet=MARKER_ALPHABET, min_size=1, max_size=6)


def measured_values(*, infinities: bool) -> st.SearchStrategy[float]:
    """Doubles a tool writes into a measurement column: any finite one, NaN, -0.0, subnormals, the largest
    double, and (``infinities``) both infinities."""
    special = SPECIAL_VALUES + ([math.inf, -math.inf] if infinities else [])
    return st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=64), st.sampled_from(special))


def number_text(v: float, *, nan: str = "NaN", inf: str = "Infinity") -> str:
    """``v`` as the tool writes it: Java's ``NaN``/``Infinity`` (QuPath, by default) or Python's spelling
    (``nan=\"nan\", inf=\"inf\"``); finite values as ``repr``, which reads back to the same double."""
    if math.isnan(v):
        return nan
    if math.isinf(v):
        return inf if v > 0 else f"-{inf}"
    return repr(v)


QUPATH_HEAD = ["Image", "Object ID", "Object type", "Centroid X µm", "Centroid Y µm", "Centroid X px", "Centroid Y px",
               "Cell: CD3: Mean", "Nucleus: Area µm^2"]


def qupath_rows(n: int, rng: np.random.Generator) -> list[list[str]]:
    """Cells of two images, an annotation (text in a number column) every 17 rows, NaN and empty values."""
    rows = []
    for i in range(n):
        image = "a.tif" if i < n // 2 else "b.tif"
        if i % 17 == 5:
            rows.append([image, f"ann{i}", "Annotation", "n/a", "n/a", "", "", "big", ""])
            continue
        px, py = (float(v) for v in rng.uniform(0, 1000, 2).round(3))
        value = ["NaN", "", "-0.0", "5e-324", repr(float(rng.lognormal()))][i % 5]
        rows.append([image, f"c{i:05d}", "Cell", repr(px * 0.5), repr(py * 0.5), repr(px), repr(py), value,
                     repr(float(rng.uniform(10, 50)))])
    return rows


def write_qupath_rows(path, rows, newline="\n", encoding="utf-8"):
    """``rows`` under :data:`QUPATH_HEAD`, tab-separated, as a file at ``path``."""
    path.write_bytes((newline.join("\t".join(r) for r in [QUPATH_HEAD, *rows]) + newline).encode(encoding))
    return path
