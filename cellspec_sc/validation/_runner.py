"""Run every check of section 10 on an object: :func:`validate`, and :func:`staged_validation` for a caller
that is still filling the matrix.

The list of checks, their levels and rules come from :func:`~cellspec_sc.spec.vocabulary`;
:mod:`cellspec_sc.validation._checks` holds one implementation per name (a test checks that the two sets
are equal). Structure checks fail, semantic checks warn; a check whose input is missing (a component or
column already reported absent) is skipped; a check that raises gives a result, not a traceback.

>>> from cellspec_sc import example
>>> report = validate(example())
>>> report.ok, report.status("cells_key_unique")
(True, 'pass')

Validate an object once: its report is kept on it, keyed by a content token, and reused while the
object is unchanged.

``read`` validates what it returns, ``write`` must refuse an invalid object, ``cellspec validate DIR``
reads then reports: without a memory of the report each of these would walk the matrix again. The
token (:func:`content_token`) is an xxh3-128 digest of every component's values, at the speed of
memory (160 MB of matrix in about 20 ms), so an object whose table was edited in place
(``x.cells.loc[3, "x"] = -1``) or given a new component gets a fresh validation (the matrix is read-only).

>>> import cellspec_sc as cs
>>> x = cs.example()
>>> report = cs.validate(x)
>>> cs.validate(x) is report
True
>>> x.cells.loc[3, "x"] = -1.0e9
>>> cs.validate(x).status("centroids_within_image")
'warn'
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import xxhash

from cellspec_sc._background import in_background
from cellspec_sc.model import COMPONENTS, CellSpec, MatrixStats, array_digest, frame_digest
from cellspec_sc.progress import progress
from cellspec_sc.spec import vocabulary
from cellspec_sc.validation._checks import implementation
from cellspec_sc.validation._context import CheckFn, Context, Problem, Skip, StatsPending
from cellspec_sc.validation._portability import RULE, portability_problems
from cellspec_sc.validation._report import MAX_ROWS_SHOWN, CheckResult, ValidationReport


def validate(
    x: Any,
    *,
    area_range: tuple[float, float] | None = None,
    na_max: float | None = None,
    source_nonfinite: Mapping[str, int] | None = None,
    stats: MatrixStats | None = None,
) -> ValidationReport:
    """Check ``x`` against every rule of section 10.

    Parameters
    ----------
    x
        The object (usually a :class:`~cellspec_sc.CellSpec`; anything else gets a report that says so).
    area_range
        Plausible whole-cell areas in um2 (default ``(1, 10000)``).
    na_max
        The largest plausible fraction of missing values per feature (default ``0.5``).
    source_nonfinite
        {feature id: NaN/infinite values a file stored as numbers rather than as NA}: readers pass it so
        that such values fail ``measurements_finite`` instead of silently becoming NA (in memory NA is NaN,
        so only infinities fail there).
    stats
        The :class:`~cellspec_sc.model.MatrixStats` of ``x.measurements`` when the caller gathered them
        already (``read`` does, while decoding); otherwise one pass over the matrix gathers them. A caller
        that is still filling the matrix uses :func:`staged_validation` instead.

    Returns
    -------
    ValidationReport
        One result per check, in the vocabulary's order, then the portability note.

    Raises
    ------
    ValidationError
        Not from this call: an invalid object (or anything that is not a CellSpec) gives a report with
        failures, and a check that breaks on a malformed object gives a ``fail`` result, never a traceback.
        :meth:`ValidationReport.raise_if_failed` raises it when a structure check failed.

    Examples
    --------
    >>> from cellspec_sc import example
    >>> validate(example(), area_range=(1, 50)).status("area_range")
    'warn'
    >>> validate("not an object").raise_if_failed()
    Traceback (most recent call last):
    ...
    cellspec_sc.errors.ValidationError: ...
    """
    options = _options(area_range, na_max)
    fresh = stats is None and not source_nonfinite  # else a reader's facts complete the object's own
    ctx = _context(x, options, source_nonfinite, given_stats=stats)
    token = content_token(x, ctx.frame_items) if fresh else None  # the checks reuse the columns it made
    known = remembered(x, options, token) if token else None
    if known is not None:
        return known
    with progress(len(ctx.voc.checks) + 1, "validating", unit="checks", size=table_values(x)) as bar:
        results, waiting = _checks_before_stats(ctx, bar)
        return _report(ctx, options, results, waiting, bar, token)


class StagedValidation:
    """A validation whose matrix stats come later: made by :func:`staged_validation`, which has run every
    check that needs no stats (nor cell id codes the caller is still making); :meth:`finish` runs the rest."""

    def __init__(self, ctx: Context, options: dict[str, Any], bar: Any):
        self._ctx, self._options, self._bar = ctx, options, bar
        self._results, self._waiting = _checks_before_stats(ctx, bar)

    def finish(self, stats: MatrixStats) -> ValidationReport:
        """The report, once ``stats`` (with :attr:`~cellspec_sc.model.MatrixStats.cell_codes` when the caller
        said it brings them) describe the filled matrix.

        Parameters
        ----------
        stats
            The matrix stats, gathered by the caller while the first checks ran.

        Returns
        -------
        ValidationReport
            The same report :func:`validate` gives with these stats.
        """
        self._ctx.give_stats(stats)
        return _report(self._ctx, self._options, self._results, self._waiting, self._bar, None)


@contextmanager
def staged_validation(
    x: Any,
    *,
    area_range: tuple[float, float] | None = None,
    na_max: float | None = None,
    source_nonfinite: Mapping[str, int] | None = None,
    image_codes: tuple[np.ndarray, np.ndarray] | None = None,
    brings_cell_codes: bool = False,
) -> Iterator[StagedValidation]:
    """Validate ``x`` while the caller still fills its matrix: the checks that need no matrix values run on
    entering the block; :meth:`StagedValidation.finish` takes the stats the caller gathered and runs the rest.

    Parameters
    ----------
    x, area_range, na_max, source_nonfinite
        As for :func:`validate`.
    image_codes
        The caller's image codes of ``x.cells.image_id`` (see :attr:`~cellspec_sc.model.MatrixStats.image_codes`),
        when it has them already.
    brings_cell_codes
        The stats given to ``finish`` carry the cell id codes: the check that needs them waits for them
        rather than encoding the ids a second time.

    Yields
    ------
    StagedValidation
        Call its ``finish(stats)`` inside the block.

    Examples
    --------
    >>> from cellspec_sc import example
    >>> from cellspec_sc.model import matrix_stats
    >>> x = example()
    >>> with staged_validation(x) as staged:
    ...     stats = matrix_stats(x.measurements)  # e.g. gathered while decoding the matrix
    ...     report = staged.finish(stats)
    >>> report.ok
    True
    """
    options = _options(area_range, na_max)
    ctx = _context(x, options, source_nonfinite, stats_pending=True, expected_cell_codes=brings_cell_codes,
                   expected_image_codes=image_codes)
    with progress(len(ctx.voc.checks) + 1, "validating", unit="checks", size=table_values(x)) as bar:
        yield StagedValidation(ctx, options, bar)


def _options(area_range: tuple[float, float] | None, na_max: float | None) -> dict[str, Any]:
    defaults = vocabulary().defaults
    return {"area_range": tuple(area_range or defaults["area_range"]),
            "na_max": float(defaults["na_max"] if na_max is None else na_max)}


def _context(x: Any, options: dict[str, Any], source_nonfinite: Mapping[str, int] | None, **given: Any) -> Context:
    return Context(x=x, voc=vocabulary(), area_range=options["area_range"], na_max=options["na_max"],
                   source_nonfinite=dict(source_nonfinite or {}), **given)


def _checks_before_stats(ctx: Context, bar: Any) -> tuple[dict[str, CheckResult], list[Any]]:
    """Every check in the vocabulary's order and the portability note (which needs no matrix values), except
    those that need stats still being gathered: those are returned to run later."""
    results: dict[str, CheckResult] = {}
    waiting = []
    for chk in ctx.voc.checks:
        try:
            results[chk.name] = run_check(ctx, chk.name, chk.level, chk.rule)
            bar.update(1)
        except StatsPending:
            waiting.append(chk)
    results["portability"] = run_check(ctx, "portability", "semantic", RULE, portability)  # beyond section 10
    bar.update(1)
    return results, waiting


def _report(ctx: Context, options: dict[str, Any], results: dict[str, CheckResult], waiting: list[Any], bar: Any,
            token: Any) -> ValidationReport:
    """Run the ``waiting`` checks and make the report; remember it when it is the object's own."""
    for chk in waiting:
        results[chk.name] = run_check(ctx, chk.name, chk.level, chk.rule)
        bar.update(1)
    report = ValidationReport([results[chk.name] for chk in ctx.voc.checks] + [results["portability"]], options)
    if not ctx.nonfinite_in_source():  # what the source stored is not in the object: such a report is not its own
        remember(x := ctx.x, options, report, token if token is not None else content_token(x, ctx.frame_items))
    return report


def table_values(x: Any) -> int:
    """The size of ``x`` for the progress threshold: its matrix's values (else its cells' count)."""
    size = getattr(getattr(x, "measurements", None), "size", None)
    return int(size) if isinstance(size, (int, np.integer)) else len(getattr(x, "cells", ()))


def portability(ctx: Context) -> Problem | None:
    """The ``portability`` note: values some target format cannot store.

    See :mod:`cellspec_sc.validation._portability`.
    """
    ctx.part("cells")  # skipped when the object is not usable
    problems = portability_problems(ctx.x, lambda table, frame: ctx.single_columns(table).items())
    return Problem("; ".join(problems), count=len(problems)) if problems else None


def run_check(ctx: Context, name: str, level: str, rule: str, fn: CheckFn | None = None) -> CheckResult:
    fn = fn or implementation(name)
    try:
        found = fn(ctx)
    except StatsPending:
        raise
    except Skip as reason:
        return CheckResult(name, level, "skip", f"skipped: {reason}", rule)
    except Exception as err:  # noqa: BLE001 - a malformed object must give a report, not a traceback
        found = Problem(f"could not be checked ({type(err).__name__}: {err})")
    if found is None:
        return _passed(name, level, rule)
    problem = found if isinstance(found, Problem) else Problem(str(found))
    rows = tuple(int(r) for r in (problem.rows if problem.rows is not None else [])[:MAX_ROWS_SHOWN])
    return CheckResult(name, level, "fail" if level == "structure" else "warn", problem.message, rule,
                       problem.column, rows, int(problem.count if problem.count is not None else max(len(rows), 1)))


@functools.lru_cache(maxsize=256)
def _passed(name: str, level: str, rule: str) -> CheckResult:
    """The result of a check that passed: one immutable object per check, shared by every report (most checks pass
    on most objects, and making a frozen result costs more than the check's own work on a small table)."""
    return CheckResult(name, level, "pass", rule, rule)


SPLIT_BYTES = 1 << 26  # matrices at least this big are digested in two halves at once


def content_token(x: Any, items: Callable[[str, pd.DataFrame], list[tuple[Any, pd.Series]]] | None = None
                  ) -> str | None:
    """A digest of every component of ``x`` (None when ``x`` cannot be fingerprinted cheaply: not a
    CellSpec, or a matrix that is not an in-memory numpy array, such as a lazy read's dask array).
    ``items(name, frame)`` gives ``list(frame.items())`` of a table when the caller made its columns already.

    >>> import cellspec_sc as cs
    >>> x = cs.example()
    >>> content_token(x) == content_token(x.replace()) != content_token(x.replace(provenance={}))
    True
    """
    if not isinstance(x, CellSpec) or not isinstance(x.measurements, np.ndarray) or x.measurements.dtype.hasobject:
        return None
    parts = []
    matrix = x.measurements  # one view of the object's matrix (each access makes a new one)
    later = _second_half(matrix)
    try:
        for name in COMPONENTS:
            value = matrix if name == "measurements" else getattr(x, name)
            parts.append(_matrix_digest(value, later) if name == "measurements" else
                         array_digest(value, same_nan=False) if isinstance(value, np.ndarray) else
                         frame_digest(value, items and items(name, value)) if isinstance(value, pd.DataFrame) else
                         json.dumps(value, sort_keys=True, default=repr))
    except (TypeError, ValueError, pa.ArrowException):  # a malformed object: validate it every time
        return None
    return xxhash.xxh3_128("|".join(parts).encode()).hexdigest()


def _second_half(m: np.ndarray) -> Future[str] | None:
    """The digest of the second half of the rows of a matrix of at least ``SPLIT_BYTES`` (C order), started
    in a thread: xxhash lets go of the GIL, so the two halves take half the time on two cores."""
    if m.nbytes < SPLIT_BYTES or m.ndim != 2 or not m.flags.c_contiguous:
        return None
    return in_background(_unnamed_nan_digest, m[m.shape[0] // 2:], name="cellspec-token")


def _unnamed_nan_digest(m: np.ndarray) -> str:
    return array_digest(m, same_nan=False)


def _matrix_digest(m: np.ndarray, later: Future[str] | None) -> str:
    if later is None:
        return array_digest(m, same_nan=False)
    return "+".join([array_digest(m[:m.shape[0] // 2], same_nan=False), later.result()])


def remembered(x: Any, options: dict[str, Any], token: str) -> ValidationReport | None:
    """The report kept on ``x`` for these options, if ``x`` still has content ``token``."""
    memo = getattr(x, "validation_memo", None)
    return memo[2] if memo is not None and memo[0] == token and memo[1] == options else None


def remember(x: Any, options: dict[str, Any], report: ValidationReport, token: str | None) -> None:
    """Keep ``report`` on ``x`` (a CellSpec) with ``token``, the token of the content it describes."""
    if token is not None:
        x.validation_memo = (token, options, report)
