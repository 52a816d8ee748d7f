"""Run every check of section 10 on an object: :func:`validate` and :func:`validate_in_background`.

The list of checks, their levels and rules come from :func:`~cellspec_sc.spec.vocabulary.vocabulary`;
:mod:`cellspec_sc.validation.checks` holds one implementation per name (a test checks that the two sets
are equal). Structure checks fail, semantic checks warn; a check whose input is missing (a component or
column already reported absent) is skipped; a check that raises gives a result, not a traceback.

>>> from cellspec_sc import example
>>> report = validate(example())
>>> report.ok, report.status("cells_key_unique")
(True, 'pass')
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from cellspec_sc.progress import progress
from cellspec_sc.spec.vocabulary import vocabulary
from cellspec_sc.validation.checks import implementation
from cellspec_sc.validation.context import CheckFn, Context, PendingStats, Problem, Skip, StatsPending
from cellspec_sc.validation.portability import RULE, portability_problems
from cellspec_sc.validation.matrix_stats import MatrixStats
from cellspec_sc.validation.memo import content_token, remember, remembered
from cellspec_sc.validation.report import MAX_ROWS_SHOWN, CheckResult, ValidationReport


def validate(
    x: Any,
    *,
    area_range: tuple[float, float] | None = None,
    na_max: float | None = None,
    source_nonfinite: Mapping[str, int] | None = None,
    stats: MatrixStats | PendingStats | None = None,
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
    while decoding); otherwise one pass over the matrix gathers them. They may
    still be in the making (an object with ``result()``, e.g. while a reader
    fills the matrix): the checks that need them run last, after ``result()``.

    >>> from cellspec_sc import example
    >>> validate(example(), area_range=(1, 50)).status("area_range")
    'warn'
    """
    voc = vocabulary()
    defaults = voc.defaults
    options = {"area_range": tuple(area_range or defaults["area_range"]),
               "na_max": float(defaults["na_max"] if na_max is None else na_max)}
    fresh = stats is None and not source_nonfinite  # else a reader's facts complete the object's own
    ctx = Context(x=x, voc=voc, area_range=options["area_range"], na_max=options["na_max"],
                  source_nonfinite=dict(source_nonfinite or {}), given_stats=stats)
    token = content_token(x, ctx.frame_items) if fresh else None  # the checks reuse the columns it made
    known = remembered(x, options, token) if token else None
    if known is not None:
        return known
    report = ValidationReport(_run_checks(ctx), options)
    if not ctx.nonfinite_in_source():  # what the source stored is not in the object: such a report is not its own
        remember(x, options, report, token if fresh else content_token(x, ctx.frame_items))
    return report


def _run_checks(ctx: Context) -> list[CheckResult]:
    """Every check in the vocabulary's order, then the portability note; checks needing stats that are
    still being gathered run after the others (and the note, which needs no matrix values)."""
    checks = ctx.voc.checks
    with progress(len(checks) + 1, "validating", unit="checks", size=table_values(ctx.x)) as bar:
        results: dict[str, CheckResult] = {}
        waiting = []
        for chk in checks:
            try:
                results[chk.name] = run_check(ctx, chk.name, chk.level, chk.rule)
                bar.update(1)
            except StatsPending:
                waiting.append(chk)
        portable = run_check(ctx, "portability", "semantic", RULE, portability)  # a note beyond section 10
        bar.update(1)
        ctx.wait_for_stats()
        for chk in waiting:
            results[chk.name] = run_check(ctx, chk.name, chk.level, chk.rule)
            bar.update(1)
    return [results[chk.name] for chk in checks] + [portable]


def table_values(x: Any) -> int:
    """The size of ``x`` for the progress threshold: its matrix's values (else its cells' count)."""
    size = getattr(getattr(x, "measurements", None), "size", None)
    return int(size) if isinstance(size, (int, np.integer)) else len(getattr(x, "cells", ()))


def portability(ctx: Context) -> Problem | None:
    """The ``portability`` note: values some target format cannot store (see :mod:`cellspec_sc.validation.portability`)."""
    ctx.part("cells")  # skipped when the object is not usable
    problems = portability_problems(ctx.x, lambda table, frame: ctx.single_columns(table).items())
    return Problem("; ".join(problems), count=len(problems)) if problems else None


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
        return CheckResult(name, level, "pass", rule, rule)
    problem = found if isinstance(found, Problem) else Problem(str(found))
    rows = tuple(int(r) for r in (problem.rows if problem.rows is not None else [])[:MAX_ROWS_SHOWN])
    return CheckResult(name, level, "fail" if level == "structure" else "warn", problem.message, rule,
                       problem.column, rows, int(problem.count if problem.count is not None else max(len(rows), 1)))
