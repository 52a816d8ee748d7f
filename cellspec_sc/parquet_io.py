"""The Parquet variant of the cells and adjacency files (the default).

Cells columns, then one float64 column per feature id; NA as Parquet null,
strings as UTF-8, integers as int32. Written and read one row batch at a time.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> x = cs.example()
>>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.parquet"
>>> types = [{"name": n, "type": "character"} for n in ("cell_id",)]
>>> write_parquet(path, x.cells, types, x.measurements[:, :0], [], "cells", ".")
>>> read_parquet(path, types, [], ".")[0].shape
(80, 1)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .columns import MatrixFiller, arrow_to_frame, batch_ranges, check_file_columns, conform, feature_arrays, \
    file_columns
from .refusals import ChangedSinceRead, ColumnMismatch, StoredNonFinite, UndecodableData

_DECODE_BYTES = 1 << 24  # decoded feature values held at once while filling the matrix
_ROW_GROUP_BYTES = 1 << 27  # ~128 MB row groups on write


def write_parquet(path: Path, frame: pd.DataFrame, types: list[dict[str, str]], matrix: np.ndarray | None,
                  feature_ids: list[str], table: str, directory: Path | str) -> None:
    """Write ``frame`` (columns typed by ``types``) and the feature columns of ``matrix`` as one Parquet file."""
    arrays, schema = file_columns(frame, types, feature_ids, table, directory)
    with pq.ParquetWriter(path, schema) as writer:
        for start, stop in batch_ranges(len(frame), len(schema), _ROW_GROUP_BYTES):
            columns = [a.slice(start, stop - start) for a in arrays]
            if feature_ids:
                columns += feature_arrays(matrix, start, stop)
            writer.write_batch(pa.record_batch(columns, schema=schema), row_group_size=max(stop - start, 1))


def read_parquet(path: Path, types: list[dict[str, str]], feature_ids: list[str],
                 directory: Path | str, *, lazy: bool = False) -> tuple[pd.DataFrame, Any, dict[str, int]]:
    """(table columns as a canonical frame, measurement matrix, stored-NaN counts per feature).

    ``lazy=True``: the matrix is a dask array with one block per row group (see :func:`lazy_matrix`);
    stored NaN is then refused when a block is computed, so the counts are empty.
    """
    file = path.name
    try:
        handle = pq.ParquetFile(path)
        stored = handle.schema_arrow
    except (pa.ArrowException, OSError) as err:
        raise UndecodableData(directory, file, f"not a readable Parquet file: {err}") from None
    table_types = check_file_columns(stored.names, types, feature_ids, directory, file)
    for name in feature_ids:
        kind = stored.field(name).type
        if kind != pa.float64() and not pa.types.is_null(kind):
            raise ColumnMismatch(directory, file, f"feature column {name!r} is stored as {kind}, not double")
    try:
        names = [c["name"] for c in table_types]
        raw = handle.read(columns=names, use_threads=True)
        columns = pa.table({c["name"]: conform(raw.column(c["name"]), c["type"], file, c["name"], directory)
                            for c in table_types}) if names else raw
        if lazy:
            return arrow_to_frame(columns, table_types), lazy_matrix(path, feature_ids, directory), {}
        filler = MatrixFiller(feature_ids, handle.metadata.num_rows)
        row = 0
        for index in range(handle.metadata.num_row_groups):
            row += fill_row_group(handle, index, feature_ids, filler, row)
        matrix = filler.finish()
    except (pa.ArrowException, OSError) as err:
        raise UndecodableData(directory, file, f"Parquet data cannot be decoded: {err}") from None
    return arrow_to_frame(columns, table_types), matrix, filler.stored_nan


def fill_row_group(handle: pq.ParquetFile, index: int, feature_ids: list[str], filler: MatrixFiller,
                   row: int) -> int:
    """Decode the feature columns of row group ``index`` into ``filler`` at ``row``; returns its row count.

    Columns are decoded a few at a time (about 16 MB of values), so a file written with one huge
    row group (pyarrow's default is 1M rows) still never holds a second copy of the matrix.
    """
    n = handle.metadata.row_group(index).num_rows
    step = max(1, _DECODE_BYTES // max(8 * n, 1))
    for first in range(0, len(feature_ids), step):
        names = feature_ids[first:first + step]
        filler.fill(handle.read_row_group(index, columns=names, use_threads=True), row, names)
    return n


def lazy_matrix(path: Path, feature_ids: list[str], directory: Path | str) -> Any:
    """The feature columns of a Parquet file as a dask array, one block per row group.

    Nothing is decoded until a block is computed; each block is read with
    pyarrow into a fresh float64 array. A block refuses to load when the file
    changed since this call (size or modification time), and when a column
    stores NaN as a number instead of null (``measurements_finite``).
    """
    import dask
    import dask.array as da

    meta = pq.ParquetFile(path).metadata
    stamp = _file_stamp(path)
    blocks = []
    for index in range(meta.num_row_groups):
        rows = meta.row_group(index).num_rows
        load = dask.delayed(_row_group_matrix, pure=True)(str(path), index, tuple(feature_ids), stamp, str(directory))
        blocks.append(da.from_delayed(load, shape=(rows, len(feature_ids)), dtype=np.float64))
    if not blocks:
        return da.from_array(np.empty((0, len(feature_ids)), dtype=np.float64))
    return da.concatenate(blocks, axis=0) if len(blocks) > 1 else blocks[0]


def _file_stamp(path: Path | str) -> tuple[int, int]:
    info = os.stat(path)
    return info.st_size, info.st_mtime_ns


def _row_group_matrix(path: str, index: int, feature_ids: tuple[str, ...], stamp: tuple[int, int],
                      directory: str) -> np.ndarray:
    """Row group ``index`` of the feature columns as a float64 matrix (a block of :func:`lazy_matrix`)."""
    file = Path(path).name
    try:
        if _file_stamp(path) != stamp:
            raise ChangedSinceRead(directory, file, "changed after read(lazy=True); read the directory again")
        handle = pq.ParquetFile(path)
        filler = MatrixFiller(list(feature_ids), handle.metadata.row_group(index).num_rows)
        fill_row_group(handle, index, list(feature_ids), filler, 0)
    except FileNotFoundError:
        raise ChangedSinceRead(directory, file, "was removed after read(lazy=True)") from None
    except (pa.ArrowException, OSError) as err:
        raise UndecodableData(directory, file, f"row group {index} cannot be decoded: {err}") from None
    if filler.stored_nan:
        name, count = next(iter(filler.stored_nan.items()))
        raise StoredNonFinite(directory, file, f"row group {index}: feature column {name!r} stores {count} NaN "
                                               f"value(s) as numbers, not null")
    return filler.finish()
