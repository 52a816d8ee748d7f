"""What a check sees and returns: the :class:`Context` (the object, the options, components found unusable,
columns converted once and shared), :class:`Problem` (what a check found), :class:`Skip` (its input is
missing), and the :func:`check` decorator that registers an implementation under its section 10 name.

>>> from cellspec_sc import example, vocabulary
>>> ctx = Context(example(), vocabulary(), (1.0, 1e4), 0.5, {})
>>> ctx.number("cells", "area")[:2].round(1).tolist(), ctx.image_codes()[1].tolist()
([86.8, 125.4], ['img1', 'img2'])

The rows a check finds, with helpers shared by the checks of several sections: offending rows as a
:class:`Problem`, the required columns and column types of a table, missing ids, per-feature counts.

>>> import numpy as np
>>> bad_rows("cells", "area", np.array([False, True, True]), "area not positive").message
'cells.area: area not positive in 2 row(s) (1, 2)'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc.model import MatrixStats, first_seen_code_array, first_seen_codes, matrix_stats
from cellspec_sc.spec import (
    PANDAS_DTYPES,
    SPEC_TYPES,
    Vocabulary,
    column_values,
    is_arrow_text,
    spec_type_of,
    without_repeated_names,
)
from cellspec_sc.validation._report import MAX_ROWS_SHOWN


class Skip(Exception):
    """Raised inside a check when its input is missing."""


class StatsPending(Exception):
    """Raised inside a check that needs the matrix stats while the caller still gathers them: the runner
    runs that check again once they are given (see :meth:`Context.stats` and
    :class:`~cellspec_sc.validation._runner.StagedValidation`)."""


@dataclass
class Problem:
    """What a check found wrong."""

    message: str
    column: str | None = None
    rows: np.ndarray | list[int] | None = None
    count: int | None = None


CheckFn = Callable[["Context"], Problem | str | None]
IMPLEMENTATIONS: dict[str, CheckFn] = {}  # check name -> function, filled by @check in checks/


def check(name: str) -> Callable[[CheckFn], CheckFn]:
    """Register the decorated function as the implementation of the section 10 check ``name``."""

    def register(fn: CheckFn) -> CheckFn:
        IMPLEMENTATIONS[name] = fn
        return fn
    return register


@dataclass
class Context:
    """What the checks look at: the object, options, and components found unusable."""

    x: Any
    voc: Vocabulary
    area_range: tuple[float, float]
    na_max: float
    source_nonfinite: Mapping[str, int]
    broken: set[str] = field(default_factory=set)
    given_stats: MatrixStats | None = None
    # A staged validation (the caller still fills the matrix): the stats come later, with the cell id codes
    # when ``expected_cell_codes``; ``expected_image_codes`` are the caller's image codes, usable at once.
    stats_pending: bool = False
    expected_cell_codes: bool = False
    expected_image_codes: tuple[np.ndarray, np.ndarray] | None = None
    _stats: MatrixStats | None = None
    _columns: dict[tuple[str, str, str], Any] = field(default_factory=dict)
    _items: dict[Any, Any] = field(default_factory=dict)

    def part(self, name: str) -> Any:
        if "object" in self.broken or name in self.broken:
            raise Skip(f"{name} is missing or not usable")
        return getattr(self.x, name)

    def table(self, name: str) -> pd.DataFrame:
        return self.part(name)

    def names(self, table: str) -> list[Any]:
        """The column names of a table, in order (repeated ones too), made once per validation."""
        return [name for name, _ in self.items(table)]

    def items(self, table: str) -> list[tuple[Any, Values]]:
        """(name, values) of every column of a table, in order (:func:`~cellspec_sc.spec.column_values`: no Series
        around each): the checks, the portability note and the memo's token share these, made once per validation."""
        return self.frame_items(table, self.table(table))

    def frame_items(self, table: str, frame: pd.DataFrame) -> list[tuple[Any, Values]]:
        """:meth:`items` of ``frame``, the object's table ``table`` (whether or not a check found it unusable)."""
        if table not in self._items:
            self._items[table] = column_values(frame)
        return self._items[table]

    def single_columns(self, table: str) -> dict[Any, Values]:
        """{name: values} of :meth:`items` without the names that are duplicated (the required-columns check
        reports those), in order."""
        key = ("single", table)
        if key not in self._items:
            self._items[key] = dict(without_repeated_names(self.items(table)))
        return self._items[key]

    def shared[T](self, key: str, make: Callable[[], T]) -> T:
        """``make()``, made once per validation for every check that asks for ``key`` (e.g. the contacts' id codes,
        which two checks read)."""
        if ("shared", key) not in self._items:
            self._items[("shared", key)] = make()
        return self._items[("shared", key)]

    def col(self, table: str, column: str) -> Values:
        """The values of ``column`` of ``table`` (a numpy or pandas array; skips when it is absent or repeated)."""
        values = self.single_columns(table).get(column)
        if values is None:
            reason = "duplicated" if column in self.table(table).columns else "no"
            raise Skip(f"{table} has {reason} column {column!r}")
        return values

    def text(self, table: str, column: str) -> np.ndarray:
        """A character column's values as a numpy object array of str, None for NA (skips when it is not
        character): the checks iterate and compare them, without a Series' cost per call."""
        return self._converted(table, column, "text")

    def character(self, table: str, column: str) -> Values:
        """A character column's values as the table holds them (Arrow-backed ``string`` in a canonical table; skips
        like text)."""
        return self._converted(table, column, "character")

    def strings(self, table: str, column: str) -> pd.Series:
        """A character column as a Series of pandas ``string`` (Arrow-backed: fast on a million ids; skips like
        text)."""
        return self._converted(table, column, "strings")

    def number(self, table: str, column: str) -> np.ndarray:
        """A numeric column as float64 with NaN for NA (skips when it is not numeric)."""
        return self._converted(table, column, "number")

    def _converted(self, table: str, column: str, how: str) -> Any:
        # Several checks read the same cells columns; converting a million ids once, not per check.
        key = (table, column, how)
        if key not in self._columns:
            values = self.col(table, column)
            if how in ("text", "strings", "character"):
                if spec_type_of(values) != "character":
                    raise Skip(f"{table}.{column} is not character")
                target = PANDAS_DTYPES["character"]
                self._columns[key] = values if how == "character" else _objects(values) if how == "text" else \
                    pd.Series(values, copy=False) if values.dtype == target else pd.Series(values).astype(target)
            else:
                if spec_type_of(values) not in ("double", "integer"):
                    raise Skip(f"{table}.{column} is not numeric")
                self._columns[key] = _floats(values)
        return self._columns[key]

    def matrix(self) -> Any:
        m = self.part("measurements")
        if "measurements_type" in self.broken:
            raise Skip("measurements is not a float64 matrix")
        return m

    def stats(self) -> MatrixStats:
        """Counts and per-image ranges of the matrix: one pass, shared by the four matrix checks.

        Raises :class:`StatsPending` while the stats are still being gathered (the matrix is being
        filled); :meth:`give_stats` ends that."""
        m = self.matrix()
        if self.stats_pending:
            raise StatsPending()
        if self._stats is None:
            self._stats = self.given_stats if self._usable(self.given_stats, m) else self._gather(m)
        return self._stats

    def give_stats(self, stats: MatrixStats) -> None:
        """The stats a staged validation waited for (see :attr:`stats_pending`)."""
        self.given_stats, self.stats_pending = stats, False

    def nonfinite_in_source(self) -> dict[str, int]:
        """{feature id: NaN/infinite values the source stored as numbers}: what the reader's stats found,
        and what the caller passed as ``source_nonfinite`` (that wins for a feature named in both)."""
        found = self.given_stats.stored_nonfinite if self.given_stats is not None else {}
        return {**found, **self.source_nonfinite}

    def _usable(self, stats: MatrixStats | None, m: Any) -> bool:
        return stats is not None and stats.n_features == m.shape[1] and (stats.has_ranges or not self._rows_match())

    def _rows_match(self) -> bool:
        return "measurements_rows" not in self.broken and "cells" not in self.broken

    def _gather(self, m: Any) -> MatrixStats:
        codes, n_images = None, 0
        if self._rows_match():
            try:
                codes, uniques = self.image_codes()
                n_images = len(uniques)
            except Skip:
                pass
        return matrix_stats(m, codes, n_images)

    def image_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """(image code of each cell, -1 for NA; the image ids in order of first appearance)."""
        key = ("cells", "image_id", "codes")
        if key not in self._columns:
            ids = self.character("cells", "image_id")
            # a reader's, made from the same column
            known = self.expected_image_codes if self.given_stats is None else self.given_stats.image_codes
            self._columns[key] = known if known is not None and len(known[0]) == len(ids) else first_seen_codes(ids)
        return self._columns[key]

    def cell_codes(self) -> np.ndarray:
        """Dense codes of the cells' cell_id (-1 for NA): the reader's when it made them from the same column
        (:attr:`MatrixStats.cell_codes`), else encoded here. Raises :class:`StatsPending` while pending stats
        will bring them."""
        key = ("cells", "cell_id", "codes")
        if key not in self._columns:
            if self.stats_pending and self.expected_cell_codes:
                raise StatsPending()  # the reader's codes are on their way; encoding them here would do it twice
            ids = self.character("cells", "cell_id")
            known = None if self.given_stats is None else self.given_stats.cell_codes
            self._columns[key] = known if known is not None and len(known) == len(ids) else first_seen_code_array(ids)
        return self._columns[key]

    def per_cell(self, by_image: Mapping[Any, Any], missing: Any, dtype: Any) -> np.ndarray:
        """``by_image[image_id]`` of every cell (``missing`` for NA or unknown image ids)."""
        codes, uniques = self.image_codes()
        lookup = np.array([by_image.get(u, missing) for u in uniques] + [missing], dtype=dtype)
        return lookup[codes]  # code -1 (NA) picks the trailing ``missing``


Values = np.ndarray | pd.api.extensions.ExtensionArray
"""A column's values as :func:`~cellspec_sc.spec.column_values` gives them."""


def _objects(values: Values) -> np.ndarray:
    """A character column's values as str objects with None for NA (from Arrow directly when Arrow holds it).

    >>> _objects(pd.array(["a", None], dtype="string")).tolist(), _objects(np.array(["b", np.nan], dtype=object))
    (['a', None], array(['b', None], dtype=object))
    """
    if is_arrow_text(values):
        return pa.chunked_array(pa.array(values)).to_numpy(zero_copy_only=False)
    objects = np.asarray(values, dtype=object)
    out = objects.copy()
    out[pd.isna(objects)] = None
    return out


def _floats(values: Values) -> np.ndarray:
    """A numeric column's values as float64 with NaN for NA; a float64 column's own array, read-only (the checks
    only read it).

    >>> _floats(pd.array([1, None], dtype="Int32")).tolist(), _floats(np.array([2.0])).flags.writeable
    ([1.0, nan], False)
    """
    if isinstance(values, np.ndarray) and values.dtype == np.float64:
        view = values.view()
        view.flags.writeable = False
        return view
    if isinstance(values, np.ndarray):
        return values.astype(np.float64)
    return values.to_numpy(dtype=np.float64, na_value=np.nan)


def rows_text(rows: np.ndarray, count: int) -> str:
    shown = ", ".join(str(int(r)) for r in rows[:MAX_ROWS_SHOWN])
    more = ", …" if count > MAX_ROWS_SHOWN else ""
    return f"{count} row(s) ({shown}{more})"


def bad_rows(table: str, column: str | None, mask: np.ndarray, what: str) -> Problem | None:
    rows = np.flatnonzero(mask)
    if rows.size == 0:
        return None
    where = f"{table}.{column}" if column else table
    return Problem(f"{where}: {what} in {rows_text(rows, rows.size)}", column, rows, int(rows.size))


def missing_or_empty(values: pd.Series | Values) -> np.ndarray:
    """Where ``values`` (a column or its values, or :meth:`Context.text`'s array) is missing or ``""`` (Arrow-backed
    text with neither is answered by Arrow alone).

    >>> missing_or_empty(pd.Series(["a", "", None], dtype="string")).tolist()
    [False, True, True]
    >>> missing_or_empty(np.array(["", "b", None], dtype=object)).tolist()
    [True, False, True]
    >>> missing_or_empty(pd.array(["", "b", None], dtype="string[python]")).tolist()
    [True, False, True]
    """
    if isinstance(values, np.ndarray):
        return _missing_or_empty_objects(values)
    array = values.array if isinstance(values, pd.Series) else values
    if is_arrow_text(array) and _all_present(pa.chunked_array(pa.array(array))):
        return np.zeros(len(array), dtype=bool)
    if array.dtype == object:
        return _missing_or_empty_objects(np.asarray(array, dtype=object))
    equal = array == ""  # a boolean array with NA (pd.NA semantics) or a numpy array (NaN semantics)
    empty = equal.to_numpy(dtype=bool, na_value=True) if isinstance(equal, pd.api.extensions.ExtensionArray) else \
        np.asarray(equal, dtype=bool)
    return np.asarray(pd.isna(array), dtype=bool) | empty


_OFFSET_TYPES = {pa.string(): np.int32, pa.large_string(): np.int64}


def _all_present(text: pa.ChunkedArray) -> bool:
    """Whether Arrow text holds neither a missing nor an empty value: an empty value is two equal offsets in a
    row (read from each chunk's offsets buffer, without a compute call per chunk).

    >>> [_all_present(pa.chunked_array([values])) for values in (["a", "bc"], ["a", ""], ["a", None], [])]
    [True, False, False, True]
    """
    for chunk in text.chunks:
        if not len(chunk):
            continue
        if chunk.null_count:
            return False
        offset_type = _OFFSET_TYPES.get(chunk.type)
        if offset_type is None:  # another layout (string views): the caller looks value by value
            return False
        offsets = np.frombuffer(chunk.buffers()[1], dtype=offset_type)[chunk.offset:chunk.offset + len(chunk) + 1]
        if not (offsets[1:] > offsets[:-1]).all():
            return False
    return True


def _missing_or_empty_objects(objects: np.ndarray) -> np.ndarray:
    out = pd.isna(objects)
    out[~out] = objects[~out] == ""
    return out


def required_columns(ctx: Context, table: str, check_duplicates: bool = False) -> Problem | None:
    names = ctx.names(table)
    present = set(names)
    missing = [c for c in ctx.voc.required(table) if c not in present]
    dups = sorted({c for c, n in Counter(names).items() if n > 1}) if check_duplicates else []
    parts = []
    if missing:
        parts.append(f"{table} lacks MUST column(s) {', '.join(missing)}")
    if dups:
        parts.append(f"{table} has duplicated column name(s) {', '.join(map(str, dups))}")
    return Problem("; ".join(parts), missing[0] if missing else None) if parts else None


def column_types(ctx: Context, table: str, only_declared: bool = True) -> Problem | None:
    bad = []
    for name, values in ctx.single_columns(table).items():
        col = ctx.voc.column(table, str(name))
        actual = spec_type_of(values)
        if col is not None and actual != col.type:
            bad.append(f"{name} is {values.dtype} ({actual or 'no spec type'}), expected {col.type}")
        elif col is None and not only_declared and actual is None:
            bad.append(f"{name} is {values.dtype}, which is none of {', '.join(SPEC_TYPES)}")
        elif actual == "character" and (where := not_unicode(values)):
            bad.append(f"{name} {where}")
    if bad:
        return Problem(f"{table}: " + "; ".join(bad), bad[0].split(" ", 1)[0])
    return None


def not_unicode(values: pd.Series | Values) -> str | None:
    """Where a text column holds a string that no UTF-8 file can store (a lone surrogate, as ``os.fsdecode``
    makes of a file name that is not UTF-8), or None. Only Python strings can: Arrow text is UTF-8.

    >>> not_unicode(pd.Series(["a", "b\\udcff"], dtype=object))  # doctest: +NORMALIZE_WHITESPACE
    "row 1 holds text that is not Unicode ('b\\\\udcff': a lone surrogate, as os.fsdecode makes of bytes
    that are not UTF-8)"
    """
    if values.dtype != object:
        return None
    objects = np.asarray(values, dtype=object)
    try:
        pa.array(objects, type=pa.string(), from_pandas=True)
        return None
    except UnicodeEncodeError:
        pass
    for row, value in enumerate(objects):
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return (f"row {row} holds text that is not Unicode ({value!r}: a lone surrogate, as os.fsdecode makes "
                        "of bytes that are not UTF-8)")
    return None


def ids_present(ctx: Context, table: str, columns: tuple[str, ...]) -> Problem | None:
    problems = []
    seen = 0
    for column in columns:
        try:
            values = ctx.character(table, column)
        except Skip:
            continue
        seen += 1
        problem = bad_rows(table, column, missing_or_empty(values), "missing or empty value")
        if problem:
            problems.append(problem)
    if not seen:
        raise Skip(f"{table} has none of {', '.join(columns)} as character columns")
    return merge(problems)


def unique_ids(ctx: Context, table: str, column: str, missing: str) -> Problem | None:
    """Rows of ``table`` whose ``column`` is missing or empty (reported as ``missing``) or repeated."""
    ids = ctx.text(table, column)
    repeats = np.zeros(len(ids), dtype=bool)
    if len(set(ids)) < len(ids):  # some value (or NA) repeats: find which rows
        repeats = pd.Series(ids, dtype=object).duplicated(keep=False).to_numpy() & ~pd.isna(ids)
    return merge([p for p in (bad_rows(table, column, missing_or_empty(ids), missing),
                              bad_rows(table, column, repeats, f"duplicated {column}")) if p])


def not_one_of(ctx: Context, table: str, column: str, allowed: tuple[str, ...]) -> Problem | None:
    """Rows of ``table`` whose ``column`` is not one of ``allowed`` (NA included)."""
    values = ctx.text(table, column)
    return bad_rows(table, column, ~is_in(values, allowed), f"{column} not one of {', '.join(allowed)}")


def is_in(values: np.ndarray, allowed: Iterable[str]) -> np.ndarray:
    """Where a column of :meth:`Context.text` (str or None) is one of ``allowed``: ``Series.isin`` by Python set
    lookups, for the dictionary, images and channels tables, which have a row per feature, image or channel.

    >>> is_in(np.array(["cell", None, "nucleus"], dtype=object), ("cell",)).tolist()
    [True, False, False]
    """
    allowed = frozenset(allowed)
    return np.fromiter((v in allowed for v in values), dtype=bool, count=len(values))


def merge(problems: list[Problem]) -> Problem | None:
    if not problems:
        return None
    first = problems[0]
    return Problem("; ".join(p.message for p in problems), first.column, first.rows, first.count)


def feature_ids(ctx: Context, n: int) -> list[str]:
    """The dictionary's feature ids as text (``<NA>`` for a missing one), then ``column j`` for the matrix's columns
    beyond them."""
    try:
        ids = ["<NA>" if v is None else v for v in ctx.text("dictionary", "feature_id").tolist()]
    except Skip:
        try:
            ids = [str(v) for v in ctx.col("dictionary", "feature_id")]
        except Skip:
            ids = []
    return ids + [f"column {j}" for j in range(len(ids), n)] if len(ids) < n else ids


def kind_rows(ctx: Context, kind: str) -> np.ndarray:
    return dictionary_mask(ctx, kind=kind)


def absent(values: np.ndarray) -> np.ndarray:
    return pd.isna(values)


def dictionary_mask(ctx: Context, **match: str) -> np.ndarray:
    mask = np.ones(len(ctx.table("dictionary")), dtype=bool)
    for column, value in match.items():
        mask &= np.asarray(ctx.text("dictionary", column) == value, dtype=bool)  # None != value
    return mask


def per_feature_problem(ctx: Context, counts: np.ndarray, what: str) -> Problem | None:
    bad = np.flatnonzero(counts)
    if bad.size == 0:
        return None
    ids = feature_ids(ctx, counts.size)
    shown = ", ".join(f"{ids[j]} ({counts[j]})" for j in bad[:MAX_ROWS_SHOWN])
    more = f", … ({bad.size} features)" if bad.size > MAX_ROWS_SHOWN else ""
    return Problem(f"measurements: {what}: {shown}{more}", ids[bad[0]], None, int(bad.size))

def repeated(values: np.ndarray) -> np.ndarray:
    """Where a value of a 1-D integer array occurs more than once (``duplicated(keep=False)``), found by
    one sort (numpy sorts a million integers in a few ms, a tenth of pandas' hash table) and, only
    when some value repeats, a lookup of the few repeated values; when many repeat, a count by Arrow's hash
    table instead (looking up a large set of repeated values costs several sorts).

    >>> repeated(np.array([3, 1, 3, 2, 1])).tolist()
    [True, True, True, False, True]
    """
    ordered = np.sort(values)
    same = ordered[1:] == ordered[:-1]
    if not same.any():
        return np.zeros(values.shape, dtype=bool)
    again = ordered[1:][same]
    if again.size * 64 < values.size:
        return np.isin(values, again)
    codes = pc.dictionary_encode(pa.array(values)).indices.to_numpy()
    return np.bincount(codes)[codes] > 1


def duplicated_rows(codes: np.ndarray, *numbers: np.ndarray) -> np.ndarray:
    """Rows whose (code, numbers...) occur more than once: ``DataFrame.duplicated(keep=False)``, with NaN
    equal to NaN and -0.0 to 0.0 as there, but one 64-bit hash per row finds the few candidates and only
    those are compared exactly, by the bits of their canonical values (a tenth of the time on a million cells).

    >>> duplicated_rows(np.array([0, 0, 1, 0]), np.array([1.0, 2.0, 1.0, -0.0]),
    ...                 np.array([5.0, np.nan, 5.0, 0.0])).tolist()
    [False, False, False, False]
    >>> duplicated_rows(np.array([0, 0, 0]), np.array([0.0, -0.0, np.nan]), np.array([np.nan, np.nan, 1.0])).tolist()
    [True, True, False]
    """
    codes = np.asarray(codes, dtype=np.int64)
    key = codes.view(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    bits = [codes.view(np.uint64)]  # equal values, equal bits: one NaN, and 0.0 for -0.0
    for values in numbers:
        canonical = np.where(np.isnan(values), np.nan, np.asarray(values, dtype=np.float64) + 0.0)
        bits.append(canonical.view(np.uint64))
        key = (key ^ bits[-1]) * np.uint64(0xBF58476D1CE4E5B9)
        key ^= key >> np.uint64(31)
    out = np.zeros(len(key), dtype=bool)
    candidates = np.flatnonzero(repeated(key))
    if candidates.size:
        exact = np.column_stack([b[candidates] for b in bits])
        _, inverse, counts = np.unique(exact, axis=0, return_inverse=True, return_counts=True)
        out[candidates] = counts[inverse.reshape(-1)] > 1
    return out


def duplicated_pairs(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Rows whose pair of codes (``first_seen_codes``: -1 for NA, equal to NA) occurs more than once:
    ``DataFrame.duplicated(keep=False)`` of the two coded columns, as one integer per pair.

    >>> duplicated_pairs(np.array([0, 0, 1, 1, -1, -1]), np.array([0, 1, 0, 0, -1, -1])).tolist()
    [False, False, True, True, True, True]
    """
    a, b = np.asarray(first, dtype=np.int64) + 1, np.asarray(second, dtype=np.int64) + 1
    if a.size == 0:
        return np.zeros(0, dtype=bool)
    return repeated(a * (int(b.max()) + 1) + b)  # below n**2: no overflow under 3e9 rows
