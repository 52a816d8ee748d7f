"""Store cellspec tables and provenance in AnnData ``uns`` so that they survive h5ad and zarr bit-exactly.

anndata turns string columns into categoricals, refuses ``None`` and may return
zarr strings as numpy ``StringDType``; a plain DataFrame in ``uns`` is therefore
not safe. A table is stored as a dict of plain numpy arrays, one per column,
each with an explicit NA mask, keyed by position (column names may hold ``/``,
which h5py and zarr read as a path):

=============  ==========================================================
key            content
=============  ==========================================================
``columns``    column names, in order (str array)
``types``      spec type of each column (str array)
``n_rows``     number of rows (int)
``c<i>``       values of column i: str (``""`` at NA), float64 (NaN at NA),
               int32 (0 at NA) or bool (False at NA)
``c<i>_na``    bool NA mask of column i
=============  ==========================================================

JSON-like values (provenance, column types) are stored as JSON text, which
keeps ``None``, nesting, key order and every double (``repr`` round-trips,
``NaN``/``Infinity`` allowed); ``ensure_ascii`` keeps the text plain ASCII.

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
from cellspec_sc.types import canonical_frame, column_spec_types

_STORAGE = {"character": object, "double": np.float64, "integer": np.int32, "logical": np.bool_}
_FILL = {"character": "", "double": np.nan, "integer": 0, "logical": False}


def to_json_text(value: Any) -> str:
    """JSON text of a JSON-like value, lossless for doubles, ``None`` and non-ASCII text.

    >>> from_json_text(to_json_text({"a": [None, -0.0, "ü"]}))
    {'a': [None, -0.0, 'ü']}
    """
    return json.dumps(value, ensure_ascii=True, allow_nan=True)


def from_json_text(text: Any) -> Any:
    """The value stored by :func:`to_json_text` (accepts numpy string scalars read back from zarr)."""
    return json.loads(str(text))


def encode_table(frame: pd.DataFrame, table: str) -> dict[str, Any]:
    """A cellspec table as a dict of numpy arrays that anndata writes losslessly (see module doc)."""
    types = column_spec_types(frame, table)
    out: dict[str, Any] = {
        "columns": np.array([name for name, _ in types], dtype=object),
        "types": np.array([t or "" for _, t in types], dtype=object),
        "n_rows": int(len(frame)),
    }
    for i, (name, spec_type) in enumerate(types):
        if spec_type is None:
            raise InputError(f"{table}: column {name!r} has dtype {frame[name].dtype}, which is no cellspec type")
        column = frame[name]
        na = column.isna().to_numpy(dtype=bool)
        out[f"c{i}"] = column.to_numpy(dtype=_STORAGE[spec_type], na_value=_FILL[spec_type])
        if spec_type == "character":
            out[f"c{i}"] = np.array([str(v) for v in out[f"c{i}"]], dtype=object)
        out[f"c{i}_na"] = na
    return out


def decode_table(stored: Mapping[str, Any], table: str) -> pd.DataFrame:
    """The table written by :func:`encode_table`, with canonical dtypes."""
    try:
        names = [str(v) for v in np.asarray(stored["columns"]).tolist()]
        types = [str(v) for v in np.asarray(stored["types"]).tolist()]
        n_rows = int(stored["n_rows"])
        data = {name: _decode_column(stored, i, spec_type, n_rows) for i, (name, spec_type) in
                enumerate(zip(names, types, strict=True))}
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(f"uns['cellspec']['{table}'] is damaged or was not written by cellspec_sc ({err})") from None
    frame = pd.DataFrame(data, index=pd.RangeIndex(n_rows), columns=names)
    return canonical_frame(frame, table, dict(zip(names, types, strict=True)))


def _decode_column(stored: Mapping[str, Any], i: int, spec_type: str, n_rows: int) -> pd.Series:
    values = np.asarray(stored[f"c{i}"])
    na = np.asarray(stored[f"c{i}_na"], dtype=bool)
    if values.shape != (n_rows,) or na.shape != (n_rows,):
        raise ValueError(f"column {i} has {values.shape[0] if values.ndim else 0} values for {n_rows} rows")
    if spec_type == "character":
        objects = np.array([str(v) for v in values.tolist()], dtype=object)
        objects[na] = None
        return pd.Series(objects, dtype=object)
    if spec_type == "double":
        return pd.Series(values.astype(np.float64, copy=False))
    target = "Int32" if spec_type == "integer" else "boolean"
    return pd.Series(pd.array(values.astype(_STORAGE[spec_type]), dtype=target).astype(target)).mask(na)
