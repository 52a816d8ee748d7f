"""What the reader tests share: numbers spelt as the tools spell them, the marker names and measured
values of generated exports, and a fixture counting validations.

>>> number_text(float("nan")), number_text(float("-inf"), inf="inf"), number_text(0.1)
('NaN', '-inf', '0.1')
"""

from __future__ import annotations

import math
import sys

import pytest
from hypothesis import strategies as st

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


@pytest.fixture
def validation_calls(monkeypatch) -> list:
    """Every call of the validation entry point, however a module bound it: each cellspec_sc module
    attribute that is :func:`cellspec_sc.validation.validate` or :func:`~cellspec_sc.validation.staged_validation`
    is wrapped by one counter."""
    import cellspec_sc.cli.imports  # noqa: F401 - bound before wrapping
    import cellspec_sc.io._directory  # noqa: F401
    import cellspec_sc.readers.pipeline  # noqa: F401
    from cellspec_sc.validation import _runner as runner

    calls = []

    def counting(original):
        def counted(x, *args, **kwargs):
            calls.append(type(x).__name__)
            return original(x, *args, **kwargs)
        return counted

    # a reader still encoding the cell ids validates in stages: that is one validation too
    for original in (runner.validate, runner.staged_validation):
        wrapped = counting(original)
        for name, module in list(sys.modules.items()):
            if name.startswith("cellspec_sc"):
                for attr, value in list(vars(module).items()):
                    if value is original:
                        monkeypatch.setattr(module, attr, wrapped)
    return calls
