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

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .columns import MatrixFiller, arrow_to_frame, batch_ranges, check_file_columns, conform, feature_arrays, \
    file_columns
from .refusals import ColumnMismatch, UndecodableData

_READ_PIECE_BYTES = 1 << 27
_ROW_GROUP_BYTES = 1 << 27


def write_parquet(path: Path, frame: pd.DataFrame, types: list[dict[str, str]], matrix: np.ndarray | None,
                  feature_ids: list[str], table: str, directory: Path | str) -> None:
    """Write ``frame`` (columns typed by ``types``) and the feature columns of ``matrix`` as one Parquet file."""
    arrays, schema = file_columns(frame, types, feature_ids, table, directory)
    with pq.ParquetWriter(path, schema) as writer:
        # one row group per batch of ~128 MB: few enough row groups for a small footer with 1,000 features
        for start, stop in batch_ranges(len(frame), len(schema), _ROW_GROUP_BYTES):
            columns = [a.slice(start, stop - start) for a in arrays]
            if feature_ids:
                columns += feature_arrays(matrix, start, stop)
            writer.write_batch(pa.record_batch(columns, schema=schema), row_group_size=max(stop - start, 1))


def read_parquet(path: Path, types: list[dict[str, str]], feature_ids: list[str],
                 directory: Path | str) -> tuple[pd.DataFrame, np.ndarray, dict[str, int]]:
    """(table columns as a canonical frame, measurement matrix, stored-NaN counts per feature)."""
    file = path.name
    try:
        # no pre-buffering and a buffered stream: column chunks are read a page at a time, so only the
        # batch being decoded is in memory (pre_buffer would load every selected column chunk first)
        handle = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
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
        filler = MatrixFiller(feature_ids, handle.metadata.num_rows)
        for start, piece in _feature_pieces(handle, feature_ids):
            filler.fill(start, piece)
            del piece
        matrix = filler.finish()
    except (pa.ArrowException, OSError) as err:
        raise UndecodableData(directory, file, f"Parquet data cannot be decoded: {err}") from None
    return arrow_to_frame(columns, table_types), matrix, filler.stored_nan


def _feature_pieces(handle: pq.ParquetFile, feature_ids: list[str]) -> Iterator[tuple[int, pa.Table]]:
    """(first row, table) pieces of the feature columns, each at most ~128 MB decoded.

    One row group at a time, and within it as many columns as fit, so memory stays
    bounded whatever row groups the writer chose (``iter_batches`` holds far more).
    """
    start = 0
    for i in range(handle.metadata.num_row_groups):
        rows = handle.metadata.row_group(i).num_rows
        step = max(1, _READ_PIECE_BYTES // max(8 * rows, 1))
        for j in range(0, len(feature_ids), step):
            yield start, handle.read_row_group(i, columns=feature_ids[j:j + step], use_threads=True)
        start += rows
