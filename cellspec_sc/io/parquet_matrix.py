"""Filling one float64 matrix with the feature columns of a Parquet file, piece by piece.

A piece is one row group and about ``_DECODE_BYTES`` of its feature columns: decoded by pyarrow
without its own threads, copied into the preallocated matrix and summarised into
:class:`~cellspec_sc.validation.matrix_stats.MatrixStats` while it is still in the cache.
:class:`MatrixDecoding` (``read``) shares the pieces between its threads and, once the caller asks
for the result, the caller; :func:`fill_row_group` decodes one row group (lazy blocks, cohorts).

>>> import cellspec_sc as cs, tempfile, pathlib, pyarrow.parquet as pq
>>> x = cs.example()
>>> path = cs.write(x, pathlib.Path(tempfile.mkdtemp()) / "x") / "cells.parquet"
>>> handle = pq.ParquetFile(path)
>>> decoding = MatrixDecoding(path, handle, x.feature_ids, MatrixStats(len(x.feature_ids)), ".")
>>> stats = decoding.result()
>>> bool((decoding.matrix == x.measurements).all()), stats.stored_nonfinite
(True, {})
"""

from __future__ import annotations

import os
import threading
from collections import deque
from concurrent.futures import CancelledError
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cellspec_sc._background import in_background
from cellspec_sc.io.columns import DAMAGED_DATA_ERRORS
from cellspec_sc.io.refusals import UndecodableData
from cellspec_sc.model.memory import empty_matrix
from cellspec_sc.progress import progress
from cellspec_sc.validation.matrix_stats import MatrixStats, cache_rows

_DECODE_BYTES = 1 << 23  # decoded feature values per piece: ~8 MB (bigger pieces left up to 250 MB of freed Arrow buffers resident on a first read)
DECODE_THREADS = max(1, (os.cpu_count() or 2) - 1)  # threads filling the matrix; one more core hashes the file and checks the cells
_THREADED_ROWS = 1 << 12  # row groups at least this long are decoded with pyarrow's threads, column by column

Piece = tuple[int, int, int, int, list[str]]  # row group, first row, stop row, first column, column names


class MatrixDecoding:
    """Fills one preallocated float64 matrix with the feature columns in threads, a row group (and about
    ``_DECODE_BYTES`` of columns) at a time, gathering the stats of each piece while it is in the cache.

    The pieces are taken in file order by whoever is free: ``DECODE_THREADS`` threads started here and,
    in :meth:`result`, the caller (which has finished its own work by then: ``read`` checks the cells
    meanwhile), so no core waits while pieces are left. ``matrix`` is usable once :meth:`result`
    returned (it gives the :class:`~cellspec_sc.validation.matrix_stats.MatrixStats` with
    ``stored_nonfinite`` set, or raises :class:`~cellspec_sc.io.refusals.UndecodableData`);
    :meth:`cancel` stops the threads at their next piece, for a caller that failed. Pieces are decoded
    without pyarrow's own threads (for float columns they cost more CPU than they save).
    """

    def __init__(self, path: Path, handle: pq.ParquetFile, feature_ids: list[str], stats: MatrixStats,
                 directory: Path | str, layout: str = "C", *, handle_in_use: bool = False):
        meta, file = handle.metadata, path.name
        self.matrix = empty_matrix(meta.num_rows, len(feature_ids), layout)
        self._path, self._meta, self._feature_ids, self._stats = path, meta, feature_ids, stats
        # ``handle`` goes to the first thread, unless the caller still reads the cells table with it
        # (then the caller decodes with it in result()); others open their own when they get a piece
        # (opening costs a schema per handle: about 0.5 s for 100,000 columns).
        self._handle = handle if handle_in_use else None
        self._directory, self._file = directory, file
        self._stop = threading.Event()
        offsets = np.cumsum([0] + [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]).tolist()
        pieces = [(index, offsets[index], offsets[index + 1], first, names) for index in range(meta.num_row_groups)
                  for first, names in _column_batches(feature_ids, offsets[index + 1] - offsets[index])]
        self._pieces, self._taking = deque(pieces), threading.Lock()
        workers = max(1, min(len(pieces), DECODE_THREADS))
        self._bar = progress(meta.num_rows, f"reading {file}", size=self.matrix.size)
        self._progress = self._bar.__enter__()
        self._futures = [in_background(self._fill, stats if k == 0 else stats.empty_like(),
                                       None if k or handle_in_use else handle, name="parquet-decode")
                         for k in range(workers)]

    def result(self) -> MatrixStats:
        try:
            # the caller decodes what is left, from the end: rows far from the threads' (two threads
            # writing the same rows' cache lines would slow each other), then waits for them
            parts = [self._fill(self._stats.empty_like(), self._handle, last=True)]
            parts += [future.result() for future in self._futures]
        except BaseException:
            self.cancel()
            raise
        finally:
            self._bar.__exit__(None, None, None)
        stats, nulls = parts[1]
        for other, other_nulls in parts[:1] + parts[2:]:
            stats.merge(other)
            nulls += other_nulls
        stats.stored_nonfinite = stored_nan(stats, nulls, self._feature_ids)
        return stats

    def cancel(self) -> None:
        self._stop.set()

    @property
    def image_codes(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The image codes of the stats being gathered (see :attr:`MatrixStats.image_codes`)."""
        return self._stats.image_codes

    def _take(self, last: bool) -> Piece | None:
        with self._taking:
            return (self._pieces.pop() if last else self._pieces.popleft()) if self._pieces else None

    def _fill(self, stats: MatrixStats, handle: pq.ParquetFile | None, last: bool = False) -> tuple[MatrixStats, np.ndarray]:
        nulls = np.zeros(len(self._feature_ids), dtype=np.int64)
        try:
            while (piece := self._take(last)) is not None:
                if self._stop.is_set():
                    raise CancelledError(f"decoding {self._file} was cancelled")
                index, start, stop, first, names = piece
                handle = handle or pq.ParquetFile(self._path, metadata=self._meta)
                decoded = handle.read_row_group(index, columns=names, use_threads=False)
                _place(decoded, self.matrix[start:stop], first, nulls, stats, start)
                self._progress.update((stop - start) * len(names) / len(self._feature_ids))
        except DAMAGED_DATA_ERRORS as err:
            raise UndecodableData(self._directory, self._file, f"Parquet data cannot be decoded: {err}") from None
        return stats, nulls


def stored_nan(stats: MatrixStats, nulls: np.ndarray, feature_ids: list[str] | tuple[str, ...]) -> dict[str, int]:
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
    by_column = stats is not None and _stats_by_column(stats, values, n, row, first)
    if block.strides[0] == block.itemsize:  # columns contiguous (read(layout="F")): one copy per column
        for j, column in enumerate(values):
            block[:, j] = column
        if stats is not None and not by_column:
            stats.add(row, block, first)
        return
    _by_row_blocks(values, stats if not by_column else None, row, first, block)


def _stats_by_column(stats: MatrixStats, values: list[np.ndarray], n: int, row: int, first: int) -> bool:
    """Add each decoded column to ``stats`` as it is (1-D, per image run); False (nothing added) when the
    rows' images are interleaved, and the stats must be taken from row blocks."""
    runs = stats.image_runs(row, n)
    if runs is None:
        return False
    for j, column in enumerate(values):
        stats.add_column(row, first + j, column, runs)
    return True


def _by_row_blocks(values: list[np.ndarray], stats: MatrixStats | None, row: int, first: int,
                   target: np.ndarray | None = None) -> None:
    """The columns ``values`` as row-major row blocks of about 1 MB, each added to ``stats`` while it is in
    the cache: written into ``target`` (rows x len(values)), or into one reused block when there is none."""
    n, k = len(values[0]), len(values)
    rows = cache_rows(k)
    scratch = np.empty((min(rows, n), k)) if target is None else None
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        piece = target[start:stop] if target is not None else scratch[:stop - start]
        np.stack([v[start:stop] for v in values], axis=1, out=piece)
        if stats is not None:
            stats.add(row + start, piece, first)


def gather_row_group_stats(handle: pq.ParquetFile, index: int, feature_ids: list[str], nulls: np.ndarray,
                           stats: MatrixStats, row: int = 0) -> int:
    """What :func:`fill_row_group` adds to ``nulls`` and ``stats`` (rows counted from ``row``), without a
    matrix to fill: each column batch's stats are taken while it is in the cache and the batch is dropped
    (validation of a directory it does not load); returns the row group's row count.

    >>> import cellspec_sc as cs, tempfile, pathlib, pyarrow.parquet as pq
    >>> x = cs.example()
    >>> handle = pq.ParquetFile(cs.write(x, pathlib.Path(tempfile.mkdtemp()) / "x") / "cells.parquet")
    >>> mine, whole = MatrixStats(len(x.feature_ids)), MatrixStats(len(x.feature_ids))
    >>> n = gather_row_group_stats(handle, 0, x.feature_ids, np.zeros(len(x.feature_ids), np.int64), mine)
    >>> whole.add(0, x.measurements[:n])
    >>> bool((mine.nan == whole.nan).all() and (mine.negative == whole.negative).all())
    True
    """
    n = handle.metadata.row_group(index).num_rows
    for first, names in _column_batches(feature_ids, n):
        decoded = _read_piece(handle, index, names)
        nulls[first:first + len(names)] += [column.null_count for column in decoded.columns]
        if n < _THREADED_ROWS:
            stats.add(row, _row_major(decoded), first)
            continue
        values = [_float_values(decoded.column(j), n) for j in range(len(names))]
        if not _stats_by_column(stats, values, n, row, first):
            _by_row_blocks(values, stats, row, first)
    return n


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
