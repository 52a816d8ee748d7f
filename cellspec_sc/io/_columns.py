"""Columns of the data files: spec types <-> Arrow types, and filling the measurement matrix.

Shared by the Parquet and TSV variants. Writing turns pandas columns into Arrow
arrays (NA as null); reading checks each stored column against its declared
type, converts cells columns to the canonical pandas dtypes and copies feature
columns batch by batch into one preallocated float64 matrix.

>>> import pyarrow as pa
>>> ARROW_TYPES["integer"]
DataType(int32)
>>> conform(pa.array([1, None], pa.int64()), "integer", "cells.parquet", "n", ".").type
DataType(int32)
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc.io._refusals import ColumnMismatch, UndecodableData, Unwritable
from cellspec_sc.model import cache_rows, empty_matrix
from cellspec_sc.spec import PANDAS_DTYPES, SPEC_TYPES, as_spec_type, declared_type, spec_type_of

# What pyarrow raises on a damaged data file: its own errors, the OS's, and UnicodeDecodeError for a column
# name in a Parquet footer that is not UTF-8 (pyarrow decodes the names as it opens the file).
DAMAGED_DATA_ERRORS = (pa.ArrowException, OSError, UnicodeDecodeError)


def damage_text(err: BaseException) -> str:
    """What a refusal says of an error in :data:`DAMAGED_DATA_ERRORS`.

    >>> damage_text(UnicodeDecodeError("utf-8", b"\\xe9mg1", 0, 1, "invalid continuation byte"))
    "a name in the file's footer is not UTF-8 (b'\\\\xe9': invalid continuation byte)"
    """
    if isinstance(err, UnicodeDecodeError):
        return f"a name in the file's footer is not UTF-8 ({err.object[err.start:err.end]!r}: {err.reason})"
    return str(err)


ARROW_TYPES = {"character": pa.string(), "double": pa.float64(), "integer": pa.int32(), "logical": pa.bool_()}
_PANDAS_OF_ARROW = {pa.string(): PANDAS_DTYPES["character"], pa.int32(): PANDAS_DTYPES["integer"],
                    pa.bool_(): PANDAS_DTYPES["logical"]}


class Decoded(NamedTuple):
    """What a data file reader returns: the table columns, the matrix, NaN stored as numbers per
    feature, and the matrix stats gathered while decoding (None when the reader gathered none; a Parquet
    reader told not to wait gives the ``MatrixDecoding`` still filling the matrix, whose ``result()`` they are)."""

    frame: pd.DataFrame
    matrix: Any
    stored_nan: dict[str, int]
    stats: Any = None


def column_types_of(frame: pd.DataFrame, table: str, directory: Path | str) -> list[dict[str, str]]:
    """``[{"name", "type"}]`` for every column: the spec's declared type, else the type the column holds."""
    out = []
    for name in frame.columns:
        if not isinstance(name, str) or not name:
            raise Unwritable(directory, table, f"column name {name!r} is not a non-empty string")
        spec_type = declared_type(table, name) or spec_type_of(frame[name])
        if spec_type is None:
            raise Unwritable(directory, table, f"column {name!r} has dtype {frame[name].dtype}, which is none "
                                               f"of {', '.join(SPEC_TYPES)}")
        out.append({"name": name, "type": spec_type})
    return out


def arrow_column(series: pd.Series, spec_type: str, table: str, directory: Path | str) -> pa.Array:
    """One pandas column as an Arrow array of its spec type; NA (including NaN in doubles) becomes null."""
    try:
        values = as_spec_type(series, spec_type)
        if spec_type == "double":
            return pa.array(values.to_numpy(dtype=np.float64), type=pa.float64(), from_pandas=True)
        array = pa.array(values, type=ARROW_TYPES[spec_type], from_pandas=True)
        # Arrow-backed pandas columns convert to a ChunkedArray (of no chunks when read from a 0-row file)
        return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as err:
        raise Unwritable(directory, table, f"column {series.name!r} cannot be stored as {spec_type}: {err}") from None


def conform(array: pa.Array | pa.ChunkedArray, spec_type: str, file: str, name: str, directory: Path | str):
    """A stored column as the Arrow type of ``spec_type``; refuses a stored type that does not fit.

    Accepted: the exact type, an all-null column, large/view strings and dictionary-encoded strings
    for character, any integer type whose values fit int32 for integer.
    """
    target = ARROW_TYPES[spec_type]
    stored = array.type
    if spec_type == "character":
        check_utf8(array, file, name, directory)
    if stored == target:
        return array
    if pa.types.is_dictionary(stored):
        stored = stored.value_type
    fits = (pa.types.is_null(stored)
            or (spec_type == "character" and (pa.types.is_string(stored) or pa.types.is_large_string(stored)
                                              or pa.types.is_string_view(stored)))
            or (spec_type == "integer" and pa.types.is_integer(stored)))
    if not fits:
        raise ColumnMismatch(directory, file, f"column {name!r} is stored as {array.type}; column_types says "
                                              f"{spec_type} ({target})")
    try:
        return array.cast(target, safe=True)
    except pa.ArrowException as err:
        raise ColumnMismatch(directory, file, f"column {name!r} does not fit {spec_type}: {err}") from None


def check_utf8(array: pa.Array | pa.ChunkedArray, file: str, name: str, directory: Path | str) -> None:
    """Refuse text that is not UTF-8 (Parquet readers do not check it; pandas would fail deep inside pyarrow).

    >>> bad = pa.Array.from_buffers(pa.string(), 2, pa.array([b"ok", b"\\xffmg1"]).buffers())
    >>> check_utf8(bad, "cells.parquet", "image_id", "/d")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    cellspec_sc.io._refusals.UndecodableData: /d: cells.parquet: column 'image_id', row 1 (counting from 0):
    text that is not UTF-8 (b'\\xffmg1') [rule: cells and adjacency files decode as Parquet or as the TSV variant]
    """
    start = 0
    for chunk in array.chunks if isinstance(array, pa.ChunkedArray) else [array]:
        try:
            chunk.validate(full=True)
        except pa.ArrowInvalid as err:
            row, raw = _first_not_utf8(chunk)
            where = f"row {start + row} (counting from 0): text that is not UTF-8 ({raw!r})" if row >= 0 else \
                f"cannot be decoded: {err}"
            raise UndecodableData(directory, file, f"column {name!r}, {where}") from None
        start += len(chunk)


def _first_not_utf8(chunk: pa.Array) -> tuple[int, bytes | None]:
    """(row, bytes) of the first value of a text array (plain or dictionary-encoded) that is not UTF-8; (-1, None)
    when every value is (the array is broken some other way). Runs only on a chunk that failed validation."""
    values = chunk.dictionary if pa.types.is_dictionary(chunk.type) else chunk
    as_bytes = {pa.string(): pa.binary(), pa.large_string(): pa.large_binary()}.get(values.type, pa.binary_view())
    bad = next(((k, v) for k, v in enumerate(values.view(as_bytes).to_pylist()) if v is not None and not _is_utf8(v)),
               None)
    if bad is None:
        return -1, None
    if values is chunk:
        return bad
    return pc.index(chunk.indices, bad[0]).as_py(), bad[1]


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def arrow_to_frame(table: pa.Table, types: list[dict[str, str]]) -> pd.DataFrame:
    """Arrow columns (already conformed) as a pandas frame in canonical dtypes, columns in ``types`` order."""
    frame = table.to_pandas(types_mapper=_PANDAS_OF_ARROW.get, split_blocks=True, self_destruct=False)
    out = {c["name"]: as_spec_type(frame[c["name"]], c["type"]) for c in types}
    return pd.DataFrame(out, index=pd.RangeIndex(table.num_rows), columns=[c["name"] for c in types])


class MatrixFiller:
    """Copies feature columns of successive record batches (the TSV reader's) into one float64 matrix.

    Each batch is kept as one block and :meth:`finish` moves the blocks into a fresh matrix
    (:func:`~cellspec_sc.model._memory.empty_matrix`), dropping each block as soon as it is copied (its pages
    are committed on first write), so the process never holds two full copies. Values stored as NaN (not null) are
    counted per feature, because in memory they would be indistinguishable from NA. (The Parquet reader
    knows its row count and fills a preallocated matrix instead: ``parquet_io.fill_row_group``.)

    >>> import pyarrow as pa
    >>> f = MatrixFiller(["a"])
    >>> f.add(pa.record_batch([pa.array([1.0, float("nan")])], names=["a"]))
    >>> f.finish().tolist(), f.stored_nan
    ([[1.0], [nan]], {'a': 1})
    """

    def __init__(self, feature_ids: list[str]):
        self.feature_ids = feature_ids
        self.stored_nan: dict[str, int] = {}
        self._rows = 0
        self._blocks: list[np.ndarray] = []

    def add(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Append the rows of ``batch`` (every feature column)."""
        target = np.empty((batch.num_rows, len(self.feature_ids)), dtype=np.float64)
        self._blocks.append(target)
        for j, name in enumerate(self.feature_ids):
            self._copy(batch.column(name), name, target[:, j])
        self._rows += batch.num_rows

    def _copy(self, column: pa.Array | pa.ChunkedArray, name: str, target: np.ndarray) -> None:
        values = column.to_numpy(zero_copy_only=False) if column.type == pa.float64() \
            else np.full(len(column), np.nan)  # an all-null column (conformed earlier)
        # A sum is NaN only if a value is NaN (or inf - inf, also after an overflow), so most columns skip
        # the exact count; the overflow itself is expected and says nothing to the user.
        with np.errstate(over="ignore", invalid="ignore"):
            suspect = column.null_count or np.isnan(np.add.reduce(values))
        nan = int(np.count_nonzero(np.isnan(values))) - column.null_count if suspect else 0
        if nan:
            self.stored_nan[name] = self.stored_nan.get(name, 0) + nan
        target[:] = values

    def finish(self) -> np.ndarray:
        matrix = empty_matrix(self._rows, len(self.feature_ids))
        start = 0
        while self._blocks:
            block = self._blocks.pop(0)
            matrix[start:start + len(block)] = block
            start += len(block)
            del block
        return matrix


def batch_ranges(n_rows: int, n_columns: int, target_bytes: int = 1 << 26) -> Iterable[tuple[int, int]]:
    """Row ranges of about ``target_bytes`` of doubles each (at least one, even for 0 rows)."""
    step = max(1024, target_bytes // max(8 * n_columns, 8))
    starts = range(0, n_rows, step) if n_rows else [0]
    return [(s, min(s + step, n_rows)) for s in starts]


def file_columns(frame: pd.DataFrame, types: list[dict[str, str]], feature_ids: list[str], table: str,
                 directory: Path | str) -> tuple[list[pa.Array], pa.Schema]:
    """Arrow arrays of the table columns and the schema of the whole file (table columns, then features)."""
    names = [c["name"] for c in types] + list(feature_ids)
    dup = first_duplicate(names)
    if dup is not None:
        raise Unwritable(directory, table, f"column name {dup!r} is used twice (cells columns and feature ids "
                                           "share one file)")
    arrays = [arrow_column(frame[c["name"]], c["type"], table, directory) for c in types]
    schema = pa.schema([pa.field(c["name"], ARROW_TYPES[c["type"]]) for c in types] +
                       [pa.field(f, pa.float64()) for f in feature_ids])
    return arrays, schema


def feature_arrays(matrix: Any, start: int, stop: int, buffer: np.ndarray) -> list[pa.Array]:
    """Feature columns of rows ``start:stop`` as Arrow float64 arrays (NaN, i.e. NA, as null).

    The rows are transposed into ``buffer`` (features x at least ``stop - start``, reused from one
    call to the next so its pages are touched once) in cache-sized tiles, so each column is
    contiguous and becomes an Arrow array without another copy; a validity bitmap is built only for
    columns that hold NaN. The arrays view ``buffer``: use them before the next call.
    """
    block = np.asarray(matrix[start:stop], dtype=np.float64)
    columns = buffer[:, :block.shape[0]]
    tile = cache_rows(block.shape[1])
    for first in range(0, block.shape[0], tile):
        columns[:, first:first + tile] = block[first:first + tile].T
    has_nan = np.isnan(columns.sum(axis=1))  # a sum is NaN only if a value is NaN (or inf - inf)
    return [pa.array(col, type=pa.float64(), mask=np.isnan(col)) if suspect else pa.array(col, type=pa.float64())
            for col, suspect in zip(columns, has_nan, strict=True)]


def first_duplicate(names: Iterable[Any]) -> Any:
    """The first name seen a second time, or None (in one pass, so wide tables stay linear).

    >>> first_duplicate(["a", "b", "b", "a"]), first_duplicate(["a"])
    ('b', None)
    """
    seen: set[Any] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def check_file_columns(stored: list[str], types: list[dict[str, str]], feature_ids: list[str],
                       directory: Path | str, file: str) -> list[dict[str, str]]:
    """Compare the columns a file stores with ``column_types``; returns the non-feature column types.

    Every listed column must be stored and every stored column listed; the last entries are the
    dictionary's feature ids in order, typed double.
    """
    listed = [c["name"] for c in types]
    for names, what in ((stored, "the file"), (listed, f"column_types for {file}")):
        dup = first_duplicate(names)
        if dup is not None:
            raise ColumnMismatch(directory, file, f"{what} names column {dup!r} twice")
    stored_set, listed_set = set(stored), set(listed)
    missing = [n for n in listed if n not in stored_set]
    if missing:
        raise ColumnMismatch(directory, file, f"column {missing[0]!r} listed in column_types is missing from the file"
                             + (f" ({len(missing)} missing)" if len(missing) > 1 else ""))
    unlisted = [n for n in stored if n not in listed_set]
    if unlisted:
        raise ColumnMismatch(directory, file, f"column {unlisted[0]!r} is stored but not listed in column_types")
    n_table = len(types) - len(feature_ids)
    tail = types[n_table:] if feature_ids else []
    if n_table < 0 or [c["name"] for c in tail] != list(feature_ids):
        raise ColumnMismatch(directory, file, "column_types must end with one column per dictionary feature_id, "
                                              "in dictionary order")
    wrong = next((c for c in tail if c["type"] != "double"), None)
    if wrong:
        raise ColumnMismatch(directory, file, f"feature column {wrong['name']!r} is typed {wrong['type']}, "
                                              "not double")
    return types[:n_table]
