"""Parse an export with pyarrow's CSV reader straight into the float64 measurement matrix.

:func:`stream_columns` cuts the file into pieces parsed on every core
(:func:`~cellspec_sc.readers.piece_parse.parse_piece`), converts NaN and infinities to NA and counts them,
keeps only the rows an adapter asks for, hashes the file from the bytes the pieces read, gathers the
matrix stats validation needs, and turns every parse failure into an :class:`~cellspec_sc.InputError`
naming file, line and column.
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
from cellspec_sc.io import PieceHash
from cellspec_sc.model import MatrixStats, empty_matrix
from cellspec_sc.readers.headers import SEPARATORS, Header
from cellspec_sc.readers.piece_parse import Piece, PieceUnparsable, Plan, RowSlots, parse_piece, read_options
from cellspec_sc.readers.pieces import data_start, line_pieces, ordered_map
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
    sha256: str | None = None
    """SHA-256 of the file, when the parse hashed it (from the bytes it read)."""
    stats: GroupedStats | None = None
    """Matrix stats gathered while parsing, ranges per group (see :class:`GroupedStats`)."""

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


@dataclass(frozen=True)
class GroupedStats:
    """:class:`~cellspec_sc.validation.matrix_stats.MatrixStats` of the parsed matrix with per-group ranges:
    ``stats.codes`` is the group of each kept row, ``groups`` the value of the adapter's ``group`` column of
    each group (None: one group). :meth:`for_images` turns them into validation's per-image stats."""

    stats: MatrixStats
    groups: list[str | None]

    def for_images(self, image_codes: np.ndarray, image_ids: np.ndarray) -> MatrixStats | None:
        """The stats with ranges per image (``image_codes``: the image of each row, in validation's order, codes of
        ``image_ids``: ``first_seen_codes`` of the cells' image_id, which validation then reuses), or None when a
        group spans several images (the adapter's group column does not decide the image).

        >>> s = MatrixStats(1, np.array([0, 0, 1]), 2); s.add(0, np.array([[1.0], [2.0], [5.0]]))
        >>> g = GroupedStats(MatrixStats(1, np.array([0, 0, 1]), 2), ["a", "b"]); g.stats.merge(s, np.array([0, 1]))
        >>> g.for_images(np.array([0, 0, 0]), np.array(["i"])).high.tolist()
        [[5.0]]
        >>> g.for_images(np.array([0, 1, 1]), np.array(["i", "j"])) is None
        True
        """
        n_images = len(image_ids)
        groups = self.stats.codes
        if groups is None or len(groups) != len(image_codes) or (groups < 0).any() or (image_codes < 0).any():
            return None
        first = np.full(len(self.groups), -1, dtype=np.int64)
        first[groups[::-1]] = np.arange(len(groups) - 1, -1, -1)  # first row of each group
        if (first < 0).any():
            return None
        image_of_group = image_codes[first]
        if not np.array_equal(image_of_group[groups], image_codes):
            return None
        out = MatrixStats(self.stats.n_features, image_codes, n_images, image_ids)
        out.merge(self.stats, images=image_of_group)
        return out


# Bytes read from the start of the file to estimate its number of rows.
SAMPLE_BYTES = 1 << 18


def stream_columns(header: Header, *, text: Sequence[str], numbers: Sequence[str], matrix: Sequence[str],
                   keep: tuple[str, Sequence[str]] | None = None, unfiltered: Sequence[str] = (),
                   group: str | None = None) -> Parsed:
    """Parse the file with pyarrow's CSV reader, in pieces on every core, straight into the measurement matrix.

    ``text`` columns are read as strings (kept as Arrow arrays), every other column as float64 (empty
    fields are null). ``keep=(column, values)`` keeps only rows whose text ``column`` is one of
    ``values``; ``unfiltered`` text columns are also returned for every row. The file is cut into pieces
    at line boundaries, parsed on every core and put together in file order
    (:func:`~cellspec_sc.readers.pieces.ordered_map`). The matrix (kept rows x
    ``matrix`` columns, C order) is allocated once, with room for the rows estimated from the first
    megabyte of the file (pages never written cost no memory); each piece writes its kept rows into it
    directly, and only if the estimate was short do the last pieces keep blocks of their own (joined into
    one bigger matrix at the end), so peak memory stays close to the result instead of holding a whole
    Arrow table beside it.
    NaN and infinities become NaN (NA) and are counted: ``na_converted`` (NaN written by the tool),
    ``nonfinite_converted`` (infinities) and ``missing_in_source`` (empty fields), all over kept rows.
    A parse failure becomes an InputError that names file, line and column. When rows are filtered,
    a value that is not a number in a row that is not kept does not matter: on such a failure the file
    is parsed again with numbers read as text and converted after the filter. The matrix stats
    (:attr:`Parsed.stats`) have ranges per value of the text column ``group`` (the column that decides
    each row's image; None: one image).
    """
    try:
        return _stream(header, text=text, numbers=numbers, matrix=matrix, keep=keep, unfiltered=unfiltered,
                       group=group, numbers_as_text=False)
    except _ConversionFailed as failed:
        if keep is None:
            raise _located_error(header, failed.message) from None
    return _stream(header, text=text, numbers=numbers, matrix=matrix, keep=keep, unfiltered=unfiltered,
                   group=group, numbers_as_text=True)


class NotANumber(InputError):
    """A value of a measurement column that is not a number; ``.column`` and ``.line`` (None when unknown) say
    where, ``.value`` what.

    >>> print(NotANumber("t.csv", 7, "CD3", "n/a"))
    t.csv: line 7, column 'CD3': cannot parse 'n/a' as a number
    """

    def __init__(self, file: str, line: int | None, column: str, value: str) -> None:
        self.file, self.line, self.column, self.value = file, line, column, value
        where = f"line {line}, " if line else ""
        super().__init__(f"{file}: {where}column {column!r}: cannot parse {value!r} as a number{_number_hint(value)}")

    def __reduce__(self):
        return type(self), (self.file, self.line, self.column, self.value)


class _ConversionFailed(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _stream(header: Header, *, text, numbers, matrix, keep, unfiltered, group, numbers_as_text: bool) -> Parsed:
    as_text = set(header.names) if numbers_as_text else set(text)
    types = {name: (pa.string() if name in as_text else pa.float64()) for name in header.names}
    convert = pacsv.ConvertOptions(column_types=types, null_values=[""], strings_can_be_null=True,
                                   quoted_strings_can_be_null=True)
    position = {name: i for i, name in enumerate(header.names)}
    out = empty_matrix(_estimated_rows(header.path), len(matrix))
    start = data_start(header.path)
    plan = Plan(header, convert, [position[name] for name in matrix], text, numbers, unfiltered, keep,
                group if group in text else None, numbers_as_text, RowSlots(out), PieceHash(header.path, start))
    counts = {"na_converted": 0, "nonfinite_converted": 0, "missing_in_source": 0}
    parts: dict[str, list[pa.Array]] = {name: [] for name in text}
    number_parts: dict[str, list[np.ndarray]] = {name: [] for name in numbers}
    whole: dict[str, list[pa.Array]] = {name: [] for name in unfiltered}
    row_parts: list[np.ndarray] = []
    stats = _GroupStats(len(matrix))
    overflow: list[np.ndarray] = []  # blocks of the pieces beyond the estimated rows, in order
    read = filled = 0
    spans = line_pieces(header.path, start)
    try:
        for piece in ordered_map(lambda item: parse_piece(plan, *item), list(enumerate(spans))):
            if piece.block is not None:
                overflow.append(piece.block)
            for name, values in piece.text.items():
                parts[name].extend(values.chunks)
            for name, values in piece.numbers.items():
                number_parts[name].append(values)
            for name, values in piece.whole.items():
                whole[name].extend(values.chunks)
            for name, count in piece.counts.items():
                counts[name] += count
            stats.add(piece)
            row_parts.append(np.arange(read, read + piece.rows) if piece.sel is None else piece.sel + read)
            read += piece.rows
            filled += piece.kept
    except PieceUnparsable as failed:
        raise NotANumber(header.path.name, read + failed.row + 2, failed.column, str(failed.value)) from None
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
        matrix=_with_overflow(out, filled, overflow),
        counts=counts,
        sha256=plan.hasher.result(),
        stats=stats.result(),
    )


class _GroupStats:
    """The pieces' matrix stats put together: counts over the matrix, ranges per distinct value of the
    adapter's ``group`` column (codes in order of first appearance in the file)."""

    def __init__(self, n_features: int) -> None:
        self.n_features = n_features
        self.index: dict[str | None, int] = {}
        self.pieces: list[tuple[MatrixStats, np.ndarray]] = []

    def add(self, piece: Piece) -> None:
        self.pieces.append((piece.stats, np.array([self.index.setdefault(g, len(self.index)) for g in piece.groups],
                                                  dtype=np.int64)))

    def result(self) -> GroupedStats:
        codes = [np.where(s.codes < 0, -1, images[np.maximum(s.codes, 0)]) for s, images in self.pieces]
        total = MatrixStats(self.n_features, np.concatenate(codes) if codes else np.zeros(0, np.int64), len(self.index))
        for piece_stats, images in self.pieces:
            total.merge(piece_stats, images=images)
        return GroupedStats(total, list(self.index))


def _with_overflow(out: np.ndarray, filled: int, overflow: list[np.ndarray]) -> np.ndarray:
    """The matrix of the ``filled`` kept rows: ``out`` itself, unless the estimate of the rows was short and
    the last pieces kept their own blocks (then one bigger matrix)."""
    if not overflow:
        return out[:filled]
    bigger = empty_matrix(filled, out.shape[1])
    placed = filled - sum(len(b) for b in overflow)
    bigger[:placed] = out[:placed]
    for block in overflow:
        bigger[placed:placed + len(block)] = block
        placed += len(block)
    return bigger


def _is_conversion_error(message: str) -> bool:
    return re.search(r"column #(\d+).*invalid value '(.*)'", message, flags=re.S) is not None


def _estimated_rows(path: Path, sample: int = SAMPLE_BYTES) -> int:
    """Room for the data rows: exact for a file within ``sample`` bytes, else the file size over the mean
    line length of the first ``sample`` bytes, plus a tenth (pieces beyond it keep their own blocks)."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(sample)
    lines = head.count(b"\n") + (not head.endswith(b"\n"))
    if size <= len(head):
        return max(lines, 1)
    return max(int(size / (len(head) / max(lines, 1)) * 1.1) + 1024, 1)


def _joined(parts: list[np.ndarray], dtype) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype=dtype)
    return np.concatenate(parts).astype(dtype, copy=False)


def read_as_text(header: Header, columns: Sequence[str] | None = None, *, nulls: bool = True,
                 one_column: bool = False) -> pa.Table:
    """Every column of ``header``'s file (or only ``columns``) as Arrow strings, empty fields null (``nulls``)
    or ``""``; ``one_column``: a file without a header line, its lines the values of column ``f0``. A file
    pyarrow cannot parse is refused as an InputError naming file and line, never pyarrow's own error."""
    names = ["f0"] if one_column else list(header.names)
    try:
        return pacsv.read_csv(header.path, read_options=read_options(header, autogenerate_column_names=one_column),
                              parse_options=pacsv.ParseOptions(delimiter=header.delimiter),
                              convert_options=pacsv.ConvertOptions(
                                  column_types={n: pa.string() for n in names}, strings_can_be_null=nulls,
                                  include_columns=list(columns) if columns is not None else None))
    except (pa.ArrowInvalid, UnicodeDecodeError) as err:
        raise _located_error(header, str(err)) from None


def _located_error(header: Header, message: str) -> InputError:
    name = header.path.name
    if "invalid UTF8" in message or "UTF-8" in message:
        return InputError(f"{name}: the file is not valid {header.encoding} text ({message.strip()}); pass the "
                          "encoding it was written in, e.g. encoding='cp1252' (Windows) or encoding='latin-1'")
    conversion = re.search(r"column #(\d+).*invalid value '(.*)'", message, flags=re.S)
    if conversion:
        col, value = int(conversion.group(1)), conversion.group(2)
        column = header.names[col]
        return NotANumber(name, _line_of_value(header, column, value), column, value)
    if "Expected" in message and "columns" in message:
        line, expected, actual = _first_bad_row(header)
        if line:
            return InputError(f"{name}: line {line}: expected {expected} {SEPARATORS.get(header.delimiter, '')}-"
                              f"separated fields as in the header, found {actual} (wrong separator or a "
                              "truncated line?)")
    return InputError(f"{name}: cannot parse the file: {message}")


def _number_hint(value: str) -> str:
    """What a value that is no number probably is.

    >>> _number_hint("101,25"), _number_hint("P01")[:40]
    ("; a decimal comma? The readers read '.' as the decimal mark, as the tools write it: export again with '.' (e.g. in an English locale) or replace the commas", '; the column holds text: if it is not a ')
    """
    if re.fullmatch(r"\s*[-+]?\d+(\.\d{3})*,\d+\s*", value):
        return ("; a decimal comma? The readers read '.' as the decimal mark, as the tools write it: export again "
                "with '.' (e.g. in an English locale) or replace the commas")
    if re.search(r"[A-Za-z]{2}", value) or re.fullmatch(r"\s*[A-Za-z]\w*\s*", value):
        return ("; the column holds text: if it is not a measurement, leave it out of the export (the readers take "
                "every column they do not know for a measurement when it holds numbers)")
    return ""


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
