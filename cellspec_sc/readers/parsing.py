"""Parse an export with pyarrow's CSV reader straight into the float64 measurement matrix.

:func:`stream_columns` reads the file batch by batch, converts NaN and infinities to NA and counts them,
keeps only the rows an adapter asks for, and turns every parse failure into an
:class:`~cellspec_sc.InputError` naming file, line and column.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from cellspec_sc.errors import InputError
from cellspec_sc.model.memory import empty_matrix
from cellspec_sc.readers.headers import SEPARATORS, Header
from cellspec_sc.readers.pieces import data_start, line_pieces, ordered_map, piece_bytes
from cellspec_sc.readers.text_checks import check_text
from cellspec_sc.readers.values import arrow_objects


@dataclass
class Parsed:
    """A parsed export, rows already filtered: text and number columns, and the measurement matrix.

    ``rows`` holds the 0-based data-row index in the file of every kept row (None when every row was
    kept), so errors can name file lines (data row i is line i + 2). Text columns are held as Arrow
    string arrays; :meth:`text` turns one into an object array on first use.
    """

    rows_read: int
    rows: np.ndarray | None
    text_columns: dict[str, pa.ChunkedArray]
    number_columns: dict[str, np.ndarray]
    unfiltered: dict[str, pa.ChunkedArray]
    matrix: np.ndarray
    counts: dict[str, int]

    def __post_init__(self) -> None:
        self._objects: dict[str, np.ndarray] = {}

    @property
    def n(self) -> int:
        return int(self.matrix.shape[0])

    def text(self, name: str) -> np.ndarray:
        """A text column of the kept rows as an object array (None for missing)."""
        if name not in self._objects:
            self._objects[name] = arrow_objects(self.text_columns[name])
        return self._objects[name]

    def arrow(self, name: str) -> pa.ChunkedArray:
        """A text column of the kept rows as Arrow strings (null for missing), without Python objects."""
        return self.text_columns[name]

    def whole(self, name: str) -> np.ndarray:
        """An ``unfiltered`` text column (every data row) as an object array."""
        return arrow_objects(self.unfiltered[name])

    def number(self, name: str) -> np.ndarray:
        """A float64 column of the kept rows (NaN for missing)."""
        return self.number_columns[name]


# Bytes read from the start of the file to estimate its number of rows.
SAMPLE_BYTES = 1 << 20


def stream_columns(header: Header, *, text: Sequence[str], numbers: Sequence[str], matrix: Sequence[str],
                   keep: tuple[str, Sequence[str]] | None = None, unfiltered: Sequence[str] = ()) -> Parsed:
    """Parse the file with pyarrow's CSV reader, in pieces on every core, straight into the measurement matrix.

    ``text`` columns are read as strings (kept as Arrow arrays), every other column as float64 (empty
    fields are null). ``keep=(column, values)`` keeps only rows whose text ``column`` is one of
    ``values``; ``unfiltered`` text columns are also returned for every row. The file is cut into pieces
    at line boundaries, parsed on every core and put together in file order
    (:func:`~cellspec_sc.readers.pieces.ordered_map`). The matrix (kept rows x
    ``matrix`` columns, C order) is allocated once, with room for the rows estimated from the first
    megabyte of the file (pages never written cost no memory), and only grown if the estimate was
    short, so peak memory stays close to the result instead of holding a whole Arrow table beside it.
    NaN and infinities become NaN (NA) and are counted: ``na_converted`` (NaN written by the tool),
    ``nonfinite_converted`` (infinities) and ``missing_in_source`` (empty fields), all over kept rows.
    A parse failure becomes an InputError that names file, line and column. When rows are filtered,
    a value that is not a number in a row that is not kept does not matter: on such a failure the file
    is parsed again with numbers read as text and converted after the filter.
    """
    try:
        return _stream(header, text=text, numbers=numbers, matrix=matrix, keep=keep, unfiltered=unfiltered,
                       numbers_as_text=False)
    except _ConversionFailed as failed:
        if keep is None:
            raise _located_error(header, failed.message) from None
    return _stream(header, text=text, numbers=numbers, matrix=matrix, keep=keep, unfiltered=unfiltered,
                   numbers_as_text=True)


class _ConversionFailed(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def read_options(header: Header, **options) -> pacsv.ReadOptions:
    """pyarrow ReadOptions for ``header``'s file, transcoding when it is not UTF-8."""
    if header.encoding != "utf-8":
        options["encoding"] = header.encoding
    return pacsv.ReadOptions(**options)


@dataclass(frozen=True)
class _Plan:
    """What every piece of one parse needs: the convert options and which columns go where."""

    header: Header
    convert: pacsv.ConvertOptions
    positions: list[int]
    text: Sequence[str]
    numbers: Sequence[str]
    unfiltered: Sequence[str]
    keep: tuple[str, Sequence[str]] | None
    numbers_as_text: bool


@dataclass
class _Piece:
    """One parsed piece: its kept rows (``sel``: positions among the piece's rows, None for all) as a
    C-order block of the matrix, its text and number columns, and the NA counts of the block."""

    rows: int
    sel: np.ndarray | None
    block: np.ndarray
    text: dict[str, pa.Array]
    numbers: dict[str, np.ndarray]
    whole: dict[str, pa.Array]
    counts: dict[str, int]


class _PieceUnparsable(Exception):
    """A value of a kept row is not a number (found after the filter); ``row`` counts within the piece."""

    def __init__(self, column: str, value: str, row: int) -> None:
        super().__init__(column, value, row)
        self.column, self.value, self.row = column, value, row


def _stream(header: Header, *, text, numbers, matrix, keep, unfiltered, numbers_as_text: bool) -> Parsed:
    as_text = set(header.names) if numbers_as_text else set(text)
    types = {name: (pa.string() if name in as_text else pa.float64()) for name in header.names}
    convert = pacsv.ConvertOptions(column_types=types, null_values=[""], strings_can_be_null=True,
                                   quoted_strings_can_be_null=True)
    position = {name: i for i, name in enumerate(header.names)}
    plan = _Plan(header, convert, [position[name] for name in matrix], text, numbers, unfiltered, keep,
                 numbers_as_text)
    out = empty_matrix(_estimated_rows(header.path), len(matrix))
    counts = {"na_converted": 0, "nonfinite_converted": 0, "missing_in_source": 0}
    parts: dict[str, list[pa.Array]] = {name: [] for name in text}
    number_parts: dict[str, list[np.ndarray]] = {name: [] for name in numbers}
    whole: dict[str, list[pa.Array]] = {name: [] for name in unfiltered}
    row_parts: list[np.ndarray] = []
    read = filled = 0
    spans = line_pieces(header.path, data_start(header.path))
    try:
        for piece in ordered_map(lambda span: _parse_piece(plan, span), spans):
            m = piece.block.shape[0]
            if filled + m > out.shape[0]:  # only if the estimate was short: grow by half
                out = _grown(out, filled, max(filled + m, out.shape[0] + out.shape[0] // 2))
            out[filled:filled + m] = piece.block
            for name, values in piece.text.items():
                parts[name].append(values)
            for name, values in piece.numbers.items():
                number_parts[name].append(values)
            for name, values in piece.whole.items():
                whole[name].append(values)
            for name, count in piece.counts.items():
                counts[name] += count
            row_parts.append(np.arange(read, read + piece.rows) if piece.sel is None else piece.sel + read)
            read += piece.rows
            filled += m
    except _PieceUnparsable as failed:
        raise InputError(f"{header.path.name}: line {read + failed.row + 2}, column {failed.column!r}: cannot parse "
                         f"{failed.value!r} as a number") from None
    except (pa.ArrowInvalid, pa.ArrowException) as err:
        if not numbers_as_text and _is_conversion_error(str(err)):
            raise _ConversionFailed(str(err)) from None
        raise _located_error(header, str(err)) from None
    if read == 0:
        raise InputError(f"{header.path.name}: line 2: the file has a header but no data rows")
    rows = np.concatenate(row_parts) if row_parts else np.zeros(0, dtype=np.int64)
    return Parsed(
        rows_read=read,
        rows=None if filled == read else rows,
        text_columns={n: pa.chunked_array(parts[n], type=pa.string()) for n in text},
        number_columns={n: _joined(number_parts[n], np.float64) for n in numbers},
        unfiltered={n: pa.chunked_array(whole[n], type=pa.string()) for n in unfiltered},
        matrix=out[:filled],
        counts=counts,
    )


def _parse_piece(plan: _Plan, span: tuple[int, int]) -> _Piece:
    """Parse one piece of the file (on a worker thread): filter its rows, fill its block of the matrix."""
    header = plan.header
    data = piece_bytes(header.path, span)
    check_text(header.path, data, span[0], header.delimiter, header.names)
    table = pacsv.read_csv(pa.BufferReader(data),
                           read_options=read_options(header, column_names=list(header.names), use_threads=False,
                                                     block_size=span[1] - span[0] + 1),
                           parse_options=pacsv.ParseOptions(delimiter=header.delimiter),
                           convert_options=plan.convert)
    batch = pa.RecordBatch.from_arrays([c.combine_chunks() for c in table.columns], names=table.column_names)
    sel = _kept_in_batch(batch, plan.keep)
    kept, kept_sel = batch, sel
    if plan.numbers_as_text:  # the kept rows only, their numbers converted now
        kept, kept_sel = _numbers_of_rows(batch, sel, set(plan.text)), None
    text = {name: kept.column(name) if kept_sel is None else kept.column(name).take(kept_sel) for name in plan.text}
    numbers = {}
    for name in plan.numbers:
        values = kept.column(name).to_numpy(zero_copy_only=False)
        numbers[name] = values if kept_sel is None else values[kept_sel]
    counts = {"na_converted": 0, "nonfinite_converted": 0, "missing_in_source": 0}
    block = np.empty((batch.num_rows if sel is None else len(sel), len(plan.positions)), dtype=np.float64)
    _fill_block(kept, plan.positions, kept_sel, block, counts)
    return _Piece(batch.num_rows, sel, block, text, numbers, {name: batch.column(name) for name in plan.unfiltered},
                  counts)


def _numbers_of_rows(batch: pa.RecordBatch, sel: np.ndarray | None, text: set[str]) -> pa.RecordBatch:
    """The rows ``sel`` of an all-text ``batch`` with every non-``text`` column converted to float64."""
    rows = np.arange(batch.num_rows) if sel is None else sel
    batch = batch if sel is None else batch.take(pa.array(sel))
    columns = []
    for name, values in zip(batch.schema.names, batch.columns, strict=True):
        if name in text:
            columns.append(values)
            continue
        try:
            columns.append(pc.cast(values, pa.float64()))
        except pa.ArrowInvalid:
            raise _unparsable(name, values, rows) from None
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def _unparsable(column: str, values: pa.Array, rows: np.ndarray) -> Exception:
    """The first value of ``values`` that is not a number, with its row (``rows``: row of each value)."""
    for i, value in enumerate(values.to_pylist()):
        try:
            if value is not None:
                pa.array([value]).cast(pa.float64())
        except pa.ArrowInvalid:
            return _PieceUnparsable(column, value, int(rows[i]))
    return pa.ArrowInvalid(f"column {column!r}: cannot parse a value as a number")


def _is_conversion_error(message: str) -> bool:
    return re.search(r"column #(\d+).*invalid value '(.*)'", message, flags=re.S) is not None


def _estimated_rows(path: Path, sample: int = SAMPLE_BYTES) -> int:
    """Room for the data rows: exact for a file within ``sample`` bytes, else the file size over the mean
    line length of the first ``sample`` bytes, plus a tenth (the matrix grows if that is short)."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(sample)
    lines = head.count(b"\n") + (not head.endswith(b"\n"))
    if size <= len(head):
        return max(lines, 1)
    return max(int(size / (len(head) / max(lines, 1)) * 1.1) + 1024, 1)


def _grown(out: np.ndarray, filled: int, rows: int) -> np.ndarray:
    bigger = empty_matrix(rows, out.shape[1])
    bigger[:filled] = out[:filled]
    return bigger


def _kept_in_batch(batch: pa.RecordBatch, keep: tuple[str, Sequence[str]] | None) -> np.ndarray | None:
    if keep is None:
        return None
    column, values = keep
    mask = pc.is_in(batch.column(column), value_set=pa.array(list(values), type=pa.string()))
    mask = pc.fill_null(mask, False).to_numpy(zero_copy_only=False)
    return None if mask.all() else np.flatnonzero(mask)


def _fill_block(batch: pa.RecordBatch, positions: Sequence[int], sel: np.ndarray | None, block: np.ndarray,
                counts: dict[str, int]) -> None:
    """Copy the matrix columns (at ``positions`` of the batch) of the kept rows into ``block`` (rows x columns).

    Columns are first copied into a column-major scratch array and then transposed into ``block`` in
    one copy, which is much faster than writing each column with a stride of a whole row. NaN and
    infinities are counted on the scratch array, in one pass when every value is finite.
    """
    scratch = np.empty((len(positions), block.shape[0]), dtype=np.float64)
    nulls = 0
    columns = batch.columns
    for j, position in enumerate(positions):
        col = columns[position]
        values = col.to_numpy(zero_copy_only=False)
        scratch[j] = values if sel is None else values[sel]
        if col.null_count:
            if sel is None:
                nulls += col.null_count
            else:
                nulls += int(np.count_nonzero(col.is_null().to_numpy(zero_copy_only=False)[sel]))
    n_nan = n_inf = 0
    if not np.isfinite(scratch).all():
        n_nan = int(np.count_nonzero(np.isnan(scratch)))
        inf = np.isinf(scratch)
        n_inf = int(np.count_nonzero(inf))
        if n_inf:
            scratch[inf] = np.nan
    block[...] = scratch.T
    counts["missing_in_source"] += nulls
    counts["nonfinite_converted"] += n_inf
    counts["na_converted"] += n_nan - nulls


def _joined(parts: list[np.ndarray], dtype) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype=dtype)
    return np.concatenate(parts).astype(dtype, copy=False)


def _located_error(header: Header, message: str) -> InputError:
    name = header.path.name
    if "invalid UTF8" in message or "UTF-8" in message:
        return InputError(f"{name}: the file is not valid {header.encoding} text ({message.strip()}); pass the "
                          "encoding it was written in, e.g. encoding='cp1252' (Windows) or encoding='latin-1'")
    conversion = re.search(r"column #(\d+).*invalid value '(.*)'", message, flags=re.S)
    if conversion:
        col, value = int(conversion.group(1)), conversion.group(2)
        column = header.names[col]
        line = _line_of_value(header, column, value)
        where = f"line {line}, " if line else ""
        return InputError(f"{name}: {where}column {column!r}: cannot parse {value!r} as a number")
    if "Expected" in message and "columns" in message:
        line, expected, actual = _first_bad_row(header)
        if line:
            return InputError(f"{name}: line {line}: expected {expected} {SEPARATORS.get(header.delimiter, '')}-"
                              f"separated fields as in the header, found {actual} (wrong separator or a "
                              "truncated line?)")
    return InputError(f"{name}: cannot parse the file: {message}")


def _line_of_value(header: Header, column: str, value: str) -> int | None:
    table = pacsv.read_csv(header.path, read_options=read_options(header),
                           parse_options=pacsv.ParseOptions(delimiter=header.delimiter),
                           convert_options=pacsv.ConvertOptions(include_columns=[column],
                                                                column_types={column: pa.string()}))
    index = pc.index(table.column(column), value).as_py()
    return None if index < 0 else index + 2


def _first_bad_row(header: Header) -> tuple[int | None, int, int]:
    found: list[tuple[int, int, int]] = []

    def handler(row) -> str:
        if not found:
            found.append((row.number, row.expected_columns, row.actual_columns))
        return "skip"

    pacsv.read_csv(header.path, read_options=read_options(header, use_threads=False),
                   parse_options=pacsv.ParseOptions(delimiter=header.delimiter, invalid_row_handler=handler),
                   convert_options=pacsv.ConvertOptions(column_types={n: pa.string() for n in header.names}))
    return found[0] if found else (None, 0, 0)
