"""Parse one piece of an export (on a worker thread) straight into its rows of the measurement matrix.

:func:`parse_piece` is what every thread of :func:`~cellspec_sc.readers.parsing.stream_columns` runs on
one piece (a byte range ending at a newline): read the bytes once (handing them to the file's
:class:`~cellspec_sc.io.hashing.PieceHash`), check them, parse them with pyarrow's CSV reader in
cache-sized blocks, keep the rows the adapter asks for, and write the matrix columns of the kept rows
directly into the piece's rows of the preallocated matrix (:class:`RowSlots` hands out the rows in file
order), converting infinities to NA and gathering the
:class:`~cellspec_sc.validation.matrix_stats.MatrixStats` that validation would otherwise gather in a
second walk over the matrix.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from cellspec_sc.io import PieceHash
from cellspec_sc.model import MatrixStats
from cellspec_sc.readers.headers import Header
from cellspec_sc.readers.pieces import piece_bytes
from cellspec_sc.readers.text_checks import check_text

# pyarrow parses a piece in blocks of this many bytes: its tokenised block then stays in the cache while
# its values are converted (measured: 1-2 MB blocks parse about 15 % faster than one 8 MB block).
PARSE_BLOCK_BYTES = 1 << 21


@dataclass(frozen=True)
class Plan:
    """What every piece of one parse needs: options, the columns that go where, the shared matrix."""

    header: Header
    convert: pacsv.ConvertOptions
    positions: list[int]
    text: Sequence[str]
    numbers: Sequence[str]
    unfiltered: Sequence[str]
    keep: tuple[str, Sequence[str]] | None
    group: str | None
    numbers_as_text: bool
    slots: RowSlots
    hasher: PieceHash | None


@dataclass
class Piece:
    """One parsed piece: its kept rows (``sel``: positions among the piece's rows, None for all), where
    they went in the matrix (``start``; ``block`` holds them only when the matrix had no room), its text
    and number columns, NA counts, matrix stats and the value of ``group`` of each stats group."""

    rows: int
    sel: np.ndarray | None
    start: int
    kept: int
    block: np.ndarray | None
    text: dict[str, pa.ChunkedArray]
    numbers: dict[str, np.ndarray]
    whole: dict[str, pa.ChunkedArray]
    counts: dict[str, int]
    stats: MatrixStats
    groups: list[str | None]


class PieceUnparsable(Exception):
    """A value of a kept row is not a number (found after the filter); ``row`` counts within the piece."""

    def __init__(self, column: str, value: str, row: int) -> None:
        super().__init__(column, value, row)
        self.column, self.value, self.row = column, value, row


class RowSlots:
    """Hands each piece, in file order, the rows of the matrix its kept rows go to.

    A piece knows how many rows it keeps only once it is parsed; :meth:`claim` waits until the piece
    before it has claimed its rows (pieces are parsed in order on a thread pool, so that wait is short
    and never for a piece that has not started). A piece that fails claims no rows.

    >>> slots = RowSlots(np.zeros((5, 2)))
    >>> [(start, None if rows is None else rows.shape) for start, rows in (slots.claim(0, 3), slots.claim(1, 3))]
    [(0, (3, 2)), (3, None)]
    """

    def __init__(self, out: np.ndarray) -> None:
        self.out = out
        self._index = 0
        self._row = 0
        self._turn = threading.Condition()

    def claim(self, index: int, rows: int) -> tuple[int, np.ndarray | None]:
        """(first row, the matrix rows of piece ``index``, or None when they do not fit in the matrix)."""
        with self._turn:
            self._turn.wait_for(lambda: self._index == index)
            start = self._row
            self._row += rows
            self._index += 1
            self._turn.notify_all()
        return start, (self.out[start:start + rows] if start + rows <= self.out.shape[0] else None)


def parse_piece(plan: Plan, index: int, span: tuple[int, int]) -> Piece:
    """Parse piece ``index`` (bytes ``span`` of the file) on a worker thread: see the module docstring."""
    claimed = False
    try:
        piece = _parse(plan, index, span)
        claimed = True
        return piece
    finally:
        if not claimed:
            plan.slots.claim(index, 0)  # let the pieces after this one go on (the read fails at this piece)


def _parse(plan: Plan, index: int, span: tuple[int, int]) -> Piece:
    header = plan.header
    try:
        data = piece_bytes(header.path, span)
    except BaseException:
        if plan.hasher is not None:
            plan.hasher.fail()
        raise
    if plan.hasher is not None:
        plan.hasher.add(span, data)
    check_text(header.path, data, span[0], header.delimiter, header.names)
    table = pacsv.read_csv(pa.BufferReader(data),
                           read_options=read_options(header, column_names=list(header.names), use_threads=False,
                                                      block_size=PARSE_BLOCK_BYTES),
                           parse_options=pacsv.ParseOptions(delimiter=header.delimiter),
                           convert_options=plan.convert)
    del data
    sel = kept_rows(table, plan.keep)
    kept, kept_sel = table, sel
    if plan.numbers_as_text:  # the kept rows only, their numbers converted now
        kept, kept_sel = numbers_of_rows(table, sel, set(plan.text)), None
    text = {name: kept.column(name) if kept_sel is None else kept.column(name).take(kept_sel) for name in plan.text}
    numbers = {}
    for name in plan.numbers:
        values = kept.column(name).to_numpy()
        numbers[name] = values if kept_sel is None else values[kept_sel]
    m = table.num_rows if sel is None else len(sel)
    start, rows = plan.slots.claim(index, m)
    block = rows if rows is not None else np.empty((m, len(plan.positions)), dtype=np.float64)
    codes, groups = _group_codes(text[plan.group] if plan.group is not None else None, m)
    counts, stats = fill_rows(kept, plan.positions, kept_sel, block, codes, len(groups))  # rows from the piece's first
    return Piece(table.num_rows, sel, start, m, None if rows is not None else block, text, numbers,
                 {name: table.column(name) for name in plan.unfiltered}, counts, stats, groups)


def read_options(header: Header, **options) -> pacsv.ReadOptions:
    """pyarrow ReadOptions for ``header``'s file, transcoding when it is not UTF-8."""
    if header.encoding != "utf-8":
        options["encoding"] = header.encoding
    return pacsv.ReadOptions(**options)


def _group_codes(values: pa.ChunkedArray | None, n: int) -> tuple[np.ndarray, list[str | None]]:
    """(code of each row, the distinct values in order of first appearance); one group without ``values``."""
    if values is None:
        return np.zeros(n, dtype=np.int64), [None]
    distinct = pc.unique(values)
    codes = pc.index_in(values, value_set=distinct)
    return pc.fill_null(codes, -1).to_numpy().astype(np.int64), distinct.to_pylist()


def kept_rows(table: pa.Table, keep: tuple[str, Sequence[str]] | None) -> np.ndarray | None:
    """Positions of the rows whose ``keep[0]`` column is one of ``keep[1]`` (None: every row)."""
    if keep is None:
        return None
    column, values = keep
    mask = pc.is_in(table.column(column), value_set=pa.array(list(values), type=pa.string()))
    mask = pc.fill_null(mask, False).to_numpy(zero_copy_only=False)
    return None if mask.all() else np.flatnonzero(mask)


def fill_rows(table: pa.Table, positions: Sequence[int], sel: np.ndarray | None, rows: np.ndarray,
              codes: np.ndarray | None = None, groups: int = 0) -> tuple[dict[str, int], MatrixStats]:
    """Write the matrix columns (at ``positions`` of the table) of the kept rows ``sel`` into ``rows`` (C
    order), infinities as NaN; the NA counts: ``missing_in_source`` (empty fields), ``na_converted`` (NaN written
    as a number) and ``nonfinite_converted`` (infinities), and the :class:`MatrixStats` of ``rows`` (``codes``: the
    group of each row, of ``groups``).

    Every row kept: Arrow turns each parsed block of the matrix columns into a row-major block (``to_tensor``,
    nulls as NaN), copied into ``rows`` in one go: 30 % less CPU than writing each column into its strided place
    (each cache line of a row would be fetched once per column it holds). The stats read that block while it is
    still in the cache, and their NaN and infinity counts are the NA counts (no pass of its own over the rows).
    Rows filtered: column by column, then the stats.

    >>> out = np.empty((3, 1))
    >>> counts, stats = fill_rows(pa.table({"v": [1.0, None, float("inf")]}), [0], None, out)
    >>> counts
    {'missing_in_source': 1, 'nonfinite_converted': 1, 'na_converted': 0}
    >>> out[:, 0].tolist(), stats.nan.tolist(), stats.infinite.tolist()
    ([1.0, nan, nan], [2], [0])
    """
    nulls = 0
    columns = table.columns
    stats = MatrixStats(len(positions), codes, groups)
    if sel is None and positions:
        at = 0
        for batch in table.select(list(positions)).to_batches():
            if batch.num_rows:
                values = batch.to_tensor(null_to_nan=True, row_major=True).to_numpy()
                rows[at:at + batch.num_rows] = values
                stats.add(at, values)
                at += batch.num_rows
        nulls = sum(columns[p].null_count for p in positions)
    else:
        if sel is not None:
            for j, position in enumerate(positions):
                column = columns[position]
                rows[:, j] = column.to_numpy()[sel]
                if column.null_count:
                    nulls += int(np.count_nonzero(column.is_null().to_numpy(zero_copy_only=False)[sel]))
        stats.add(0, rows)
    n_nan, n_inf = int(stats.nan.sum()), int(stats.infinite.sum())
    if n_inf:  # rare: infinities become NaN, and the stats are gathered again from what the matrix holds
        rows[np.isinf(rows)] = np.nan
        stats = MatrixStats(len(positions), codes, groups)
        stats.add(0, rows)
    return {"missing_in_source": nulls, "nonfinite_converted": n_inf, "na_converted": n_nan - nulls}, stats


def numbers_of_rows(table: pa.Table, sel: np.ndarray | None, text: set[str]) -> pa.Table:
    """The rows ``sel`` of an all-text ``table`` with every non-``text`` column converted to float64."""
    rows = np.arange(table.num_rows) if sel is None else sel
    table = table if sel is None else table.take(pa.array(sel))
    columns = []
    for name, values in zip(table.schema.names, table.columns, strict=True):
        if name in text:
            columns.append(values)
            continue
        try:
            columns.append(pc.cast(values, pa.float64()))
        except pa.ArrowInvalid:
            raise _unparsable(name, values, rows) from None
    return pa.table(columns, names=table.schema.names)


def _unparsable(column: str, values: pa.ChunkedArray, rows: np.ndarray) -> Exception:
    """The first value of ``values`` that is not a number, with its row (``rows``: row of each value)."""
    for i, value in enumerate(values.to_pylist()):
        try:
            if value is not None:
                pa.array([value]).cast(pa.float64())
        except pa.ArrowInvalid:
            return PieceUnparsable(column, value, int(rows[i]))
    return pa.ArrowInvalid(f"column {column!r}: cannot parse a value as a number")
