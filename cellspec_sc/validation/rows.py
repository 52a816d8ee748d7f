"""Helpers shared by the checks of several sections: offending rows as a :class:`Problem`, the required
columns and column types of a table, missing ids, per-feature counts.

>>> import numpy as np
>>> bad_rows("cells", "area", np.array([False, True, True]), "area not positive").message
'cells.area: area not positive in 2 row(s) (1, 2)'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc.spec.types import is_arrow_text, spec_type_of
from cellspec_sc.spec.vocabulary import SPEC_TYPES
from cellspec_sc.validation.context import Context, Problem, Skip
from cellspec_sc.validation.report import MAX_ROWS_SHOWN


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


def missing_or_empty(values: pd.Series) -> np.ndarray:
    """Where ``values`` is missing or ``""`` (Arrow-backed text with neither is answered by Arrow alone).

    >>> missing_or_empty(pd.Series(["a", "", None], dtype="string")).tolist()
    [False, True, True]
    """
    if is_arrow_text(values):
        text = pa.chunked_array(pa.array(values.array))
        if text.null_count == 0 and (len(text) == 0 or pc.min(pc.binary_length(text)).as_py() > 0):
            return np.zeros(len(text), dtype=bool)
    if values.dtype == object:  # Context.text's columns: numpy compares them without pandas' per-call cost
        objects = values.to_numpy()
        out = pd.isna(objects)
        out[~out] = objects[~out] == ""
        return out
    return (values.isna() | values.eq("")).to_numpy(dtype=bool, na_value=True)


def required_columns(ctx: Context, table: str, check_duplicates: bool = False) -> Problem | None:
    frame = ctx.table(table)
    names = list(frame.columns)
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


def not_unicode(values: pd.Series) -> str | None:
    """Where a text column holds a string that no UTF-8 file can store (a lone surrogate, as ``os.fsdecode``
    makes of a file name that is not UTF-8), or None. Only Python strings can: Arrow text is UTF-8.

    >>> not_unicode(pd.Series(["a", "b\\udcff"], dtype=object))
    "row 1 holds text that is not Unicode ('b\\\\udcff': a lone surrogate, as os.fsdecode makes of bytes that are not UTF-8)"
    """
    if values.dtype != object:
        return None
    try:
        pa.array(values.to_numpy(), type=pa.string(), from_pandas=True)
        return None
    except UnicodeEncodeError:
        pass
    for row, value in enumerate(values.to_numpy()):
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
            values = ctx.strings(table, column)
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
    objects = ids.to_numpy()
    repeats = np.zeros(len(objects), dtype=bool)
    if len(set(objects)) < len(objects):  # some value (or NA) repeats: find which rows
        repeats = (ids.duplicated(keep=False) & ids.notna()).to_numpy()
    return merge([p for p in (bad_rows(table, column, missing_or_empty(ids), missing),
                              bad_rows(table, column, repeats, f"duplicated {column}")) if p])


def not_one_of(ctx: Context, table: str, column: str, allowed: tuple[str, ...]) -> Problem | None:
    """Rows of ``table`` whose ``column`` is not one of ``allowed`` (NA included)."""
    values = ctx.text(table, column)
    return bad_rows(table, column, ~is_in(values, allowed), f"{column} not one of {', '.join(allowed)}")


def is_in(values: pd.Series, allowed: Iterable[str]) -> np.ndarray:
    """Where a column of :meth:`Context.text` (str or None) is one of ``allowed``: ``Series.isin`` by Python set
    lookups, for the dictionary, images and channels tables, which have a row per feature, image or channel.

    >>> is_in(pd.Series(["cell", None, "nucleus"], dtype=object), ("cell",)).tolist()
    [True, False, False]
    """
    allowed = frozenset(allowed)
    return np.fromiter((v in allowed for v in values.to_numpy()), dtype=bool, count=len(values))


def merge(problems: list[Problem]) -> Problem | None:
    if not problems:
        return None
    first = problems[0]
    return Problem("; ".join(p.message for p in problems), first.column, first.rows, first.count)


def feature_ids(ctx: Context, n: int) -> list[str]:
    try:
        ids = [str(v) for v in ctx.col("dictionary", "feature_id")]
    except Skip:
        ids = []
    return ids + [f"column {j}" for j in range(len(ids), n)] if len(ids) < n else ids


def kind_rows(ctx: Context, kind: str) -> np.ndarray:
    return dictionary_mask(ctx, kind=kind)


def absent(values: pd.Series) -> np.ndarray:
    return pd.isna(values.to_numpy())


def dictionary_mask(ctx: Context, **match: str) -> np.ndarray:
    mask = np.ones(len(ctx.table("dictionary")), dtype=bool)
    for column, value in match.items():
        mask &= np.asarray(ctx.text("dictionary", column).to_numpy() == value, dtype=bool)  # None != value
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
    when some value repeats, a lookup of the repeated values.

    >>> repeated(np.array([3, 1, 3, 2, 1])).tolist()
    [True, True, True, False, True]
    """
    ordered = np.sort(values)
    same = ordered[1:] == ordered[:-1]
    if not same.any():
        return np.zeros(values.shape, dtype=bool)
    return np.isin(values, ordered[1:][same])


def duplicated_rows(codes: np.ndarray, *numbers: np.ndarray) -> np.ndarray:
    """Rows whose (code, numbers...) occur more than once: ``DataFrame.duplicated(keep=False)``, with NaN
    equal to NaN and -0.0 to 0.0 as there, but one 64-bit hash per row finds the few candidates and only
    those are compared exactly (a tenth of the time on a million cells).

    >>> duplicated_rows(np.array([0, 0, 1, 0]), np.array([1.0, 2.0, 1.0, -0.0]), np.array([5.0, np.nan, 5.0, 0.0])).tolist()
    [False, False, False, False]
    >>> duplicated_rows(np.array([0, 0, 0]), np.array([0.0, -0.0, np.nan]), np.array([np.nan, np.nan, 1.0])).tolist()
    [True, True, False]
    """
    key = np.asarray(codes).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    for values in numbers:
        canonical = np.where(np.isnan(values), np.nan, np.asarray(values, dtype=np.float64) + 0.0)  # -0.0 -> 0.0
        key = (key ^ canonical.view(np.uint64)) * np.uint64(0xBF58476D1CE4E5B9)
        key ^= key >> np.uint64(31)
    out = np.zeros(len(key), dtype=bool)
    candidates = np.flatnonzero(repeated(key))
    if candidates.size:
        exact = pd.DataFrame({"code": np.asarray(codes)[candidates],
                              **{f"v{i}": np.asarray(v)[candidates] for i, v in enumerate(numbers)}})
        out[candidates] = exact.duplicated(keep=False).to_numpy()
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
