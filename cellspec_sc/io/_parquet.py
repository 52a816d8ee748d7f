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

Reading: one float64 matrix filled with the feature columns of a Parquet file, piece by piece.

A piece is one row group and about ``_DECODE_BYTES`` of its feature columns: decoded by pyarrow
without its own threads, copied into the preallocated matrix and summarised into
:class:`~cellspec_sc.model._matrix_stats.MatrixStats` while it is still in the cache.
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

Writing for others: a Parquet file encoded in memory, in a buffer each thread keeps and reuses, for writers
that hash and write the bytes themselves.

``pyarrow.parquet.ParquetWriter`` hands a Python file object every piece it writes
as a new ``bytes`` (a copy: for a 100-feature row group, a hundred pieces of about
1 MB). Where malloc gives large blocks back to the system at once, as in dask's
worker processes (``MALLOC_TRIM_THRESHOLD_``), each of those copies is fresh
memory: a page fault and the zeroing of every page, about as much kernel time as
the encoding's own. :func:`encoded_parquet` encodes into a native buffer instead
(``pyarrow.FixedSizeBufferWriter``) that the thread keeps for its next file, so
after the first file no page is new; the caller then hashes and writes the bytes
(:class:`~cellspec_sc.io._hashing.HashingFile`). A file that does not fit gets a
bigger buffer and is encoded again. A new buffer has room for a file a quarter
bigger than the one it is made for: the parts of a cohort differ by a few bytes,
and a buffer that grew by those bytes would be all new pages again (on the
2-core VM, 26,000 page faults and 0.07-0.4 s of kernel time per 130 MB part, up to
7 times per worker in a 40-directory write). The memory this costs: the thread
keeps one buffer of about its largest file until it ends (or
:func:`release_buffer`); the room beyond it is address space, no memory, until
a file uses it.

>>> import pyarrow as pa, pyarrow.parquet as pq
>>> view = encoded_parquet(pa.table({"id": ["a", "b"], "v": [1.5, None]}), use_dictionary=["id"])
>>> bytes(view[:4]), bytes(view[-4:])
(b'PAR1', b'PAR1')
>>> pq.read_table(pa.BufferReader(bytes(view))).column("v").to_pylist()
[1.5, None]
"""

from __future__ import annotations

import mmap
import os
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from cellspec_sc._background import in_background
from cellspec_sc.errors import needs_extra
from cellspec_sc.io._bounded import DEFAULT_MAX_INFLATION, INFLATION_FLOOR_BYTES
from cellspec_sc.io._columns import (
    DAMAGED_DATA_ERRORS,
    Decoded,
    arrow_to_frame,
    batch_ranges,
    check_file_columns,
    conform,
    damage_text,
    feature_arrays,
    file_columns,
)
from cellspec_sc.io._hashing import FollowingHash
from cellspec_sc.io._refusals import ChangedSinceRead, ColumnMismatch, FileTooLarge, StoredNonFinite, UndecodableData
from cellspec_sc.io._storage import RemoteFile, readable, size_of
from cellspec_sc.model import MatrixStats, arrow_first_seen_codes, cache_rows, empty_matrix, first_seen_codes
from cellspec_sc.progress import progress
from cellspec_sc.spec import spec_type_of

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
    the :class:`~cellspec_sc.model._matrix_stats.MatrixStats` of the matrix, gathered while decoding it.

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
        handle = pq.ParquetFile(readable(path))
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
    size = size_of(path)
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
    types of the table columns (see :func:`~cellspec_sc.io._columns.check_file_columns`)."""
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
    with needs_extra("lazy", "cellspec_sc.read(lazy=True)"):
        import dask
        import dask.array as da

    remote = isinstance(path, RemoteFile)
    meta = pq.ParquetFile(readable(path)).metadata
    stamp = path.stamp() if remote else _file_stamp(path)
    blocks = []
    for index in range(meta.num_row_groups):
        rows = meta.row_group(index).num_rows
        load = dask.delayed(_remote_row_group_matrix, pure=True)(path, index, tuple(feature_ids), stamp,
                                                                  str(directory)) if remote else \
            dask.delayed(_row_group_matrix, pure=True)(str(path), index, tuple(feature_ids), stamp, str(directory))
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


def _remote_row_group_matrix(remote: RemoteFile, index: int, feature_ids: tuple[str, ...],
                             stamp: tuple[int, str] | None, directory: str) -> np.ndarray:
    """:func:`_row_group_matrix` of an object on a store: ranged reads of the row group, refused when the object's
    size or ETag is not the one read (hashed) when the directory was opened, before or after."""
    def check() -> None:
        if remote.stamp() != stamp:
            raise ChangedSinceRead(directory, remote.name, "changed or was removed after read(lazy=True); read the "
                                                           "directory again")

    check()
    with remote.open() as opened:  # exact ranged reads, coalesced per row group by pre-buffering
        block = _decode_block(opened, index, feature_ids, directory, remote.name, pre_buffer=True)
    check()
    return block


def _decode_block(opened: Any, index: int, feature_ids: tuple[str, ...], directory: str, file: str,
                  pre_buffer: bool = False) -> np.ndarray:
    try:
        handle = pq.ParquetFile(opened, pre_buffer=pre_buffer)
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


# decoded feature values per piece: ~8 MB (bigger pieces left up to 250 MB of freed Arrow buffers resident on a
# first read)
_DECODE_BYTES = 1 << 23
# threads filling the matrix; one more core hashes the file and checks the cells
DECODE_THREADS = max(1, (os.cpu_count() or 2) - 1)
_THREADED_ROWS = 1 << 12  # row groups at least this long are decoded with pyarrow's threads, column by column

Piece = tuple[int, int, int, int, list[str]]  # row group, first row, stop row, first column, column names


class MatrixDecoding:
    """Fills one preallocated float64 matrix with the feature columns in threads, a row group (and about
    ``_DECODE_BYTES`` of columns) at a time, gathering the stats of each piece while it is in the cache.

    The pieces are taken in file order by whoever is free: ``DECODE_THREADS`` threads started here and,
    in :meth:`result`, the caller (which has finished its own work by then: ``read`` checks the cells
    meanwhile), so no core waits while pieces are left. ``matrix`` is usable once :meth:`result`
    returned (it gives the :class:`~cellspec_sc.model._matrix_stats.MatrixStats` with
    ``stored_nonfinite`` set, or raises :class:`~cellspec_sc.io._refusals.UndecodableData`);
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

    def _fill(self, stats: MatrixStats, handle: pq.ParquetFile | None,
              last: bool = False) -> tuple[MatrixStats, np.ndarray]:
        nulls = np.zeros(len(self._feature_ids), dtype=np.int64)
        try:
            while (piece := self._take(last)) is not None:
                if self._stop.is_set():
                    raise CancelledError(f"decoding {self._file} was cancelled")
                index, start, stop, first, names = piece
                handle = handle or pq.ParquetFile(readable(self._path), metadata=self._meta)
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


_MARGIN = 1 << 20  # footer, page headers, statistics of a small table
ROOM = 1.25  # a new buffer holds a file this much bigger than the one it is made for
_kept = threading.local()


def encoded_parquet(table: pa.Table, **options: Any) -> memoryview:
    """``table`` as one Parquet file of one row group (``ParquetWriter(..., **options)``), as a view of this
    thread's buffer: valid until this thread's next call (copy it to keep it)."""
    need = int(table.nbytes * 1.25) + _MARGIN  # snappy may grow incompressible data by up to 1/6
    while True:
        buffer = _buffer(need)
        sink = pa.FixedSizeBufferWriter(buffer)
        try:
            with pq.ParquetWriter(sink, table.schema, **options) as writer:
                writer.write_table(table, row_group_size=max(table.num_rows, 1))
        except OSError:  # a write into memory only fails when it does not fit
            if len(buffer) > 4 * need:
                raise
            need = 2 * len(buffer)
            continue
        return memoryview(buffer)[:sink.tell()]


def release_buffer() -> None:
    """Give this thread's buffer back to the system (views of it stay valid while they exist)."""
    _kept.__dict__.pop("buffer", None)


def _buffer(size: int) -> pa.Buffer:
    """This thread's buffer, replaced by one of ``ROOM`` x ``size`` bytes (page aligned) when smaller than
    ``size``."""
    buffer = getattr(_kept, "buffer", None)
    if buffer is None or len(buffer) < size:
        release_buffer()
        buffer = _kept.buffer = pa.py_buffer(mmap.mmap(-1, int(size * ROOM)))
    return buffer
