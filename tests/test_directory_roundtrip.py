"""Round trips through cellspec directories: bit-exact Parquet, 15-digit TSV, on generated objects."""

from __future__ import annotations

import json
import math
import subprocess
import tempfile
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from strategies import cellspecs

import cellspec_sc as cs

SCHEMA = json.loads((Path(cs.__file__).parent / "schema" / "cellspec-1.0.0.schema.json").read_text())


def _fifteen(v: float) -> float:
    """A double as it reads back from 15 significant digits (stays finite, like the writer promises)."""
    if math.isnan(v) or math.isinf(v):
        return v
    rounded = float(f"{v:.15g}")
    return v if math.isinf(rounded) else rounded


def at_tsv_precision(x: cs.CellSpec) -> cs.CellSpec:
    """``x`` with every double of the cells/adjacency files rounded to 15 significant digits."""
    def frame(f):
        if f is None:
            return None
        f = f.copy()
        for name in f.columns:
            if f[name].dtype == np.float64:
                f[name] = [_fifteen(v) for v in f[name]]
        return f
    m = np.vectorize(_fifteen, otypes=[np.float64])(x.measurements) if x.measurements.size else x.measurements
    return x.replace(cells=frame(x.cells), adjacency=frame(x.adjacency), measurements=m.reshape(x.measurements.shape))


def _check_schema(path: Path) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads((path / "cellspec.json").read_text("utf-8")))


@given(cellspecs())
def test_parquet_round_trip_is_bit_exact(x):
    with tempfile.TemporaryDirectory() as tmp:
        path = cs.write(x, Path(tmp) / "obj")
        _check_schema(path)
        y = cs.read(path)
        assert y.differences(x) == []


@given(cellspecs())
def test_tsv_round_trip_to_15_digits(x):
    with tempfile.TemporaryDirectory() as tmp:
        path = cs.write(x, Path(tmp) / "obj", format="tsv")
        _check_schema(path)
        y = cs.read(path)
        assert y.differences(at_tsv_precision(x)) == []
