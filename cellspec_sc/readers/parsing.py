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


# Bytes per block handed to pyarrow's CSV reader (one record batch each): large enough that the
# per-batch Python work is small, small enough that a block is parsed while it is still in cache.
BLOCK_BYTES = 1 << 21
# Bytes read from the start of the file to estimate its number of rows.
SAMPLE_BYTES = 1 << 20


def stream_columns(header: Header, *, text: Sequence[str], numbers: Sequence[str], matrix: Sequence[str],
                   keep: tuple[str, Sequence[str]] | None = None, unfiltered: Sequence[str] = ()) -> Parsed:
    """Parse the file with pyarrow's CSV reader, batch by batch, straight into the measurement matrix.

    ``text`` columns are read as strings (kept as Arrow arrays), every other column as float64 (empty
    fields are null). ``keep=(column, values)`` keeps only rows whose text ``column`` is one of
    ``values``; ``unfiltered`` text columns are also returned for every row. The matrix (kept rows x
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


def _stream(header: Header, *, text, numbers, matrix, keep, unfiltered, numbers_as_text: bool) -> Parsed:
    as_text = set(header.names) if numbers_as_text else set(text)
    types = {name: (pa.string() if name in as_text else pa.float64()) for name in header.names}
    convert = pacsv.ConvertOptions(column_types=types, null_values=[""], strings_can_be_null=True,
                                   quoted_strings_can_be_null=True)
    out = empty_matrix(_estimated_rows(header.path), len(matrix))
    position = {name: i for i, name in enumerate(header.names)}
    positions = [position[name] for name in matrix]
    counts = {"na_converted": 0, "nonfinite_converted": 0, "missing_in_source": 0}
    parts: dict[str, list[pa.Array]] = {name: [] for name in text}
    number_parts: dict[str, list[np.ndarray]] = {name: [] for name in numbers}
    whole: dict[str, list[pa.Array]] = {name: [] for name in unfiltered}
    row_parts: list[np.ndarray] = []
    read = filled = 0
    try:
        reader = pacsv.open_csv(header.path, read_options=read_options(header, use_threads=True, block_size=BLOCK_BYTES),
                                parse_options=pacsv.ParseOptions(delimiter=header.delimiter), convert_options=convert)
        for batch in reader:
            sel = _kept_in_batch(batch, keep)
            for name in unfiltered:
                whole[name].append(batch.column(name))
            rows_in_file = np.arange(read, read + batch.num_rows) if sel is None else sel + read
            kept, kept_sel = batch, sel
            if numbers_as_text:  # the kept rows only, their numbers converted now
                kept, kept_sel = _numbers_of_rows(header, batch, sel, set(text), rows_in_file), None
            for name in parts:
                values = kept.column(name)
                parts[name].append(values if kept_sel is None else values.take(kept_sel))
            for name in number_parts:
                values = kept.column(name).to_numpy(zero_copy_only=False)
                number_parts[name].append(values if kept_sel is None else values[kept_sel])
            m = len(rows_in_file)
            if filled + m > out.shape[0]:  # only if the estimate was short: grow by half
                out = _grown(out, filled, max(filled + m, out.shape[0] + out.shape[0] // 2))
            _fill_block(kept, positions, kept_sel, out[filled:filled + m], counts)
            row_parts.append(rows_in_file)
            read += batch.num_rows
            filled += m
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


def _numbers_of_rows(header: Header, batch: pa.RecordBatch, sel: np.ndarray | None, text: set[str],
                     rows_in_file: np.ndarray) -> pa.RecordBatch:
    """The rows ``sel`` of an all-text ``batch`` with every non-``text`` column converted to float64."""
    batch = batch if sel is None else batch.take(pa.array(sel))
    columns = []
    for name, values in zip(batch.schema.names, batch.columns, strict=True):
        if name in text:
            columns.append(values)
            continue
        try:
            columns.append(pc.cast(values, pa.float64()))
        except pa.ArrowInvalid:
            raise _unparsable(header, name, values, rows_in_file) from None
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def _unparsable(header: Header, column: str, values: pa.Array, rows_in_file: np.ndarray) -> InputError:
    for i, value in enumerate(values.to_pylist()):
        try:
            if value is not None:
                pa.array([value]).cast(pa.float64())
        except pa.ArrowInvalid:
            return InputError(f"{header.path.name}: line {int(rows_in_file[i]) + 2}, column {column!r}: cannot parse "
                              f"{value!r} as a number")
    return InputError(f"{header.path.name}: column {column!r}: cannot parse a value as a number")


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
    one copy, which is much faster than writing each column with a stride of a whole row.
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
    block[...] = scratch.T
    counts["missing_in_source"] += nulls
    n_nan = int(np.count_nonzero(np.isnan(block)))
    inf = np.isinf(block)
    n_inf = int(np.count_nonzero(inf))
    if n_inf:
        block[inf] = np.nan
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
