"""What the matrix checks of section 10 need, gathered in one pass over the measurement matrix.

``measurements_finite``, ``negative_intensity``, ``feature_na_fraction`` and
``feature_support`` each need a per-feature count or range. Computing them one
check at a time walks a slide-sized matrix four times; :class:`MatrixStats`
gathers them all from cache-sized row blocks in one walk. A reader feeds it
the blocks it has just decoded (hot in the cache), so reading and validating
a directory touch the matrix once.

>>> import numpy as np
>>> m = np.array([[1.0, -2.0], [np.nan, np.inf], [3.0, 3.0]])
>>> s = MatrixStats(2, np.array([0, 0, 1]), 2)
>>> s.add(0, m)
>>> s.nan.tolist(), s.infinite.tolist(), s.first_infinite.tolist(), s.negative.tolist()
([1, 0], [0, 1], [-1, 1], [0, 1])
>>> s.low.tolist(), s.high.tolist()
([[1.0, -2.0], [3.0, 3.0]], [[1.0, inf], [3.0, 3.0]])
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc.spec import is_arrow_text

_BLOCK_ROWS = 1 << 15
_CACHE_BYTES = 1 << 20  # rows handled at once: about 1 MB, so the five reductions read each value from the cache
_INT64_DIGITS = 18  # every number of up to 18 decimal digits fits in int64 (its largest value has 19)


def cache_rows(n_columns: int) -> int:
    """Rows of a block of about 1 MB of doubles (at least 64)."""
    return max(64, _CACHE_BYTES // max(8 * n_columns, 8))


def row_blocks(m: Any, rows: int = _BLOCK_ROWS) -> Iterator[tuple[int, np.ndarray]]:
    """(first row, block) over a matrix in row blocks, so checks never copy the whole matrix.

    A dask array (``read(path, lazy=True)``, ``example(lazy=True)``) is walked along its own row
    chunks, each computed once (its graph is split into one task per chunk first: slicing the whole
    array for every block would cost time in the number of blocks, per block).
    """
    chunks = getattr(m, "chunks", None)
    if chunks and isinstance(chunks[0], tuple) and hasattr(m, "to_delayed"):
        yield from _dask_row_blocks(m)
        return
    for start in range(0, m.shape[0], rows):
        yield start, np.asarray(m[start:start + rows])


def _dask_row_blocks(m: Any) -> Iterator[tuple[int, np.ndarray]]:
    import dask

    start = 0
    for size, parts in zip(m.chunks[0], m.to_delayed(), strict=True):
        if size == 0:
            continue
        computed = dask.compute(*parts)
        yield start, computed[0] if len(computed) == 1 else np.concatenate(computed, axis=1)
        start += size


def first_seen_codes(values: pd.Series | np.ndarray | pd.api.extensions.ExtensionArray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(code of each value, -1 for NA; the distinct values in order of first appearance), e.g. the image of
    each cell.

    >>> codes, names = first_seen_codes(pd.Series(["b", "a", None, "b"]))
    >>> codes.tolist(), list(names)
    ([0, 1, -1, 0], ['b', 'a'])
    """
    if is_arrow_text(values):  # a Series or its array: what pd.factorize does for it, without its overhead
        return arrow_first_seen_codes(pa.array(values.array if isinstance(values, pd.Series) else values))
    codes, names = pd.factorize(values, use_na_sentinel=True)
    return np.asarray(codes, dtype=np.int64), np.asarray(names, dtype=object)


def first_seen_code_array(values: pd.Series) -> np.ndarray:
    """The codes of :func:`first_seen_codes` alone, for a text column with many distinct values (cell
    ids): Arrow's dictionary encoding without making a Python string of each distinct value.

    >>> first_seen_code_array(pd.Series(["b", "a", None, "b"], dtype="string")).tolist()
    [0, 1, -1, 0]
    """
    try:  # Arrow-backed text hands its Arrow array over (converting the Series costs ten times as much)
        arrow = pa.array(values.array) if isinstance(values, pd.Series) and is_arrow_text(values) \
            else pa.array(values, from_pandas=True)
        return arrow_code_array(arrow)
    except (pa.ArrowException, TypeError, ValueError):
        return first_seen_codes(values)[0]


def arrow_code_array(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """:func:`first_seen_code_array` of an Arrow column (-1 for null): dense codes, so the values are all distinct
    exactly when the largest code is ``len(values) - 1`` (see :func:`all_distinct`).

    Integers written in increasing order (mcquant's ``CellID``) are distinct without hashing them: their codes are
    their positions (a million ids: 7 ms, their digits checked first, instead of 85-200 ms of dictionary encoding).

    >>> arrow_code_array(pa.chunked_array([["b", "a"], [None, "b"]])).tolist()
    [0, 1, -1, 0]
    >>> arrow_code_array(pa.array(["1", "2", "10"])).tolist(), arrow_code_array(pa.array(["1", "01", "2"])).tolist()
    ([0, 1, 2], [0, 1, 2])
    >>> arrow_code_array(pa.array(["2", "1", "2"])).tolist()
    [0, 1, 0]
    >>> arrow_code_array(pa.array(["1", "x", "1", "3"])).tolist(), arrow_code_array(pa.array(["1", "9" * 20])).tolist()
    ([0, 1, 0, 2], [0, 1])
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], type=values.type)
    if _increasing_integers(values):
        return np.arange(len(values), dtype=np.int64)
    codes = pc.fill_null(pc.dictionary_encode(values).indices, -1)
    return codes.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def _increasing_integers(values: pa.Array) -> bool:
    """Whether text ``values`` (none missing) are all plain decimal integers that fit in int64, each larger than the
    one before: then no two are equal as text either (equal text reads as the same integer). Anything else (a sign,
    a letter, an empty id, 19 digits or more) is left to the caller's dictionary encoding."""
    text = pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
    if len(values) < 2 or values.null_count or not text:
        return False
    ends = (values[0].as_py(), values[len(values) - 1].as_py())
    if not all(end.isascii() and end.isdigit() for end in ends):  # the common refusal, before any pass over the ids
        return False
    if not pc.all(pc.ascii_is_decimal(values)).as_py() or pc.max(pc.binary_length(values)).as_py() > _INT64_DIGITS:
        return False
    numbers = pc.cast(values, pa.int64()).to_numpy()  # cannot fail: digits only, at most 18 of them
    return bool((numbers[1:] > numbers[:-1]).all())


def all_distinct(codes: np.ndarray) -> bool:
    """Whether dense codes (:func:`first_seen_codes`, :func:`arrow_code_array`) stand for distinct values, none
    missing: then every code up to the largest occurs once.

    >>> all_distinct(np.array([0, 2, 1])), all_distinct(np.array([0, 1, 0])), all_distinct(np.array([0, -1]))
    (True, False, False)
    """
    return len(codes) == 0 or (int(codes.min()) >= 0 and int(codes.max()) == len(codes) - 1)


def arrow_first_seen_codes(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`first_seen_codes` of an Arrow string column, before it becomes a pandas column (Arrow's
    dictionary encoding, which ``pd.factorize`` of an Arrow-backed column also uses).

    >>> codes, names = arrow_first_seen_codes(pa.chunked_array([["b", "a"], [None, "b"]]))
    >>> codes.tolist(), list(names)
    ([0, 1, -1, 0], ['b', 'a'])
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    encoded = pc.dictionary_encode(values)
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    return codes, np.asarray(encoded.dictionary.to_pylist(), dtype=object)


class MatrixStats:
    """Per-feature NaN, infinite and negative counts, and per-image (min, max) of every feature.

    ``codes`` gives each row's image (-1: no image); without it (``None``) no ranges are kept.
    NaN is ignored by the ranges; an image whose values of a feature are all NaN keeps
    ``low = inf, high = -inf``. Blocks may come in any order and cover a range of columns
    (``first_column``), as a reader decodes a file a row group and a batch of columns at a time.
    ``stored_nonfinite``: {feature id: NaN the file stored as a number, not as null}, set by a reader
    that decoded the matrix (in memory both are NaN, so only the reader can tell). ``image_ids``: the
    image ids the codes stand for, when the caller made the codes with :func:`first_seen_codes` of the
    cells' image_id (validation then reuses them: :attr:`image_codes`).
    """

    def __init__(self, n_features: int, codes: np.ndarray | None = None, n_images: int = 0,
                 image_ids: np.ndarray | None = None):
        self.n_features = n_features
        self.codes = codes
        self.image_ids = image_ids
        self.nan = np.zeros(n_features, dtype=np.int64)
        self.infinite = np.zeros(n_features, dtype=np.int64)
        self.first_infinite = np.full(n_features, -1, dtype=np.int64)
        self.negative = np.zeros(n_features, dtype=np.int64)
        ranges = n_images if codes is not None else 0
        self.low = np.full((ranges, n_features), np.inf)
        self.high = np.full((ranges, n_features), -np.inf)
        self.stored_nonfinite: dict[str, int] = {}
        self.cell_codes: np.ndarray | None = None
        """:func:`arrow_code_array` of the cells' cell_id, when a reader made them while checking the ids
        (validation's ``cells_key_unique`` then reuses them instead of encoding a million ids again)."""

    def empty_like(self) -> MatrixStats:
        """Empty stats of the same shape and image codes (for another thread; see :meth:`merge`)."""
        return MatrixStats(self.n_features, self.codes, self.low.shape[0], self.image_ids)

    def merge(self, other: MatrixStats, images: np.ndarray | None = None) -> None:
        """Add what ``other`` gathered over other blocks of the same matrix.

        ``images`` maps ``other``'s image codes to this one's (``other.low[i]`` widens ``self.low[images[i]]``),
        for stats gathered per piece of a file with the piece's own codes.

        >>> a, b = MatrixStats(1), MatrixStats(1)
        >>> a.add(0, np.array([[1.0], [np.inf]])); b.add(5, np.array([[np.nan], [-np.inf]]))
        >>> a.merge(b); a.nan.tolist(), a.infinite.tolist(), a.first_infinite.tolist(), a.negative.tolist()
        ([1], [2], [1], [1])
        >>> c, d = MatrixStats(1, np.array([0, 1]), 2), MatrixStats(1, np.array([0, 0, 1]), 2)
        >>> d.add(0, np.array([[5.0], [6.0], [1.0]])); c.merge(d, images=np.array([1, 0]))
        >>> c.low.tolist(), c.high.tolist()
        ([[1.0], [5.0]], [[1.0], [6.0]])
        """
        for name in ("nan", "infinite", "negative"):
            getattr(self, name)[:] += getattr(other, name)
        mine, theirs = self.first_infinite, other.first_infinite
        self.first_infinite[:] = np.where((mine < 0) | ((theirs >= 0) & (theirs < mine)), theirs, mine)
        if images is None:
            np.fmin(self.low, other.low, out=self.low)
            np.fmax(self.high, other.high, out=self.high)
        elif len(images):
            np.fmin.at(self.low, images, other.low)
            np.fmax.at(self.high, images, other.high)

    @property
    def has_ranges(self) -> bool:
        return self.codes is not None

    @property
    def image_codes(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``first_seen_codes`` of the cells' image_id, when the stats were made from it."""
        return (self.codes, self.image_ids) if self.codes is not None and self.image_ids is not None else None

    def add(self, start: int, block: np.ndarray, first_column: int = 0) -> None:
        """Account for ``block`` = rows ``start:start + len(block)``, columns from ``first_column``."""
        step = cache_rows(block.shape[1])
        for offset in range(0, block.shape[0], step):
            self._add_small(start + offset, block[offset:offset + step], first_column)

    def _add_small(self, start: int, block: np.ndarray, first: int) -> None:
        # Three reductions per block; the exact counts only for the columns where they can be non-zero:
        # a column sum is finite unless the column holds NaN or an infinity (or overflows, which just
        # costs the exact count), and a column has negatives only if its minimum is negative.
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, or an overflowing sum
            total = np.add.reduce(block, axis=0)
        cols = slice(first, first + block.shape[1])
        runs = self.image_runs(start, block.shape[0]) if self.codes is not None else None
        if runs is not None and len(runs) > 1:  # images in runs of rows: each run's range from a view of its rows
            low, high = self._add_runs(block, cols, runs)
        else:
            low, high = np.fmin.reduce(block, axis=0), np.fmax.reduce(block, axis=0)  # fmin/fmax skip NaN
            if runs is not None and runs[0][0] >= 0:  # one image (cells are usually grouped by image)
                self._widen(runs[0][0], cols, low, high)
            elif runs is None and self.codes is not None:  # images interleaved
                self._add_interleaved(start, block, cols)
        odd = np.flatnonzero(~np.isfinite(total))
        if odd.size:
            self._count_nonfinite(start, block[:, odd], first + odd)
        negative = np.flatnonzero(low < 0)
        if negative.size:
            self.negative[first + negative] += np.count_nonzero(block[:, negative] < 0, axis=0)

    def image_runs(self, start: int, n: int, most: int = 64) -> list[tuple[int, int, int]] | None:
        """(image code, first, stop) of the runs of equal codes in rows ``start:start + n`` (offsets from
        ``start``), for :meth:`add_column`; None when there are more than ``most`` (interleaved images)."""
        if self.codes is None:
            return [(-1, 0, n)]
        codes = self.codes[start:start + n]
        if n and codes[0] == codes[-1] and (codes == codes[0]).all():  # cells are usually grouped by image
            return [(int(codes[0]), 0, n)]
        edges = np.flatnonzero(codes[1:] != codes[:-1]) + 1
        if edges.size >= most:
            return None
        bounds = [0, *edges.tolist(), n]
        return [(int(codes[a]), a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    def add_column(self, start: int, column: int, values: np.ndarray, runs: list[tuple[int, int, int]]) -> None:
        """Account for ``values``, rows ``start:`` of feature ``column`` as one contiguous 1-D array (a
        decoded Parquet column, before it is copied into a row-major matrix); ``runs`` from
        :meth:`image_runs`. Equal to :meth:`add` of the same values, and about twice as fast.

        >>> s, t = MatrixStats(1, np.array([0, 0, 1]), 2), MatrixStats(1, np.array([0, 0, 1]), 2)
        >>> v = np.array([2.0, -1.0, np.nan])
        >>> s.add_column(0, 0, v, s.image_runs(0, 3)); t.add(0, v[:, None])
        >>> [(a.tolist(), b.tolist()) for a, b in ((s.nan, t.nan), (s.negative, t.negative), (s.low, t.low))]
        [([1], [1]), ([1], [1]), ([[-1.0], [inf]], [[-1.0], [inf]])]
        """
        with np.errstate(invalid="ignore", over="ignore"):
            total = np.add.reduce(values)
        if not np.isfinite(total):
            self._count_nonfinite(start, values[:, None], np.array([column]))
        low = np.inf
        for code, a, b in runs:
            segment = values[a:b]
            lowest = np.fmin.reduce(segment)
            low = np.fmin(low, lowest)
            if code >= 0 and self.codes is not None:
                self.low[code, column] = np.fmin(self.low[code, column], lowest)
                self.high[code, column] = np.fmax(self.high[code, column], np.fmax.reduce(segment))
        if low < 0:
            self.negative[column] += np.count_nonzero(values < 0)

    def _count_nonfinite(self, start: int, sub: np.ndarray, columns: np.ndarray) -> None:
        self.nan[columns] += np.count_nonzero(np.isnan(sub), axis=0)
        infinite = np.isinf(sub)
        hits = np.count_nonzero(infinite, axis=0)
        if not hits.any():
            return
        self.infinite[columns] += hits
        rows = np.where(hits > 0, start + infinite.argmax(axis=0), -1)
        seen = self.first_infinite[columns]
        update = (rows >= 0) & ((seen < 0) | (rows < seen))
        self.first_infinite[columns[update]] = rows[update]

    def _add_runs(self, block: np.ndarray, cols: slice, runs: list[tuple[int, int, int]]
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Widen each run's image by the range of its rows; the block's own (low, high) from the runs' ranges."""
        lows, highs = [], []
        for code, a, b in runs:
            rows = block[a:b]  # a view: no copy of the rows, unlike a mask
            low, high = np.fmin.reduce(rows, axis=0), np.fmax.reduce(rows, axis=0)
            if code >= 0:
                self._widen(code, cols, low, high)
            lows.append(low)
            highs.append(high)
        return np.fmin.reduce(lows, axis=0), np.fmax.reduce(highs, axis=0)

    def _add_interleaved(self, start: int, block: np.ndarray, cols: slice) -> None:
        codes = self.codes[start:start + block.shape[0]]
        present = np.unique(codes)
        for code in present[present >= 0]:
            rows = block[codes == code]
            self._widen(int(code), cols, np.fmin.reduce(rows, axis=0), np.fmax.reduce(rows, axis=0))

    def _widen(self, code: int, cols: slice, low: np.ndarray, high: np.ndarray) -> None:
        np.fmin(self.low[code, cols], low, out=self.low[code, cols])
        np.fmax(self.high[code, cols], high, out=self.high[code, cols])


def matrix_stats(m: Any, codes: np.ndarray | None = None, n_images: int = 0) -> MatrixStats:
    """:class:`MatrixStats` of a whole matrix (numpy or dask), walking it once in row blocks.

    >>> matrix_stats(np.array([[1.0], [np.nan]])).nan.tolist()
    [1]
    """
    stats = MatrixStats(m.shape[1], codes, n_images)
    for start, block in row_blocks(m):
        stats.add(start, block)
    return stats
