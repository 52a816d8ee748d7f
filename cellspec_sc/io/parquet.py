"""The Parquet variant of the cells and adjacency files (the default).

Cells columns, then one float64 column per feature id; NA as Parquet null,
strings as UTF-8, integers as int32. Written and read one row batch at a time.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> x = cs.example()
>>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.parquet"
>>> types = [{"name": n, "type": "character"} for n in ("cell_id",)]
>>> len(write_parquet(path, x.cells, types, x.measurements[:, :0], [], "cells", "."))  # its SHA-256
64
>>> read_parquet(path, types, [], ".").frame.shape
(80, 1)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from cellspec_sc.io.columns import DAMAGED_DATA_ERRORS, Decoded, arrow_to_frame, batch_ranges, check_file_columns, conform, damage_text, feature_arrays, file_columns
from cellspec_sc.io.bounded import DEFAULT_MAX_INFLATION, INFLATION_FLOOR_BYTES
from cellspec_sc.io.hashing import FollowingHash
from cellspec_sc.io.parquet_matrix import MatrixDecoding, fill_row_group, stored_nan
from cellspec_sc.validation.matrix_stats import MatrixStats, arrow_first_seen_codes, first_seen_codes
from cellspec_sc.model.memory import empty_matrix
from cellspec_sc.progress import progress
from cellspec_sc.io.refusals import ChangedSinceRead, ColumnMismatch, FileTooLarge, StoredNonFinite, UndecodableData
from cellspec_sc.spec.types import spec_type_of

_ROW_GROUP_BYTES = 1 << 27  # ~128 MB row groups on write
_EARLY_ROWS = 1 << 16  # files at least this long start decoding the matrix before the cells table is built


def write_parquet(path: Path, frame: pd.DataFrame, types: list[dict[str, str]], matrix: Any,
                  feature_ids: list[str], table: str, directory: Path | str,
                  after_batch: Callable[[], None] = lambda: None) -> str:
    """Write ``frame`` (columns typed by ``types``) and the feature columns of ``matrix`` as one Parquet file.

    Returns the file's hex SHA-256, computed on another core while the file is written.
    ``after_batch`` is called after each row group (the directory writer stops there if validation failed).
    """
    arrays, schema = file_columns(frame, types, feature_ids, table, directory)
    # Dictionary encoding and statistics pay off for the cells columns (ids, classes, x/y ranges per
    # row group), not for measured doubles: nearly every value is distinct, so the dictionary is
    # abandoned only after hashing each value, and statistics cost a third of the encoding time.
    table_columns = [c["name"] for c in types]
    ranges = batch_ranges(len(frame), len(schema), _ROW_GROUP_BYTES)
    buffer = empty_matrix(len(feature_ids), max(b - a for a, b in ranges)) if feature_ids else None
    writer = pq.ParquetWriter(path, schema, use_dictionary=table_columns, write_statistics=table_columns)
    hasher = FollowingHash(path)
    try:
        with progress(len(frame), f"writing {path.name}", size=len(frame) * len(schema)) as bar:
            for start, stop in ranges:
                columns = [a.slice(start, stop - start) for a in arrays]
                if feature_ids:
                    columns += feature_arrays(matrix, start, stop, buffer)
                writer.write_batch(pa.record_batch(columns, schema=schema), row_group_size=max(stop - start, 1))
                hasher.wrote()
                after_batch()
                bar.update(stop - start)
    finally:
        writer.close()
        digest = hasher.finish()
    return digest


def read_parquet(path: Path, types: list[dict[str, str]], feature_ids: list[str],
                 directory: Path | str, *, lazy: bool = False, wait: bool = True, layout: str = "C",
                 max_inflation: float = DEFAULT_MAX_INFLATION) -> Decoded:
    """The table columns as a canonical frame, the measurement matrix, stored-NaN counts per feature and
    the :class:`~cellspec_sc.validation.matrix_stats.MatrixStats` of the matrix, gathered while decoding it.

    ``lazy=True``: the matrix is a dask array with one block per row group (see :func:`lazy_matrix`);
    stored NaN is then refused when a block is computed, so the counts are empty and there are no stats.
    ``wait=False``: the matrix is returned while a thread still fills it (:class:`MatrixDecoding`, in
    ``stats``): its ``result()`` waits and gives the stats, whose ``stored_nonfinite`` are the counts;
    the caller checks the table columns meanwhile (``read`` validates the cells on the first core).
    ``layout``: ``"C"`` (row-major, what numpy and scanpy expect) or ``"F"`` (each feature contiguous,
    the file's own order: a plain copy per column, about a third of the CPU of the transposing copy).
    ``max_inflation``: see :func:`check_footer`.
    """
    file = path.name
    handle = open_parquet(path, directory, file)
    table_types = check_stored_columns(handle.schema_arrow, types, feature_ids, directory, file)
    check_footer(handle.metadata, path, directory, file, max_inflation)
    # A long matrix starts decoding before the cells table is built when the image of each row can be
    # known from the image_id column alone (the stats keep per-image ranges).
    long = not lazy and handle.metadata.num_rows >= _EARLY_ROWS
    early = early_stats(handle, table_types, len(feature_ids), directory, file) if long else None
    decoding = None if early is None else MatrixDecoding(path, handle, feature_ids, early[0], directory, layout,
                                                         handle_in_use=True)
    try:
        frame = _table_frame(handle, table_types, directory, file, early[1] if early else {}, decoding is None)
    except BaseException as err:
        if decoding is not None:
            decoding.cancel()
        if isinstance(err, DAMAGED_DATA_ERRORS):
            raise UndecodableData(directory, file, f"Parquet data cannot be decoded: {err}") from None
        raise
    if lazy:
        return Decoded(frame, lazy_matrix(path, feature_ids, directory), {}, None)
    if decoding is None:
        decoding = MatrixDecoding(path, handle, feature_ids, stats_for(frame, len(feature_ids)), directory, layout)
    if not wait:
        return Decoded(frame, decoding.matrix, {}, decoding)
    stats = decoding.result()
    return Decoded(frame, decoding.matrix, stats.stored_nonfinite, stats)


def _table_frame(handle: pq.ParquetFile, table_types: list[dict[str, str]], directory: Path | str,
                 file: str, known: dict[str, pa.ChunkedArray], use_threads: bool) -> pd.DataFrame:
    """The cells columns as a canonical frame; ``known``: columns already read and conformed.
    ``use_threads``: pyarrow's, when no decoding runs meanwhile (beside it they cost CPU, not time)."""
    raw = handle.read(columns=[c["name"] for c in table_types if c["name"] not in known], use_threads=use_threads)
    columns = pa.table({c["name"]: known[c["name"]] if c["name"] in known else
                        conform(raw.column(c["name"]), c["type"], file, c["name"], directory)
                        for c in table_types}) if table_types else raw
    return arrow_to_frame(columns, table_types)


def open_parquet(path: Path, directory: Path | str, file: str) -> pq.ParquetFile:
    """``path`` opened (footer and schema decoded), or UndecodableData naming ``file``."""
    try:
        handle = pq.ParquetFile(path)
        handle.schema_arrow  # noqa: B018 - decodes the column names, which may not be UTF-8
    except DAMAGED_DATA_ERRORS as err:
        raise UndecodableData(directory, file, f"not a readable Parquet file: {damage_text(err)}") from None
    return handle


def check_footer(meta: pq.FileMetaData, path: Path, directory: Path | str, file: str,
                 max_inflation: float = DEFAULT_MAX_INFLATION) -> None:
    """Refuse a footer the matrix and the cells table cannot be sized from: row counts that do not add up,
    or more values than ``max_inflation`` times the file's size (at least 64 MiB) could hold once read.

    Run-length and dictionary encoding let a few kilobytes claim billions of equal values; a file of real
    measurements holds about as many bytes as its values (doubles barely compress), so the bound stops
    only such bombs before a matrix is allocated for them (the bound of gzipped TSV, see ``read``).
    """
    check_row_counts(meta, directory, file)
    size = os.stat(path).st_size
    claimed = meta.num_rows * meta.num_columns * 8  # the least it takes once read: 8 bytes a value
    limit = max(INFLATION_FLOOR_BYTES, max_inflation * size)
    if claimed > limit:
        raise FileTooLarge(directory, file, f"its footer claims {meta.num_rows:,} rows of {meta.num_columns} "
                                            f"columns, at least {claimed:,} bytes once read: over {max_inflation:g} "
                                            f"times its size ({size:,} bytes); if the file is genuine, read it "
                                            "with max_inflation= set higher")


def check_row_counts(meta: pq.FileMetaData, directory: Path | str, file: str) -> None:
    """Refuse a footer whose row count is not the sum of its row groups' (the matrix is sized from it)."""
    counts = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    if min(counts, default=0) < 0 or sum(counts) != meta.num_rows:
        shown = ", ".join(map(str, counts[:5])) + (", ..." if len(counts) > 5 else "")
        raise UndecodableData(directory, file, f"the footer says {meta.num_rows} rows but its row groups hold "
                                               f"{shown}")


def check_stored_columns(stored: pa.Schema, types: list[dict[str, str]], feature_ids: list[str],
                         directory: Path | str, file: str) -> list[dict[str, str]]:
    """Compare a file's schema with column_types (features stored as double or all-null); returns the
    types of the table columns (see :func:`~cellspec_sc.io.columns.check_file_columns`)."""
    table_types = check_file_columns(stored.names, types, feature_ids, directory, file)
    kinds = dict(zip(stored.names, stored.types, strict=True))  # one pass: by-name lookups cost O(columns) each
    for name in feature_ids:
        kind = kinds[name]
        if kind != pa.float64() and not pa.types.is_null(kind):
            raise ColumnMismatch(directory, file, f"feature column {name!r} is stored as {kind}, not double")
    return table_types


def stats_for(frame: pd.DataFrame, n_features: int) -> MatrixStats:
    """Stats with per-image ranges when the cells have a character image_id (what validation uses)."""
    image_id = frame["image_id"] if "image_id" in frame.columns else None
    if image_id is None or isinstance(image_id, pd.DataFrame) or spec_type_of(image_id) != "character":
        return MatrixStats(n_features)
    codes, names = first_seen_codes(image_id)
    return MatrixStats(n_features, codes, len(names), image_ids=names)


def early_stats(handle: pq.ParquetFile, table_types: list[dict[str, str]], n_features: int,
                directory: Path | str, file: str) -> tuple[MatrixStats, dict[str, pa.ChunkedArray]] | None:
    """What :func:`stats_for` gives for the cells table of ``handle``, from its image_id column alone
    (and that column, read and conformed); None when that column does not read as character by itself
    (the whole table is then read first, so whatever is wrong with it is refused in the usual order)."""
    if not any(c["name"] == "image_id" and c["type"] == "character" for c in table_types):
        return MatrixStats(n_features), {}
    try:
        stored = handle.read(columns=["image_id"], use_threads=False).column(0)
        image_ids = conform(stored, "character", file, "image_id", directory)
        codes, names = arrow_first_seen_codes(image_ids)
    except (ColumnMismatch, *DAMAGED_DATA_ERRORS):
        return None
    return MatrixStats(n_features, codes, len(names), image_ids=names), {"image_id": image_ids}


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


def _file_stamp(path: Path | str | int) -> tuple[int, ...]:
    info = os.stat(path)
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def _row_group_matrix(path: str, index: int, feature_ids: tuple[str, ...], stamp: tuple[int, ...],
                      directory: str) -> np.ndarray:
    """Row group ``index`` of the feature columns as a float64 matrix (a block of :func:`lazy_matrix`)."""
    file = Path(path).name
    try:
        opened = open(path, "rb")  # noqa: SIM115 - closed below; stamped through the open descriptor
    except FileNotFoundError:
        raise ChangedSinceRead(directory, file, "was removed after read(lazy=True)") from None
    with opened:
        if _file_stamp(opened.fileno()) != stamp:
            raise ChangedSinceRead(directory, file, "changed after read(lazy=True); read the directory again")
        return _decode_block(opened, index, feature_ids, directory, file)


def _decode_block(opened: Any, index: int, feature_ids: tuple[str, ...], directory: str, file: str) -> np.ndarray:
    try:
        handle = pq.ParquetFile(opened)
        block = empty_matrix(handle.metadata.row_group(index).num_rows, len(feature_ids))
        nulls = np.zeros(len(feature_ids), dtype=np.int64)
        stats = MatrixStats(len(feature_ids))
        fill_row_group(handle, index, list(feature_ids), block, nulls, stats)
    except DAMAGED_DATA_ERRORS as err:
        raise UndecodableData(directory, file, f"row group {index} cannot be decoded: {err}") from None
    stored = stored_nan(stats, nulls, feature_ids)
    if stored:
        name, count = next(iter(stored.items()))
        raise StoredNonFinite(directory, file, f"row group {index}: feature column {name!r} stores {count} NaN "
                                               f"value(s) as numbers, not null")
    return block
