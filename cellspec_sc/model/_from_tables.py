"""The parts of a :class:`~cellspec_sc.CellSpec` built from a user's own tables (``CellSpec.from_tables``).

The tables are coerced to the spec's column types, dictionary rows without a ``feature_id`` get one from the
rule of their kind (section 4) and provenance is filled (section 6); ``CellSpec.from_tables`` then validates the
object once, so the caller gets a valid object or a ValidationError whose message names each failed rule and the rows.

>>> import numpy as np, pandas as pd
>>> import cellspec_sc as cs
>>> x = cs.CellSpec.from_tables(
...     cells=pd.DataFrame({"cell_id": [1, 2], "image_id": "img1", "sample_id": "s1", "x": [10, 20], "y": [5, 6]}),
...     measurements=np.array([[1.5], [2.5]], dtype=np.float32),
...     dictionary=pd.DataFrame({"kind": ["intensity"], "marker": ["CD3"], "compartment": ["cell"],
...                              "statistic": ["mean"], "unit": ["a.u."]}),
...     images=pd.DataFrame({"image_id": ["img1"], "sample_id": ["s1"], "pixel_size": [0.5]}),
...     channels=pd.DataFrame({"image_id": ["img1"], "channel_index": [1], "channel_name": ["CD3"], "marker": ["CD3"]}),
...     producer={"tool": "my-pipeline", "version": "2.1"})
>>> x.feature_ids, x.cells["cell_id"].tolist(), x.measurements.dtype.name
(['cell:CD3:mean'], ['1', '2'], 'float64')

A name not yet taken, for the columns readers and bridges add (:func:`first_free_name`).

>>> first_free_name("cell:area", {"cell:area", "cell:area_2"})
'cell:area_3'
"""

from __future__ import annotations

import os
from collections.abc import Container
from typing import Any

import numpy as np
import pandas as pd

from cellspec_sc.errors import InputError
from cellspec_sc.model._provenance import input_record, new_provenance, with_history_step
from cellspec_sc.spec import canonical_frame, vocabulary

ADAPTER = "from_tables"
ADAPTER_VERSION = "1.0.0"
FUNCTION = "cellspec_sc.CellSpec.from_tables"


def parts_from_tables(
    *,
    cells: pd.DataFrame,
    measurements: Any,
    dictionary: pd.DataFrame,
    images: pd.DataFrame,
    channels: pd.DataFrame,
    adjacency: pd.DataFrame | None = None,
    producer: str | dict[str, Any],
    **provenance: Any,
) -> dict[str, Any]:
    """The constructor arguments of the object :meth:`CellSpec.from_tables` builds (not validated here)."""
    tables = {"cells": cells, "dictionary": dictionary, "images": images, "channels": channels}
    if adjacency is not None:
        tables["adjacency"] = adjacency
    coerced = {name: coerce_table(frame, name) for name, frame in tables.items()}
    dictionary, built = fill_feature_ids(with_required_columns(coerced["dictionary"]), measurements)
    matrix, nan, inf = as_matrix(measurements, dictionary, len(coerced["cells"]))
    details = {"feature_ids_built": built, "nonfinite_converted": inf,
               "coerced": {name: changed_columns(tables[name], coerced[name]) for name in tables}}
    prov = filled_provenance(producer, provenance, n_cells=len(coerced["cells"]), nan=nan, inf=inf)
    return dict(cells=coerced["cells"], measurements=matrix, dictionary=dictionary, images=coerced["images"],
                channels=coerced["channels"], adjacency=coerced.get("adjacency"),
                provenance=with_history_step(prov, "from_tables", FUNCTION, details))


def coerce_table(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    """``frame`` with the spec's dtypes, its index dropped; InputError naming table, column and row otherwise."""
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"{table}: expected a pandas DataFrame, got {type(frame).__name__}")
    frame = frame.reset_index(drop=True)
    try:
        return canonical_frame(frame, table)
    except (TypeError, ValueError):
        pass
    for name in frame.columns:  # find the column and row that cannot be converted
        try:
            canonical_frame(frame[[name]], table)
        except (TypeError, ValueError) as err:
            bad = pd.to_numeric(frame[name], errors="coerce").isna() & frame[name].notna()
            row = int(np.flatnonzero(bad.to_numpy())[0]) if bad.any() else None
            where = f", row {row} ({frame[name].iloc[row]!r})" if row is not None else ""
            raise InputError(f"{table}.{name}{where}: cannot be converted to its spec type ({err})") from None
    raise AssertionError("unreachable: the whole frame failed but no column did")  # pragma: no cover


def with_required_columns(dictionary: pd.DataFrame) -> pd.DataFrame:
    """The dictionary with every MUST column, absent ones added as NA (validation judges what each kind needs)."""
    out = dictionary.copy()
    for column in vocabulary().tables["dictionary"]:
        if column.requirement == "MUST" and column.name not in out.columns:
            out[column.name] = pd.Series(pd.NA, index=out.index, dtype="string")
    return out


def fill_feature_ids(dictionary: pd.DataFrame, measurements: Any) -> tuple[pd.DataFrame, int]:
    """Feature ids built by the rule of each row's kind where missing; source_name from the measurement
    DataFrame's column (else the feature id) where missing. Returns the dictionary and how many ids were built."""
    voc = vocabulary()
    out = dictionary.copy()
    missing = out["feature_id"].isna().to_numpy(dtype=bool)
    ids = out["feature_id"].astype(object).to_numpy().copy()
    for k in np.flatnonzero(missing):
        kind = out["kind"].iloc[k]
        if kind not in voc.kinds:
            raise InputError(f"dictionary row {k}: no feature_id and kind {kind!r} is not one of "
                             f"{', '.join(voc.kinds)}, so none can be built")
        row = {c: (None if pd.isna(out[c].iloc[k]) else str(out[c].iloc[k]))
               for c in ("compartment", "marker", "statistic")}
        ids[k] = voc.feature_id_rule(kind).format(**row)
    out["feature_id"] = pd.Series(ids, dtype="string")
    headers = list(map(str, measurements.columns)) if isinstance(measurements, pd.DataFrame) else None
    if headers is not None and len(headers) == len(out) and out["feature_id"].isin(headers).all():
        headers = out["feature_id"].tolist()  # the frame is matched by feature id, see as_matrix
    names = out["source_name"].astype(object).to_numpy().copy()
    for k in np.flatnonzero(out["source_name"].isna().to_numpy(dtype=bool)):
        names[k] = headers[k] if headers is not None and len(headers) == len(out) else ids[k]
    out["source_name"] = pd.Series(names, dtype="string")
    return out, int(missing.sum())


def as_matrix(measurements: Any, dictionary: pd.DataFrame, n_cells: int) -> tuple[np.ndarray, int, int]:
    """A C-contiguous float64 matrix with infinities turned into NA, and the counts of NaN and infinities.

    A DataFrame whose columns are the dictionary's feature ids is taken in dictionary order; any other
    DataFrame by position. The caller's array is never modified.
    """
    if isinstance(measurements, pd.DataFrame):
        ids = dictionary["feature_id"].tolist()
        frame = measurements[ids] if set(ids) <= set(map(str, measurements.columns)) else measurements
        measurements = frame.to_numpy(dtype=np.float64, na_value=np.nan)
    try:
        matrix = np.asarray(measurements, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise InputError(f"measurements: cannot be converted to a float64 matrix ({err})") from None
    if matrix.ndim != 2 or matrix.shape != (n_cells, len(dictionary)):
        raise InputError(f"measurements: shape {matrix.shape}, expected ({n_cells}, {len(dictionary)}): one row "
                         "per cells row and one column per dictionary row")
    infinite = np.isinf(matrix)
    inf = int(infinite.sum())
    if inf:
        matrix = np.where(infinite, np.nan, matrix)
    return np.ascontiguousarray(matrix), int(np.isnan(matrix).sum()) - inf, inf


def changed_columns(before: pd.DataFrame, after: pd.DataFrame) -> list[str]:
    """Columns whose dtype the coercion changed, as ``"name: old -> new"``."""
    return [f"{c}: {before[c].dtype} -> {after[c].dtype}" for c in before.columns if before[c].dtype != after[c].dtype]


def filled_provenance(producer: str | dict[str, Any], given: dict[str, Any], *, n_cells: int, nan: int,
                      inf: int) -> dict[str, Any]:
    """Section 6 provenance: reader = this package; ``given`` fields (inputs as paths or records, parameters,
    counts, created_utc, any extra field) override or extend the defaults."""
    producer = {"tool": producer, "version": None} if isinstance(producer, str) else dict(producer)
    inputs = [input_record(p) if isinstance(p, (str, os.PathLike)) else dict(p) for p in given.pop("inputs", [])]
    counts = {"rows_read": n_cells, "rows_kept": n_cells, "na_converted": nan, "nonfinite_converted": inf,
              **given.pop("counts", {})}
    prov = new_provenance(producer=producer, adapter=ADAPTER, adapter_version=ADAPTER_VERSION, inputs=inputs,
                          counts=counts, parameters=given.pop("parameters", {}))
    if "reader" in given:
        raise InputError("provenance reader: set by from_tables (this package); pass producer= for your tool")
    prov["history"] = list(given.pop("history", []))
    prov.update(given)
    return prov


def first_free_name(name: str, taken: Container[str]) -> str:
    """``name`` if it is free, else ``name_2``, ``name_3``, ... whichever comes first."""
    if name not in taken:
        return name
    n = 2
    while f"{name}_{n}" in taken:
        n += 1
    return f"{name}_{n}"
