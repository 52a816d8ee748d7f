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
import threading
from collections.abc import Callable
from concurrent.futures import CancelledError, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from cellspec_sc.io.columns import Decoded, arrow_to_frame, batch_ranges, check_file_columns, conform, feature_arrays, file_columns
from cellspec_sc.io.hashing import FollowingHash
from cellspec_sc.validation.matrix_stats import MatrixStats, cache_rows, first_seen_codes
from cellspec_sc.model.memory import empty_matrix
from cellspec_sc.progress import progress
from cellspec_sc.io.refusals import ChangedSinceRead, ColumnMismatch, StoredNonFinite, UndecodableData
from cellspec_sc.spec.types import spec_type_of

_DECODE_BYTES = 1 << 23  # decoded feature values per piece: ~8 MB (bigger pieces left up to 250 MB of freed Arrow buffers resident on a first read)
_ROW_GROUP_BYTES = 1 << 27  # ~128 MB row groups on write
DECODE_THREADS = max(1, (os.cpu_count() or 2) - 1)  # threads filling the matrix; one more core hashes the file and checks the cells
_THREADED_ROWS = 1 << 12  # row groups at least this long are decoded with pyarrow's threads, column by column


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
                 directory: Path | str, *, lazy: bool = False, wait: bool = True, layout: str = "C") -> Decoded:
    """The table columns as a canonical frame, the measurement matrix, stored-NaN counts per feature and
    the :class:`~cellspec_sc.validation.matrix_stats.MatrixStats` of the matrix, gathered while decoding it.

    ``lazy=True``: the matrix is a dask array with one block per row group (see :func:`lazy_matrix`);
    stored NaN is then refused when a block is computed, so the counts are empty and there are no stats.
    ``wait=False``: the matrix is returned while a thread still fills it (:class:`MatrixDecoding`, in
    ``stats``): its ``result()`` waits and gives the stats, whose ``stored_nonfinite`` are the counts;
    the caller checks the table columns meanwhile (``read`` validates the cells on the first core).
    ``layout``: ``"C"`` (row-major, what numpy and scanpy expect) or ``"F"`` (each feature contiguous,
    the file's own order: a plain copy per column, about a third of the CPU of the transposing copy).
    """
    file = path.name
    try:
        handle = pq.ParquetFile(path)
        stored = handle.schema_arrow
    except (pa.ArrowException, OSError) as err:
        raise UndecodableData(directory, file, f"not a readable Parquet file: {err}") from None
    table_types = check_stored_columns(stored, types, feature_ids, directory, file)
    try:
        frame = _table_frame(handle, table_types, directory, file)
    except (pa.ArrowException, OSError) as err:
        raise UndecodableData(directory, file, f"Parquet data cannot be decoded: {err}") from None
    if lazy:
        return Decoded(frame, lazy_matrix(path, feature_ids, directory), {}, None)
    decoding = MatrixDecoding(path, handle, feature_ids, stats_for(frame, len(feature_ids)), directory, layout)
    if not wait:
        return Decoded(frame, decoding.matrix, {}, decoding)
    stats = decoding.result()
    return Decoded(frame, decoding.matrix, stats.stored_nonfinite, stats)


def _table_frame(handle: pq.ParquetFile, table_types: list[dict[str, str]], directory: Path | str,
                 file: str) -> pd.DataFrame:
    names = [c["name"] for c in table_types]
    raw = handle.read(columns=names, use_threads=True)
    columns = pa.table({c["name"]: conform(raw.column(c["name"]), c["type"], file, c["name"], directory)
                        for c in table_types}) if names else raw
    return arrow_to_frame(columns, table_types)


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
    return MatrixStats(n_features, codes, len(names))


class MatrixDecoding:
    """Fills one preallocated float64 matrix with the feature columns in a thread, a row group (and about
    ``_DECODE_BYTES`` of columns) at a time, gathering the stats of each piece while it is in the cache.

    ``matrix`` is usable once :meth:`result` returned (it waits, then gives the
    :class:`~cellspec_sc.validation.matrix_stats.MatrixStats` with ``stored_nonfinite`` set, or raises
    :class:`~cellspec_sc.io.refusals.UndecodableData`); :meth:`cancel` stops the thread at its next
    piece, for a caller that failed. The thread decodes without pyarrow's own threads (for float
    columns they cost more CPU than they save), so the caller's core stays free for the cells table
    and its checks, and a third thread hashes the file.
    """

    def __init__(self, path: Path, handle: pq.ParquetFile, feature_ids: list[str], stats: MatrixStats,
                 directory: Path | str, layout: str = "C"):
        meta, file = handle.metadata, path.name
        self.matrix = empty_matrix(meta.num_rows, len(feature_ids), layout)
        self._feature_ids, self._stats, self._directory, self._file = feature_ids, stats, directory, file
        self._stop = threading.Event()
        offsets = np.cumsum([0] + [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]).tolist()
        pieces = [(index, offsets[index], offsets[index + 1], first, names) for index in range(meta.num_row_groups)
                  for first, names in _column_batches(feature_ids, offsets[index + 1] - offsets[index])]
        workers = max(1, min(len(pieces), DECODE_THREADS))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="parquet-decode")
        self._bar = progress(meta.num_rows, f"reading {file}", size=self.matrix.size)
        bar = self._bar.__enter__()
        try:
            self._futures = [pool.submit(self._fill, handle if k == 0 else pq.ParquetFile(path, metadata=meta),
                                         pieces[k::workers], stats if k == 0 else stats.empty_like(), bar)
                             for k in range(workers)]
        finally:
            pool.shutdown(wait=False)

    def result(self) -> MatrixStats:
        try:
            parts = [future.result() for future in self._futures]
        except BaseException:
            self.cancel()
            raise
        finally:
            self._bar.__exit__(None, None, None)
        stats, nulls = parts[0]
        for other, other_nulls in parts[1:]:
            stats.merge(other)
            nulls += other_nulls
        stats.stored_nonfinite = _stored_nan(stats, nulls, self._feature_ids)
        return stats

    def cancel(self) -> None:
        self._stop.set()

    def _fill(self, handle: pq.ParquetFile, pieces: list[tuple[int, int, int, int, list[str]]], stats: MatrixStats,
              bar: Any) -> tuple[MatrixStats, np.ndarray]:
        nulls = np.zeros(len(self._feature_ids), dtype=np.int64)
        try:
            for index, start, stop, first, names in pieces:
                if self._stop.is_set():
                    raise CancelledError(f"decoding {self._file} was cancelled")
                piece = handle.read_row_group(index, columns=names, use_threads=False)
                _place(piece, self.matrix[start:stop], first, nulls, stats, start)
                bar.update((stop - start) * len(names) / len(self._feature_ids))
        except (pa.ArrowException, OSError) as err:
            raise UndecodableData(self._directory, self._file, f"Parquet data cannot be decoded: {err}") from None
        return stats, nulls


def _stored_nan(stats: MatrixStats, nulls: np.ndarray, feature_ids: list[str] | tuple[str, ...]) -> dict[str, int]:
    """NaN each column stores as a number rather than null: in memory both are NaN, the stats count
    every NaN and Arrow counted the nulls."""
    stored = stats.nan - nulls
    return {feature_ids[j]: int(stored[j]) for j in np.flatnonzero(stored)}


def _column_batches(feature_ids: list[str], n_rows: int) -> list[tuple[int, list[str]]]:
    """(first column, names) of the column batches of a row group: about ``_DECODE_BYTES`` each.

    A file written elsewhere with one huge row group (pyarrow's default is 1M rows) is decoded a few
    columns at a time, so the process never holds a second copy of the matrix.
    """
    step = max(1, _DECODE_BYTES // max(8 * n_rows, 1))
    return [(first, feature_ids[first:first + step]) for first in range(0, len(feature_ids), step)]


def fill_row_group(handle: pq.ParquetFile, index: int, feature_ids: list[str], target: np.ndarray,
                   nulls: np.ndarray, stats: MatrixStats | None = None) -> int:
    """Decode the feature columns of row group ``index`` into the first rows of ``target``.

    Adds each column's null count to ``nulls`` and the values to ``stats`` (rows counted from the
    row group's start); returns the row group's row count.
    """
    n = handle.metadata.row_group(index).num_rows
    for first, names in _column_batches(feature_ids, n):
        _place(_read_piece(handle, index, names), target[:n], first, nulls, stats)
    return n


def _read_piece(handle: pq.ParquetFile, index: int, names: list[str]) -> pa.Table:
    """Columns ``names`` of row group ``index``; pyarrow's threads only for long columns (for short
    ones, as in a table of a few cells and 100,000 features, a task per column costs more than it
    decodes)."""
    long_columns = handle.metadata.row_group(index).num_rows >= _THREADED_ROWS
    return handle.read_row_group(index, columns=names, use_threads=long_columns)


def _place(decoded: pa.Table, target: np.ndarray, first: int, nulls: np.ndarray,
           stats: MatrixStats | None = None, row: int = 0) -> None:
    """Copy decoded feature columns into columns ``first:`` of ``target`` in cache-sized row blocks.

    The stats (``row``: where ``target`` starts in the matrix) are taken from each decoded column
    while it is still contiguous (1-D reductions per image run), or, when the rows' images are
    interleaved, from each row block while it is in the cache; null counts are added to ``nulls``.
    """
    n, k = decoded.num_rows, decoded.num_columns
    nulls[first:first + k] += [column.null_count for column in decoded.columns]
    block = target[:, first:first + k]
    if n < _THREADED_ROWS:  # short columns: one conversion in Arrow, not a numpy array per column
        block[:] = _row_major(decoded)
        if stats is not None:
            stats.add(row, block, first)
        return
    values = [_float_values(decoded.column(j), n) for j in range(k)]
    runs = stats.image_runs(row, n) if stats is not None else None
    if runs is not None:
        for j, column in enumerate(values):
            stats.add_column(row, first + j, column, runs)  # type: ignore[union-attr]
    if block.strides[0] == block.itemsize:  # columns contiguous (read(layout="F")): one copy per column
        for j, column in enumerate(values):
            block[:, j] = column
        if stats is not None and runs is None:
            stats.add(row, block, first)
        return
    rows = cache_rows(k)
    for start in range(0, n, rows):
        piece = block[start:start + rows]
        np.stack([v[start:start + rows] for v in values], axis=1, out=piece)
        if stats is not None and runs is None:
            stats.add(row + start, piece, first)


def _row_major(decoded: pa.Table) -> np.ndarray:
    """Decoded float64 (or all-null) columns as one row-major matrix, null as NaN (converted by Arrow)."""
    if any(kind != pa.float64() for kind in decoded.schema.types):  # all-null columns are typed null
        decoded = pa.table([c if c.type == pa.float64() else pa.nulls(len(c), pa.float64()) for c in decoded.columns],
                           schema=pa.schema([(name, pa.float64()) for name in decoded.column_names]))
    batches = decoded.combine_chunks().to_batches()
    if not batches or not decoded.num_columns:
        return np.full((decoded.num_rows, decoded.num_columns), np.nan)
    return np.asarray(batches[0].to_tensor(null_to_nan=True, row_major=True))


def _float_values(column: pa.ChunkedArray, n: int) -> np.ndarray:
    """A decoded float64 column as numpy, null as NaN; an all-null column (type null) as NaN."""
    if column.type == pa.float64():
        return column.to_numpy(zero_copy_only=False)
    return np.full(n, np.nan)


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
    except (pa.ArrowException, OSError) as err:
        raise UndecodableData(directory, file, f"row group {index} cannot be decoded: {err}") from None
    stored = _stored_nan(stats, nulls, feature_ids)
    if stored:
        name, count = next(iter(stored.items()))
        raise StoredNonFinite(directory, file, f"row group {index}: feature column {name!r} stores {count} NaN "
                                               f"value(s) as numbers, not null")
    return block
