"""Checks of the measurement matrix (section 10, "measurements")."""

from __future__ import annotations

import numpy as np

from cellspec_sc.validation._context import Context, Problem, check, feature_ids
from cellspec_sc.validation._report import MAX_ROWS_SHOWN


@check("measurements_type")
def _measurements_type(ctx: Context) -> Problem | None:
    m = ctx.part("measurements")
    if m.ndim != 2 or m.dtype != np.float64:
        ctx.broken.add("measurements_type")
        return Problem(f"measurements is a {m.ndim}-D {m.dtype} array, not a 2-D float64 matrix")
    return None


@check("measurements_rows")
def _measurements_rows(ctx: Context) -> Problem | None:
    m, cells = ctx.matrix(), ctx.table("cells")
    if m.shape[0] != len(cells):
        ctx.broken.add("measurements_rows")
        return Problem(f"measurements has {m.shape[0]} rows for {len(cells)} cells")
    return None


@check("measurements_names")
def _measurements_names(ctx: Context) -> Problem | None:
    m, ids = ctx.matrix(), ctx.col("dictionary", "feature_id")
    if m.shape[1] != len(ids):
        return Problem(f"measurements has {m.shape[1]} columns but the dictionary names {len(ids)} features "
                       "(columns are named by dictionary.feature_id, by position)")
    return None


@check("measurements_finite")
def _measurements_finite(ctx: Context) -> Problem | None:
    stats = ctx.stats()
    infinite, first_row = stats.infinite, stats.first_infinite
    source = ctx.nonfinite_in_source()
    if not infinite.any() and not any(source.values()):
        return None
    ids = feature_ids(ctx, stats.n_features)
    problems = [f"{ids[j]}: {infinite[j]} infinite value(s), first at row {first_row[j]}"
                for j in np.flatnonzero(infinite)]
    problems += [f"{f}: {n} NaN/infinite value(s) stored as numbers in the source (not as NA)"
                 for f, n in source.items() if n]
    if not problems:
        return None
    column = ids[int(np.flatnonzero(infinite)[0])] if infinite.any() else next(f for f, n in source.items() if n)
    rows = [int(first_row[j]) for j in np.flatnonzero(infinite)]
    return Problem("measurements: " + "; ".join(problems[:MAX_ROWS_SHOWN]) +
                   (f"; … ({len(problems)} features)" if len(problems) > MAX_ROWS_SHOWN else ""),
                   column, rows, int(infinite.sum()) + int(sum(source.values())))
