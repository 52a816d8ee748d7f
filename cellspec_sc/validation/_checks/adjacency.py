"""Checks of the optional adjacency table (section 10, "adjacency")."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cellspec_sc.validation._context import (
    Context,
    Problem,
    Skip,
    bad_rows,
    check,
    column_types,
    merge,
    required_columns,
)


def _adjacency(ctx: Context) -> pd.DataFrame:
    adj = ctx.part("adjacency")
    if adj is None:
        raise Skip("no adjacency")
    if "adjacency_columns" in ctx.broken:
        raise Skip("adjacency columns are missing or mistyped")
    return adj


@check("adjacency_columns")
def _adjacency_columns(ctx: Context) -> Problem | None:
    adj = ctx.part("adjacency")
    if adj is None:
        raise Skip("no adjacency")
    problem = merge([p for p in (required_columns(ctx, "adjacency"), column_types(ctx, "adjacency")) if p])
    if problem:
        ctx.broken.add("adjacency_columns")
    return problem


@check("adjacency_endpoints")
def _adjacency_endpoints(ctx: Context) -> Problem | None:
    adj = _adjacency(ctx)
    keys = pd.MultiIndex.from_arrays([ctx.text("cells", "image_id"), ctx.text("cells", "cell_id")])
    missing = np.zeros(len(adj), dtype=bool)
    for column in ("cell_id_a", "cell_id_b"):
        pair = pd.MultiIndex.from_arrays([adj["image_id"].astype(object), adj[column].astype(object)])
        missing |= ~pair.isin(keys)
    return bad_rows("adjacency", None, missing, "contact with a cell not in cells")


@check("adjacency_pairs")
def _adjacency_pairs(ctx: Context) -> Problem | None:
    adj = _adjacency(ctx)
    a = adj["cell_id_a"].astype(object).where(adj["cell_id_a"].notna(), "")
    b = adj["cell_id_b"].astype(object).where(adj["cell_id_b"].notna(), "")
    # UTF-8 byte order equals Unicode code point order, which is how numpy compares str arrays
    unordered = ~(np.asarray(a, dtype=str) < np.asarray(b, dtype=str)) if len(adj) else np.zeros(0, dtype=bool)
    dup = adj[["image_id", "cell_id_a", "cell_id_b"]].duplicated(keep=False).to_numpy()
    return merge([p for p in (bad_rows("adjacency", "cell_id_a", unordered,
                                        "cell_id_a not before cell_id_b in byte order"),
                               bad_rows("adjacency", None, dup, "pair listed more than once")) if p])


@check("adjacency_values")
def _adjacency_values(ctx: Context) -> Problem | None:
    adj = _adjacency(ctx)
    boundary = adj["shared_boundary"].to_numpy(dtype=np.float64, na_value=np.nan)
    return merge([p for p in (
        bad_rows("adjacency", "shared_boundary", ~(np.isfinite(boundary) & (boundary >= 0)),
                  "shared_boundary not finite and non-negative"),
        bad_rows("adjacency", "method", ~adj["method"].isin(ctx.voc.adjacency_methods).to_numpy(dtype=bool),
                  f"method not one of {', '.join(ctx.voc.adjacency_methods)}"),
    ) if p])
