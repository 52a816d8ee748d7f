"""Validation: every check of spec section 10, under its exact name and level.

The list of checks, their levels and rules come from :func:`vocabulary`; this
module only holds one implementation per name (a test checks that the two sets
are equal). Structure checks fail, semantic checks warn; a check whose input is
missing (a component or column already reported absent) is skipped.

>>> from cellspec_sc import example, validate
>>> report = validate(example())
>>> report.ok, report.status("cells_key_unique")
(True, 'pass')
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cellspec_sc.errors import ValidationError
from cellspec_sc.progress import progress
from cellspec_sc.validation.matrix_stats import MatrixStats, first_seen_codes, matrix_stats
from cellspec_sc.spec.types import PANDAS_DTYPES, spec_type_of
from cellspec_sc.spec.vocabulary import Vocabulary, vocabulary

MAX_ROWS_SHOWN = 5
_STATUS_ORDER = {"fail": 0, "warn": 1, "skip": 2, "pass": 3}


# -- results -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check. ``rows`` holds the first offending 0-based row positions."""

    name: str
    level: str
    status: str
    message: str
    rule: str
    column: str | None = None
    rows: tuple[int, ...] = ()
    count: int = 0


@dataclass
class ValidationReport:
    """All check results of one :func:`validate` call, in the order of section 10.

    >>> from cellspec_sc import example
    >>> rep = example().validate()
    >>> [r.status for r in rep.results][:3]
    ['pass', 'pass', 'pass']
    """

    results: list[CheckResult]
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """False iff a structure check failed."""
        return not self.failures

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "fail"]

    @property
    def warnings(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "warn"]

    def result(self, name: str) -> CheckResult:
        for r in self.results:
            if r.name == name:
                return r
        raise KeyError(f"no check named {name!r}")

    def status(self, name: str) -> str:
        """``"pass"``, ``"fail"``, ``"warn"`` or ``"skip"`` for the named check."""
        return self.result(name).status

    def ordered(self) -> list[CheckResult]:
        """Results with failures first, then warnings, skips, passes (spec order within each)."""
        return sorted(self.results, key=lambda r: _STATUS_ORDER[r.status])

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.results) for s in _STATUS_ORDER}

    def raise_if_failed(self, context: str | None = None) -> ValidationReport:
        """Raise :class:`cellspec_sc.ValidationError` if a structure check failed; else return self."""
        if not self.ok:
            raise ValidationError(self, context)
        return self

    def to_frame(self) -> pd.DataFrame:
        """One row per check: name, level, status, message, column, count."""
        return pd.DataFrame([{"name": r.name, "level": r.level, "status": r.status, "message": r.message,
                              "column": r.column, "count": r.count} for r in self.ordered()])

    def format(self, *, only_problems: bool = False) -> str:
        """Plain-text report, failures first."""
        c = self.counts()
        head = (f"cellspec validation: {'OK' if self.ok else 'FAILED'} "
                f"({c['pass']} pass, {c['fail']} fail, {c['warn']} warn, {c['skip']} skip)")
        rows = [r for r in self.ordered() if not only_problems or r.status in ("fail", "warn")]
        width = max((len(r.name) for r in rows), default=0)
        return "\n".join([head] + [f"  {r.status.upper():<4}  {r.name:<{width}}  {r.message}" for r in rows])

    def __str__(self) -> str:
        return self.format()

    def __repr__(self) -> str:
        return self.format()

    def _repr_html_(self) -> str:
        colours = {"fail": "#c62828", "warn": "#ef6c00", "skip": "#757575", "pass": "#2e7d32"}
        c = self.counts()
        rows = "".join(
            f"<tr><td style='color:{colours[r.status]};font-weight:bold'>{r.status}</td>"
            f"<td><code>{r.name}</code></td><td>{r.level}</td><td style='text-align:left'>{html.escape(r.message)}</td></tr>"
            for r in self.ordered())
        return (f"<div class='cellspec-validation'><strong>cellspec validation: {'OK' if self.ok else 'FAILED'}</strong>"
                f" ({c['pass']} pass, {c['fail']} fail, {c['warn']} warn, {c['skip']} skip)"
                f"<table><tr><th>status</th><th>check</th><th>level</th><th>message</th></tr>{rows}</table></div>")


# -- check plumbing ----------------------------------------------------------------------------
class Skip(Exception):
    """Raised inside a check when its input is missing."""


@dataclass
class Problem:
    """What a check found wrong."""

    message: str
    column: str | None = None
    rows: np.ndarray | list[int] | None = None
    count: int | None = None


CheckFn = Callable[["Context"], Problem | str | None]
_IMPLEMENTATIONS: dict[str, CheckFn] = {}


def _check(name: str) -> Callable[[CheckFn], CheckFn]:
    def register(fn: CheckFn) -> CheckFn:
        _IMPLEMENTATIONS[name] = fn
        return fn
    return register


def implemented_checks() -> tuple[str, ...]:
    """Names of the checks this module implements (equal to the vocabulary's, by test)."""
    return tuple(_IMPLEMENTATIONS)


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
    _stats: MatrixStats | None = None
    _columns: dict[tuple[str, str, str], Any] = field(default_factory=dict)

    def part(self, name: str) -> Any:
        if "object" in self.broken or name in self.broken:
            raise Skip(f"{name} is missing or not usable")
        return getattr(self.x, name)

    def table(self, name: str) -> pd.DataFrame:
        return self.part(name)

    def col(self, table: str, column: str) -> pd.Series:
        frame = self.table(table)
        if column not in frame.columns:
            raise Skip(f"{table} has no column {column!r}")
        values = frame[column]
        if isinstance(values, pd.DataFrame):
            raise Skip(f"{table} has duplicated column {column!r}")
        return values

    def text(self, table: str, column: str) -> pd.Series:
        """A column as object strings with None for NA (skips when it is not character)."""
        return self._converted(table, column, "text")

    def strings(self, table: str, column: str) -> pd.Series:
        """A character column as pandas ``string`` (Arrow-backed: fast on a million ids; skips like text)."""
        return self._converted(table, column, "strings")

    def number(self, table: str, column: str) -> np.ndarray:
        """A numeric column as float64 with NaN for NA (skips when it is not numeric)."""
        return self._converted(table, column, "number")

    def _converted(self, table: str, column: str, how: str) -> Any:
        # Several checks read the same cells columns; converting a million ids once, not per check.
        key = (table, column, how)
        if key not in self._columns:
            s = self.col(table, column)
            if how in ("text", "strings"):
                if spec_type_of(s) != "character":
                    raise Skip(f"{table}.{column} is not character")
                self._columns[key] = s.astype(object).where(s.notna(), None) if how == "text" \
                    else s.astype(PANDAS_DTYPES["character"])
            else:
                if spec_type_of(s) not in ("double", "integer"):
                    raise Skip(f"{table}.{column} is not numeric")
                self._columns[key] = s.to_numpy(dtype=np.float64, na_value=np.nan)
        return self._columns[key]

    def matrix(self) -> Any:
        m = self.part("measurements")
        if "measurements_type" in self.broken:
            raise Skip("measurements is not a double matrix")
        return m

    def stats(self) -> MatrixStats:
        """Counts and per-image ranges of the matrix: one pass, shared by the four matrix checks."""
        m = self.matrix()
        if self._stats is None:
            self._stats = self.given_stats if self._usable(self.given_stats, m) else self._gather(m)
        return self._stats

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
            self._columns[key] = first_seen_codes(self.strings("cells", "image_id"))
        return self._columns[key]

    def per_cell(self, by_image: Mapping[Any, Any], missing: Any, dtype: Any) -> np.ndarray:
        """``by_image[image_id]`` of every cell (``missing`` for NA or unknown image ids)."""
        codes, uniques = self.image_codes()
        lookup = np.array([by_image.get(u, missing) for u in uniques] + [missing], dtype=dtype)
        return lookup[codes]  # code -1 (NA) picks the trailing ``missing``


def _rows_text(rows: np.ndarray, count: int) -> str:
    shown = ", ".join(str(int(r)) for r in rows[:MAX_ROWS_SHOWN])
    more = ", …" if count > MAX_ROWS_SHOWN else ""
    return f"{count} row(s) ({shown}{more})"


def _bad_rows(table: str, column: str | None, mask: np.ndarray, what: str) -> Problem | None:
    rows = np.flatnonzero(mask)
    if rows.size == 0:
        return None
    where = f"{table}.{column}" if column else table
    return Problem(f"{where}: {what} in {_rows_text(rows, rows.size)}", column, rows, int(rows.size))


def _missing_or_empty(values: pd.Series) -> np.ndarray:
    return (values.isna() | values.eq("")).to_numpy(dtype=bool, na_value=True)


# -- the object --------------------------------------------------------------------------------
@_check("object_class")
def _object_class(ctx: Context) -> Problem | None:
    from cellspec_sc.model.cellspec import CellSpec

    if isinstance(ctx.x, CellSpec):
        return None
    ctx.broken.add("object")
    return Problem(f"the object is a {type(ctx.x).__module__}.{type(ctx.x).__name__}, not a cellspec_sc.CellSpec")


_CONTAINERS: dict[str, tuple[type, ...] | None] = {
    "spec_version": (str,), "cells": (pd.DataFrame,), "dictionary": (pd.DataFrame,), "images": (pd.DataFrame,),
    "channels": (pd.DataFrame,), "provenance": (dict,), "measurements": None,
}


@_check("object_components")
def _object_components(ctx: Context) -> Problem | None:
    if "object" in ctx.broken:
        raise Skip("not a CellSpec")
    bad = []
    for name, types in _CONTAINERS.items():
        value = getattr(ctx.x, name, None)
        ok = _is_matrix_like(value) if types is None else isinstance(value, types)
        if not ok:
            bad.append(f"{name} is {type(value).__name__}")
            ctx.broken.add(name)
    adjacency = getattr(ctx.x, "adjacency", None)
    if adjacency is not None and not isinstance(adjacency, pd.DataFrame):
        bad.append(f"adjacency is {type(adjacency).__name__}, not a DataFrame or None")
        ctx.broken.add("adjacency")
    return Problem("; ".join(bad)) if bad else None


def _is_matrix_like(value: Any) -> bool:
    return all(hasattr(value, a) for a in ("shape", "dtype", "ndim")) and not isinstance(value, pd.DataFrame)


@_check("spec_version")
def _spec_version(ctx: Context) -> Problem | None:
    version = ctx.part("spec_version")
    match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", version)
    if not match:
        return Problem(f"spec_version {version!r} is not a MAJOR.MINOR.PATCH version string")
    supported = int(ctx.voc.spec_version.split(".")[0])
    if int(match.group(1)) != supported:
        return Problem(f"spec_version {version!r} has major version {match.group(1)}; supported: {supported}")
    return None


# -- shared table checks -----------------------------------------------------------------------
def _required_columns(ctx: Context, table: str, check_duplicates: bool = False) -> Problem | None:
    frame = ctx.table(table)
    missing = [c for c in ctx.voc.required(table) if c not in frame.columns]
    dups = sorted({c for c in frame.columns if list(frame.columns).count(c) > 1}) if check_duplicates else []
    parts = []
    if missing:
        parts.append(f"{table} lacks MUST column(s) {', '.join(missing)}")
    if dups:
        parts.append(f"{table} has duplicated column name(s) {', '.join(map(str, dups))}")
    return Problem("; ".join(parts), missing[0] if missing else None) if parts else None


def _column_types(ctx: Context, table: str, only_declared: bool = True) -> Problem | None:
    frame = ctx.table(table)
    bad = []
    for name in dict.fromkeys(frame.columns):
        values = frame[name]
        if isinstance(values, pd.DataFrame):
            continue
        col = ctx.voc.column(table, str(name))
        actual = spec_type_of(values)
        if col is not None and actual != col.type:
            bad.append(f"{name} is {values.dtype} ({actual or 'no spec type'}), expected {col.type}")
        elif col is None and not only_declared and actual is None:
            bad.append(f"{name} is {values.dtype}, which is none of {', '.join(('character', 'double', 'integer', 'logical'))}")
    if bad:
        return Problem(f"{table}: " + "; ".join(bad), bad[0].split(" ", 1)[0])
    return None


def _ids_present(ctx: Context, table: str, columns: tuple[str, ...]) -> Problem | None:
    problems = []
    seen = 0
    for column in columns:
        try:
            values = ctx.strings(table, column)
        except Skip:
            continue
        seen += 1
        problem = _bad_rows(table, column, _missing_or_empty(values), "missing or empty value")
        if problem:
            problems.append(problem)
    if not seen:
        raise Skip(f"{table} has none of {', '.join(columns)} as character columns")
    return _merge(problems)


def _merge(problems: list[Problem]) -> Problem | None:
    if not problems:
        return None
    first = problems[0]
    return Problem("; ".join(p.message for p in problems), first.column, first.rows, first.count)


# -- cells -------------------------------------------------------------------------------------
@_check("cells_required_columns")
def _cells_required(ctx: Context) -> Problem | None:
    return _required_columns(ctx, "cells", check_duplicates=True)


@_check("cells_column_types")
def _cells_types(ctx: Context) -> Problem | None:
    return _column_types(ctx, "cells", only_declared=False)


@_check("cells_reserved_names")
def _cells_reserved(ctx: Context) -> Problem | None:
    bad = []
    for name in map(str, ctx.table("cells").columns):
        if name.startswith(ctx.voc.internal_prefix):
            bad.append(f"{name} uses the internal prefix {ctx.voc.internal_prefix}")
        for prefix in ("region__", "boundary_distance__"):
            if name.startswith(prefix) and not ctx.voc.is_valid_layer_name(name[len(prefix):]):
                bad.append(f"{name} has an invalid layer name (must match {ctx.voc.layer_name_pattern})")
    return Problem("cells: " + "; ".join(bad), bad[0].split(" ", 1)[0]) if bad else None


@_check("cells_subject_id")
def _cells_subject(ctx: Context) -> Problem | None:
    if "subject_id" in ctx.table("cells").columns:
        return Problem("cells has a subject_id column; subject_id belongs in images", "subject_id")
    return None


@_check("cells_ids_present")
def _cells_ids(ctx: Context) -> Problem | None:
    return _ids_present(ctx, "cells", ("cell_id", "image_id", "sample_id"))


@_check("cells_key_unique")
def _cells_key(ctx: Context) -> Problem | None:
    keys = pd.DataFrame({"image_id": ctx.strings("cells", "image_id"), "cell_id": ctx.strings("cells", "cell_id")})
    dup = keys.duplicated(keep=False).to_numpy()
    return _bad_rows("cells", "cell_id", dup, "duplicated (image_id, cell_id)")


@_check("cells_coordinates_finite")
def _cells_finite(ctx: Context) -> Problem | None:
    return _merge([p for c in ("x", "y") if (p := _bad_rows("cells", c, ~np.isfinite(ctx.number("cells", c)),
                                                               "missing or non-finite coordinate"))])


@_check("cells_area_positive")
def _cells_area(ctx: Context) -> Problem | None:
    area = ctx.number("cells", "area")
    return _bad_rows("cells", "area", ~(np.isnan(area) | (area > 0)), "area not positive")


@_check("cells_images_known")
def _cells_images_known(ctx: Context) -> Problem | None:
    known = dict.fromkeys(ctx.text("images", "image_id").dropna(), True)
    return _bad_rows("cells", "image_id", ~ctx.per_cell(known, False, bool), "image_id not in images")


@_check("cells_sample_consistent")
def _cells_sample(ctx: Context) -> Problem | None:
    images = dict(zip(ctx.text("images", "image_id"), ctx.text("images", "sample_id"), strict=True))
    # Compared as codes: each cell's sample, and the sample its image expects, as positions in the
    # cells' own samples (-2: a sample no cell has), so no per-cell strings are made.
    actual, samples = first_seen_codes(ctx.strings("cells", "sample_id"))
    position = {sample: i for i, sample in enumerate(samples)}
    expected = ctx.per_cell({image: position.get(sample, -2) for image, sample in images.items() if sample is not None},
                            -3, np.int64)
    mismatch = (expected != -3) & (expected != actual)
    return _bad_rows("cells", "sample_id", mismatch, "sample_id differs from the sample_id of its image")


# -- measurements ------------------------------------------------------------------------------
@_check("measurements_type")
def _measurements_type(ctx: Context) -> Problem | None:
    m = ctx.part("measurements")
    if m.ndim != 2 or m.dtype != np.float64:
        ctx.broken.add("measurements_type")
        return Problem(f"measurements is a {m.ndim}-D {m.dtype} array, not a 2-D float64 matrix")
    return None


@_check("measurements_rows")
def _measurements_rows(ctx: Context) -> Problem | None:
    m, cells = ctx.matrix(), ctx.table("cells")
    if m.shape[0] != len(cells):
        ctx.broken.add("measurements_rows")
        return Problem(f"measurements has {m.shape[0]} rows for {len(cells)} cells")
    return None


@_check("measurements_names")
def _measurements_names(ctx: Context) -> Problem | None:
    m, ids = ctx.matrix(), ctx.col("dictionary", "feature_id")
    if m.shape[1] != len(ids):
        return Problem(f"measurements has {m.shape[1]} columns but the dictionary names {len(ids)} features "
                       "(columns are named by dictionary.feature_id, by position)")
    return None


@_check("measurements_finite")
def _measurements_finite(ctx: Context) -> Problem | None:
    stats = ctx.stats()
    infinite, first_row = stats.infinite, stats.first_infinite
    ids = _feature_ids(ctx, stats.n_features)
    problems = [f"{ids[j]}: {infinite[j]} infinite value(s), first at row {first_row[j]}"
                for j in np.flatnonzero(infinite)]
    problems += [f"{f}: {n} NaN/infinite value(s) stored as numbers in the source (not as NA)"
                 for f, n in ctx.source_nonfinite.items() if n]
    if not problems:
        return None
    column = ids[int(np.flatnonzero(infinite)[0])] if infinite.any() else next(iter(ctx.source_nonfinite))
    rows = [int(first_row[j]) for j in np.flatnonzero(infinite)]
    return Problem("measurements: " + "; ".join(problems[:MAX_ROWS_SHOWN]) +
                   (f"; … ({len(problems)} features)" if len(problems) > MAX_ROWS_SHOWN else ""),
                   column, rows, int(infinite.sum()) + int(sum(ctx.source_nonfinite.values())))


def _feature_ids(ctx: Context, n: int) -> list[str]:
    try:
        ids = [str(v) for v in ctx.col("dictionary", "feature_id")]
    except Skip:
        ids = []
    return ids + [f"column {j}" for j in range(len(ids), n)] if len(ids) < n else ids


# -- dictionary --------------------------------------------------------------------------------
@_check("dictionary_required_columns")
def _dictionary_required(ctx: Context) -> Problem | None:
    return _required_columns(ctx, "dictionary")


@_check("dictionary_column_types")
def _dictionary_types(ctx: Context) -> Problem | None:
    frame = ctx.table("dictionary")
    bad = [f"{c} is {frame[c].dtype}" for c in dict.fromkeys(frame.columns)
           if isinstance(frame[c], pd.Series) and spec_type_of(frame[c]) != "character"]
    return Problem("dictionary: " + "; ".join(bad) + " (dictionary columns are character)",
                   bad[0].split(" ", 1)[0]) if bad else None


@_check("dictionary_feature_id_unique")
def _dictionary_unique(ctx: Context) -> Problem | None:
    ids = ctx.text("dictionary", "feature_id")
    return _merge([p for p in (_bad_rows("dictionary", "feature_id", _missing_or_empty(ids), "missing feature_id"),
                               _bad_rows("dictionary", "feature_id", (ids.duplicated(keep=False) & ids.notna()).to_numpy(),
                                         "duplicated feature_id")) if p])


@_check("dictionary_kind")
def _dictionary_kind(ctx: Context) -> Problem | None:
    kind = ctx.text("dictionary", "kind")
    return _bad_rows("dictionary", "kind", ~kind.isin(ctx.voc.kinds).to_numpy(),
                     f"kind not one of {', '.join(ctx.voc.kinds)}")


def _kind_rows(ctx: Context, kind: str) -> np.ndarray:
    return (ctx.text("dictionary", "kind") == kind).to_numpy(dtype=bool)


def _absent(values: pd.Series) -> np.ndarray:
    return values.isna().to_numpy()


@_check("dictionary_intensity")
def _dictionary_intensity(ctx: Context) -> Problem | None:
    rows = _kind_rows(ctx, "intensity")
    marker, comp, stat = (ctx.text("dictionary", c) for c in ("marker", "compartment", "statistic"))
    return _merge([p for p in (
        _bad_rows("dictionary", "marker", rows & _absent(marker), "intensity feature without marker"),
        _bad_rows("dictionary", "compartment", rows & ~comp.isin(ctx.voc.compartments).to_numpy(),
                  f"intensity compartment not one of {', '.join(ctx.voc.compartments)}"),
        _bad_rows("dictionary", "statistic", rows & ~stat.isin(ctx.voc.intensity_statistics).to_numpy(),
                  f"intensity statistic not one of {', '.join(ctx.voc.intensity_statistics)}"),
    ) if p])


@_check("dictionary_shape")
def _dictionary_shape(ctx: Context) -> Problem | None:
    rows = _kind_rows(ctx, "shape")
    marker, comp, stat = (ctx.text("dictionary", c) for c in ("marker", "compartment", "statistic"))
    return _merge([p for p in (
        _bad_rows("dictionary", "marker", rows & ~_absent(marker), "shape feature with a marker"),
        _bad_rows("dictionary", "compartment", rows & ~comp.isin(ctx.voc.compartments).to_numpy(),
                  f"shape compartment not one of {', '.join(ctx.voc.compartments)}"),
        _bad_rows("dictionary", "statistic", rows & ~stat.isin(ctx.voc.shape_statistics).to_numpy(),
                  "shape statistic not in the shape vocabulary (unknown shapes are kind other)"),
    ) if p])


@_check("dictionary_other")
def _dictionary_other(ctx: Context) -> Problem | None:
    rows = _kind_rows(ctx, "other")
    marker, stat = ctx.text("dictionary", "marker"), ctx.text("dictionary", "statistic")
    return _merge([p for p in (
        _bad_rows("dictionary", "marker", rows & ~_absent(marker), "other feature with a marker"),
        _bad_rows("dictionary", "statistic", rows & _missing_or_empty(stat), "other feature without statistic"),
    ) if p])


@_check("dictionary_unit")
def _dictionary_unit(ctx: Context) -> Problem | None:
    unit = ctx.text("dictionary", "unit")
    return _bad_rows("dictionary", "unit", ~unit.isin(ctx.voc.units).to_numpy(),
                     f"unit not one of {', '.join(ctx.voc.units)}")


@_check("dictionary_marker_names")
def _dictionary_markers(ctx: Context) -> Problem | None:
    marker = ctx.text("dictionary", "marker")
    bad = np.array([m is not None and (m != m.strip() or m == "" or ":" in m) for m in marker], dtype=bool)
    return _bad_rows("dictionary", "marker", bad, "marker name untrimmed, empty or containing ':'")


@_check("dictionary_feature_id_format")
def _dictionary_format(ctx: Context) -> Problem | None:
    cols = {c: ctx.text("dictionary", c) for c in ("feature_id", "kind", "marker", "compartment", "statistic")}
    bad = np.zeros(len(cols["feature_id"]), dtype=bool)
    for i, (fid, kind, marker, comp, stat) in enumerate(zip(*cols.values(), strict=True)):
        if kind in ctx.voc.kinds:
            expected = ctx.voc.feature_id_rule(kind).format(compartment=comp, marker=marker, statistic=stat)
            bad[i] = fid != expected
    return _bad_rows("dictionary", "feature_id", bad,
                     "feature_id does not follow its kind's rule (" +
                     ", ".join(f"{r.kind}: {r.template}" for r in ctx.voc.feature_id_rules) + ")")


@_check("dictionary_source_name")
def _dictionary_source(ctx: Context) -> Problem | None:
    return _bad_rows("dictionary", "source_name", _missing_or_empty(ctx.text("dictionary", "source_name")),
                     "missing or empty source_name")


# -- images and channels -----------------------------------------------------------------------
@_check("images_required_columns")
def _images_required(ctx: Context) -> Problem | None:
    return _required_columns(ctx, "images")


@_check("images_column_types")
def _images_types(ctx: Context) -> Problem | None:
    return _column_types(ctx, "images", only_declared=False)


@_check("images_id_unique")
def _images_unique(ctx: Context) -> Problem | None:
    ids = ctx.text("images", "image_id")
    return _merge([p for p in (_bad_rows("images", "image_id", _missing_or_empty(ids), "missing or empty image_id"),
                               _bad_rows("images", "image_id", (ids.duplicated(keep=False) & ids.notna()).to_numpy(),
                                         "duplicated image_id")) if p])


@_check("images_sample_present")
def _images_sample(ctx: Context) -> Problem | None:
    return _bad_rows("images", "sample_id", _missing_or_empty(ctx.text("images", "sample_id")),
                     "missing or empty sample_id")


@_check("images_pixel_size")
def _images_pixel(ctx: Context) -> Problem | None:
    size = ctx.number("images", "pixel_size")
    problems = [_bad_rows("images", "pixel_size", ~(np.isfinite(size) & (size > 0)), "pixel_size not finite and positive")]
    if "pixel_size_y" in ctx.table("images").columns:
        size_y = ctx.number("images", "pixel_size_y")
        problems.append(_bad_rows("images", "pixel_size_y", ~(np.isnan(size_y) | (np.isfinite(size_y) & (size_y > 0))),
                                  "pixel_size_y not finite and positive"))
    return _merge([p for p in problems if p])


@_check("images_dimensions")
def _images_dimensions(ctx: Context) -> Problem | None:
    problems, seen = [], 0
    for column in ("width_px", "height_px"):
        try:
            values = ctx.number("images", column)
        except Skip:
            continue
        seen += 1
        problems.append(_bad_rows("images", column, ~(np.isnan(values) | (values > 0)), "not positive"))
    if not seen:
        raise Skip("images has neither width_px nor height_px")
    return _merge([p for p in problems if p])


@_check("channels_required_columns")
def _channels_required(ctx: Context) -> Problem | None:
    return _required_columns(ctx, "channels")


@_check("channels_column_types")
def _channels_types(ctx: Context) -> Problem | None:
    return _column_types(ctx, "channels", only_declared=False)


@_check("channels_images_known")
def _channels_images(ctx: Context) -> Problem | None:
    known = set(ctx.text("images", "image_id").dropna())
    return _bad_rows("channels", "image_id", ~ctx.text("channels", "image_id").isin(known).to_numpy(),
                     "image_id not in images")


@_check("channels_index_contiguous")
def _channels_index(ctx: Context) -> Problem | None:
    frame = pd.DataFrame({"image_id": ctx.text("channels", "image_id"), "i": ctx.number("channels", "channel_index")})
    bad_images = [str(img) for img, g in frame.groupby("image_id", sort=False, dropna=False)
                  if not np.array_equal(np.sort(g["i"].to_numpy()), np.arange(1, len(g) + 1))]
    if not bad_images:
        return None
    rows = np.flatnonzero(frame["image_id"].isin(bad_images).to_numpy())
    return Problem(f"channels.channel_index is not 1..n in image(s) {', '.join(bad_images[:MAX_ROWS_SHOWN])}: "
                   f"{_rows_text(rows, rows.size)}", "channel_index", rows, int(rows.size))


@_check("channels_names")
def _channels_names(ctx: Context) -> Problem | None:
    name, marker = ctx.text("channels", "channel_name"), ctx.text("channels", "marker")
    image = ctx.text("channels", "image_id")
    dup = pd.DataFrame({"i": image, "m": marker}).duplicated(keep=False).to_numpy() & marker.notna().to_numpy()
    return _merge([p for p in (
        _bad_rows("channels", "channel_name", _missing_or_empty(name), "missing or empty channel_name"),
        _bad_rows("channels", "marker", _missing_or_empty(marker), "missing or empty marker"),
        _bad_rows("channels", "marker", dup, "marker repeated within an image"),
    ) if p])


@_check("markers_in_channels")
def _markers_in_channels(ctx: Context) -> Problem | None:
    intensity = _kind_rows(ctx, "intensity")
    markers = list(dict.fromkeys(m for m in ctx.text("dictionary", "marker")[intensity] if m is not None))
    per_image = ctx.text("channels", "marker").groupby(ctx.text("channels", "image_id").to_numpy()).agg(set).to_dict()
    missing = [f"{m!r} in image {img!r}" for img in ctx.text("images", "image_id") for m in markers
               if m not in per_image.get(img, set())]
    if not missing:
        return None
    more = f", … ({len(missing)} in all)" if len(missing) > MAX_ROWS_SHOWN else ""
    return Problem(f"intensity marker(s) missing from channels.marker: {', '.join(missing[:MAX_ROWS_SHOWN])}{more}",
                   "marker", None, len(missing))


# -- provenance --------------------------------------------------------------------------------
@_check("provenance_fields")
def _provenance_fields(ctx: Context) -> Problem | None:
    prov = ctx.part("provenance")
    missing = [name for name, _ in ctx.voc.provenance_fields if name not in prov]
    return Problem(f"provenance lacks field(s) {', '.join(missing)}", missing[0]) if missing else None


# -- adjacency ---------------------------------------------------------------------------------
def _adjacency(ctx: Context) -> pd.DataFrame:
    adj = ctx.part("adjacency")
    if adj is None:
        raise Skip("no adjacency")
    if "adjacency_columns" in ctx.broken:
        raise Skip("adjacency columns are missing or mistyped")
    return adj


@_check("adjacency_columns")
def _adjacency_columns(ctx: Context) -> Problem | None:
    adj = ctx.part("adjacency")
    if adj is None:
        raise Skip("no adjacency")
    problem = _merge([p for p in (_required_columns(ctx, "adjacency"), _column_types(ctx, "adjacency")) if p])
    if problem:
        ctx.broken.add("adjacency_columns")
    return problem


@_check("adjacency_endpoints")
def _adjacency_endpoints(ctx: Context) -> Problem | None:
    adj = _adjacency(ctx)
    keys = pd.MultiIndex.from_arrays([ctx.text("cells", "image_id"), ctx.text("cells", "cell_id")])
    missing = np.zeros(len(adj), dtype=bool)
    for column in ("cell_id_a", "cell_id_b"):
        pair = pd.MultiIndex.from_arrays([adj["image_id"].astype(object), adj[column].astype(object)])
        missing |= ~pair.isin(keys)
    return _bad_rows("adjacency", None, missing, "contact with a cell not in cells")


@_check("adjacency_pairs")
def _adjacency_pairs(ctx: Context) -> Problem | None:
    adj = _adjacency(ctx)
    a = adj["cell_id_a"].astype(object).where(adj["cell_id_a"].notna(), "")
    b = adj["cell_id_b"].astype(object).where(adj["cell_id_b"].notna(), "")
    # UTF-8 byte order equals Unicode code point order, which is how numpy compares str arrays
    unordered = ~(np.asarray(a, dtype=str) < np.asarray(b, dtype=str)) if len(adj) else np.zeros(0, dtype=bool)
    dup = adj[["image_id", "cell_id_a", "cell_id_b"]].duplicated(keep=False).to_numpy()
    return _merge([p for p in (_bad_rows("adjacency", "cell_id_a", unordered, "cell_id_a not before cell_id_b in byte order"),
                               _bad_rows("adjacency", None, dup, "pair listed more than once")) if p])


@_check("adjacency_values")
def _adjacency_values(ctx: Context) -> Problem | None:
    adj = _adjacency(ctx)
    boundary = adj["shared_boundary"].to_numpy(dtype=np.float64, na_value=np.nan)
    return _merge([p for p in (
        _bad_rows("adjacency", "shared_boundary", ~(np.isfinite(boundary) & (boundary >= 0)),
                  "shared_boundary not finite and non-negative"),
        _bad_rows("adjacency", "method", ~adj["method"].isin(ctx.voc.adjacency_methods).to_numpy(dtype=bool),
                  f"method not one of {', '.join(ctx.voc.adjacency_methods)}"),
    ) if p])


# -- semantic checks ---------------------------------------------------------------------------
@_check("centroids_within_image")
def _centroids_within(ctx: Context) -> Problem | None:
    images = ctx.table("images")
    if "width_px" not in images.columns and "height_px" not in images.columns:
        raise Skip("images has no width_px/height_px")
    image_ids = ctx.text("images", "image_id")
    size = ctx.number("images", "pixel_size")
    size_y = ctx.number("images", "pixel_size_y") if "pixel_size_y" in images else size
    size_y = np.where(np.isnan(size_y), size, size_y)
    outside = np.zeros(len(ctx.table("cells")), dtype=bool)
    for coord, extent, px in (("x", "width_px", size), ("y", "height_px", size_y)):
        if extent not in images.columns:
            continue
        limit = ctx.number("images", extent) * px
        step = ctx.per_cell(dict(zip(image_ids, px, strict=True)), np.nan, np.float64)
        upper = ctx.per_cell(dict(zip(image_ids, limit, strict=True)), np.nan, np.float64)
        value = ctx.number("cells", coord)
        with np.errstate(invalid="ignore"):
            outside |= ~np.isnan(upper) & ((value < -step) | (value > upper + step))
    return _bad_rows("cells", "x", outside, "centroid outside the image extent (1 pixel tolerance)")


@_check("area_range")
def _area_range(ctx: Context) -> Problem | None:
    low, high = ctx.area_range
    area = ctx.number("cells", "area")
    with np.errstate(invalid="ignore"):
        outside = ~np.isnan(area) & ((area < low) | (area > high))
    return _bad_rows("cells", "area", outside, f"area outside area_range [{low}, {high}] um2")


def _dictionary_mask(ctx: Context, **match: str) -> np.ndarray:
    mask = np.ones(len(ctx.table("dictionary")), dtype=bool)
    for column, value in match.items():
        mask &= (ctx.text("dictionary", column) == value).to_numpy(dtype=bool)
    return mask


def _per_feature_problem(ctx: Context, counts: np.ndarray, what: str) -> Problem | None:
    ids = _feature_ids(ctx, counts.size)
    bad = np.flatnonzero(counts)
    if bad.size == 0:
        return None
    shown = ", ".join(f"{ids[j]} ({counts[j]})" for j in bad[:MAX_ROWS_SHOWN])
    more = f", … ({bad.size} features)" if bad.size > MAX_ROWS_SHOWN else ""
    return Problem(f"measurements: {what}: {shown}{more}", ids[bad[0]], None, int(bad.size))


@_check("negative_intensity")
def _negative_intensity(ctx: Context) -> Problem | None:
    stats = ctx.stats()
    intensity = _dictionary_mask(ctx, kind="intensity")[: stats.n_features]
    counts = np.zeros(stats.n_features, dtype=np.int64)
    counts[: intensity.size] = np.where(intensity, stats.negative[: intensity.size], 0)
    return _per_feature_problem(ctx, counts, "negative intensity values (count)")


@_check("feature_na_fraction")
def _na_fraction(ctx: Context) -> Problem | None:
    m, stats = ctx.matrix(), ctx.stats()
    too_many = np.where(stats.nan > ctx.na_max * max(m.shape[0], 1), stats.nan, 0)
    return _per_feature_problem(ctx, too_many, f"more than na_max={ctx.na_max:g} missing (count)")


@_check("feature_support")
def _feature_support(ctx: Context) -> Problem | None:
    ctx.matrix()
    if "measurements_rows" in ctx.broken:
        raise Skip("measurements rows do not match cells")
    ctx.strings("cells", "image_id")
    stats = ctx.stats()
    cols = np.flatnonzero(_dictionary_mask(ctx, kind="intensity", statistic="mean")[: stats.n_features])
    flat = ~(stats.high[:, cols] > stats.low[:, cols])  # constant, or fewer than two non-NA values
    counts = np.zeros(stats.n_features, dtype=np.int64)
    counts[cols] = flat.sum(axis=0)
    return _per_feature_problem(ctx, counts, "no variation within an image (images affected)")


@_check("duplicate_centroids")
def _duplicate_centroids(ctx: Context) -> Problem | None:
    frame = pd.DataFrame({"i": ctx.image_codes()[0], "x": ctx.number("cells", "x"),
                          "y": ctx.number("cells", "y")})
    return _bad_rows("cells", "x", frame.duplicated(keep=False).to_numpy(), "centroid shared with another cell")


# -- entry point -------------------------------------------------------------------------------
def validate(
    x: Any,
    *,
    area_range: tuple[float, float] | None = None,
    na_max: float | None = None,
    source_nonfinite: Mapping[str, int] | None = None,
    stats: MatrixStats | None = None,
) -> ValidationReport:
    """Check ``x`` against every rule of section 10.

    ``area_range`` (default ``(1, 10000)`` um2) bounds plausible whole-cell
    areas; ``na_max`` (default ``0.5``) is the largest plausible fraction of
    missing values per feature. ``source_nonfinite`` maps feature ids to the
    number of NaN/infinite values a file stored as numbers rather than as NA
    (readers pass it so that such values fail ``measurements_finite`` instead of
    silently becoming NA). In memory NA is NaN, so only infinities fail there.
    ``stats`` are the :class:`~cellspec_sc.validation.matrix_stats.MatrixStats` of
    ``x.measurements`` when the caller gathered them already (``read`` does,
    while decoding); otherwise one pass over the matrix gathers them.

    >>> from cellspec_sc import example
    >>> validate(example(), area_range=(1, 50)).status("area_range")
    'warn'
    """
    voc = vocabulary()
    defaults = voc.defaults
    ctx = Context(x=x, voc=voc, area_range=tuple(area_range or defaults["area_range"]),
                  na_max=float(defaults["na_max"] if na_max is None else na_max),
                  source_nonfinite=dict(source_nonfinite or {}), given_stats=stats)
    with progress(len(voc.checks), "validating", unit="checks", size=_table_values(x)) as bar:
        results = []
        for chk in voc.checks:
            results.append(_run(ctx, chk.name, chk.level, chk.rule))
            bar.update(1)
    return ValidationReport(results, {"area_range": ctx.area_range, "na_max": ctx.na_max})


def _table_values(x: Any) -> int:
    """The size of ``x`` for the progress threshold: its matrix's values (else its cells' count)."""
    size = getattr(getattr(x, "measurements", None), "size", None)
    return int(size) if isinstance(size, (int, np.integer)) else len(getattr(x, "cells", ()))


def validate_in_background(x: Any, **options: Any) -> Future[ValidationReport]:
    """Start :func:`validate` in a thread (numpy, pyarrow and hashlib release the GIL, so it runs
    beside a writer on another core); ``.result()`` is the report.

    >>> from cellspec_sc import example
    >>> validate_in_background(example()).result().ok
    True
    """
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cellspec-validate")
    try:
        return pool.submit(validate, x, **options)
    finally:
        pool.shutdown(wait=False)


def _run(ctx: Context, name: str, level: str, rule: str) -> CheckResult:
    fn = _IMPLEMENTATIONS[name]
    try:
        found = fn(ctx)
    except Skip as reason:
        return CheckResult(name, level, "skip", f"skipped: {reason}", rule)
    except Exception as err:  # noqa: BLE001 - a malformed object must give a report, not a traceback
        found = Problem(f"could not be checked ({type(err).__name__}: {err})")
    if found is None:
        return CheckResult(name, level, "pass", rule, rule)
    problem = found if isinstance(found, Problem) else Problem(str(found))
    rows = tuple(int(r) for r in (problem.rows if problem.rows is not None else [])[:MAX_ROWS_SHOWN])
    return CheckResult(name, level, "fail" if level == "structure" else "warn", problem.message, rule,
                       problem.column, rows, int(problem.count if problem.count is not None else max(len(rows), 1)))
