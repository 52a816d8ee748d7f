"""Store cellspec tables and provenance in AnnData ``uns`` so that they survive h5ad and zarr bit-exactly.

anndata turns string columns into categoricals, refuses ``None`` in ``uns`` and
returns zarr strings as numpy ``StringDType``; a DataFrame or nested dict in
``uns`` is therefore not safe, and every array costs a zarr file. So every
value in ``uns["cellspec"]`` is one JSON text string, which anndata writes and
reads back unchanged. JSON keeps ``None``, nesting and key order, and every
double (``repr`` round-trips, ``Infinity`` allowed); ``ensure_ascii`` keeps the
text plain ASCII whatever the ids hold.

A table is the JSON object ``{"columns": [...], "types": [...], "data": [[...], ...]}``
with one list of values per column; NA is ``null`` (for doubles too: NA is how
the spec holds NaN).

>>> import pandas as pd
>>> from cellspec_sc import example
>>> images = example().images
>>> decode_table(encode_table(images, "images"), "images").equals(images)
True
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from cellspec_sc.errors import InputError
from cellspec_sc.spec import SPEC_TYPES, canonical_frame, column_spec_types

def to_json_text(value: Any) -> str:
    """JSON text of a JSON-like value, lossless for doubles, ``None`` and non-ASCII text.

    >>> from_json_text(to_json_text({"a": [None, -0.0, "ü"]}))
    {'a': [None, -0.0, 'ü']}
    """
    return json.dumps(value, ensure_ascii=True, allow_nan=True)


def from_json_text(text: Any) -> Any:
    """The value stored by :func:`to_json_text` (accepts numpy string scalars read back from zarr)."""
    return json.loads(str(text))


def encode_table(frame: pd.DataFrame, table: str) -> str:
    """A cellspec table as JSON text (see module doc)."""
    types = column_spec_types(frame, table)
    data = []
    for name, spec_type in types:
        if spec_type is None:
            raise InputError(f"{table}: column {name!r} has dtype {frame[name].dtype}, which is no cellspec type")
        data.append(_json_values(frame[name], spec_type))
    return to_json_text({"columns": [str(name) for name, _ in types], "types": [t for _, t in types], "data": data})


def _json_values(column: pd.Series, spec_type: str) -> list[Any]:
    na = column.isna().to_numpy(dtype=bool)
    if spec_type == "double":
        values: list[Any] = column.to_numpy(dtype=np.float64, na_value=np.nan).tolist()
    elif spec_type == "integer":
        values = column.to_numpy(dtype=np.int64, na_value=0).tolist()
    elif spec_type == "logical":
        values = column.to_numpy(dtype=bool, na_value=False).tolist()
    else:
        values = [str(v) for v in column.to_numpy(dtype=object, na_value="").tolist()]
    for i in np.flatnonzero(na).tolist():
        values[i] = None
    return values


def known_types(types: Any, where: str) -> dict[str, str | None]:
    """``types`` ({column: spec type, or None for a column without one}) when the spec knows every type; else an
    InputError naming ``where`` (a damaged record must not reach the conversions as an unknown type).

    >>> known_types({"a": "character", "b": None}, "meta")
    {'a': 'character', 'b': None}
    >>> known_types({"a": "ch`racter"}, "meta")
    Traceback (most recent call last):
    ...
    cellspec_sc.errors.InputError: meta gives column 'a' the type 'ch`racter', which the spec does not have ...
    """
    if not isinstance(types, Mapping):
        raise InputError(f"{where} is a {type(types).__name__}, not the column types written by cellspec_sc")
    for name, spec_type in types.items():
        if spec_type is not None and spec_type not in SPEC_TYPES:
            raise InputError(f"{where} gives column {name!r} the type {spec_type!r}, which the spec does not have "
                             f"({', '.join(SPEC_TYPES)}): the record is damaged or was not written by cellspec_sc")
    return dict(types)


def decode_table(text: Any, table: str) -> pd.DataFrame:
    """The table written by :func:`encode_table`, with canonical dtypes."""
    try:
        stored = from_json_text(text)
        names, types, data = list(stored["columns"]), list(stored["types"]), list(stored["data"])
        known_types(dict(zip(map(str, names), types, strict=True)), f"uns['cellspec']['{table}']")
        n_rows = len(data[0]) if data else 0
        columns = {name: _column(values, spec_type, n_rows)
                   for name, spec_type, values in zip(names, types, data, strict=True)}
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(f"uns['cellspec']['{table}'] is damaged or was not written by cellspec_sc ({err})") from None
    frame = pd.DataFrame(columns, index=pd.RangeIndex(n_rows), columns=names)
    return canonical_frame(frame, table, dict(zip(names, types, strict=True)))


def _column(values: list[Any], spec_type: str, n_rows: int) -> pd.Series:
    if len(values) != n_rows:
        raise ValueError(f"a column has {len(values)} values for {n_rows} rows")
    if spec_type == "double":
        return pd.Series(np.array([np.nan if v is None else v for v in values], dtype=np.float64))
    dtype = {"integer": "Int32", "logical": "boolean", "character": "string"}[spec_type]
    return pd.Series(pd.array(values, dtype=dtype))
