"""Checks of the feature dictionary (section 10, "dictionary")."""

from __future__ import annotations

import numpy as np

from cellspec_sc.spec import spec_type_of
from cellspec_sc.validation._context import (
    Context,
    Problem,
    absent,
    bad_rows,
    check,
    is_in,
    kind_rows,
    merge,
    missing_or_empty,
    not_one_of,
    required_columns,
    unique_ids,
)


@check("dictionary_required_columns")
def _dictionary_required(ctx: Context) -> Problem | None:
    return required_columns(ctx, "dictionary")


@check("dictionary_column_types")
def _dictionary_types(ctx: Context) -> Problem | None:
    bad = [f"{c} is {values.dtype}" for c, values in ctx.single_columns("dictionary").items()
           if spec_type_of(values) != "character"]
    return Problem("dictionary: " + "; ".join(bad) + " (dictionary columns are character)",
                   bad[0].split(" ", 1)[0]) if bad else None


@check("dictionary_feature_id_unique")
def _dictionary_unique(ctx: Context) -> Problem | None:
    return unique_ids(ctx, "dictionary", "feature_id", "missing feature_id")


@check("dictionary_kind")
def _dictionary_kind(ctx: Context) -> Problem | None:
    return not_one_of(ctx, "dictionary", "kind", ctx.voc.kinds)


@check("dictionary_intensity")
def _dictionary_intensity(ctx: Context) -> Problem | None:
    rows = kind_rows(ctx, "intensity")
    marker, comp, stat = (ctx.text("dictionary", c) for c in ("marker", "compartment", "statistic"))
    return merge([p for p in (
        bad_rows("dictionary", "marker", rows & absent(marker), "intensity feature without marker"),
        bad_rows("dictionary", "compartment", rows & ~is_in(comp, ctx.voc.compartments),
                  f"intensity compartment not one of {', '.join(ctx.voc.compartments)}"),
        bad_rows("dictionary", "statistic", rows & ~is_in(stat, ctx.voc.intensity_statistics),
                  f"intensity statistic not one of {', '.join(ctx.voc.intensity_statistics)}"),
    ) if p])


@check("dictionary_shape")
def _dictionary_shape(ctx: Context) -> Problem | None:
    rows = kind_rows(ctx, "shape")
    marker, comp, stat = (ctx.text("dictionary", c) for c in ("marker", "compartment", "statistic"))
    return merge([p for p in (
        bad_rows("dictionary", "marker", rows & ~absent(marker), "shape feature with a marker"),
        bad_rows("dictionary", "compartment", rows & ~is_in(comp, ctx.voc.compartments),
                  f"shape compartment not one of {', '.join(ctx.voc.compartments)}"),
        bad_rows("dictionary", "statistic", rows & ~is_in(stat, ctx.voc.shape_statistics),
                  "shape statistic not in the shape vocabulary (unknown shapes are kind other)"),
    ) if p])


@check("dictionary_other")
def _dictionary_other(ctx: Context) -> Problem | None:
    rows = kind_rows(ctx, "other")
    marker, stat = ctx.text("dictionary", "marker"), ctx.text("dictionary", "statistic")
    return merge([p for p in (
        bad_rows("dictionary", "marker", rows & ~absent(marker), "other feature with a marker"),
        bad_rows("dictionary", "statistic", rows & missing_or_empty(stat), "other feature without statistic"),
    ) if p])


@check("dictionary_unit")
def _dictionary_unit(ctx: Context) -> Problem | None:
    return not_one_of(ctx, "dictionary", "unit", ctx.voc.units)


@check("dictionary_marker_names")
def _dictionary_markers(ctx: Context) -> Problem | None:
    marker = ctx.text("dictionary", "marker")
    bad = np.array([m is not None and (m != m.strip() or m == "" or ":" in m) for m in marker], dtype=bool)
    return bad_rows("dictionary", "marker", bad, "marker name untrimmed, empty or containing ':'")


@check("dictionary_feature_id_format")
def _dictionary_format(ctx: Context) -> Problem | None:
    cols = {c: ctx.text("dictionary", c) for c in ("feature_id", "kind", "marker", "compartment", "statistic")}
    bad = np.zeros(len(cols["feature_id"]), dtype=bool)
    rules = {kind: ctx.voc.feature_id_rule(kind) for kind in ctx.voc.kinds}
    for i, (fid, kind, marker, comp, stat) in enumerate(zip(*cols.values(), strict=True)):
        if kind in rules:
            bad[i] = fid != rules[kind].format(compartment=comp, marker=marker, statistic=stat)
    return bad_rows("dictionary", "feature_id", bad,
                     "feature_id does not follow its kind's rule (" +
                     ", ".join(f"{r.kind}: {r.template}" for r in ctx.voc.feature_id_rules) + ")")


@check("dictionary_source_name")
def _dictionary_source(ctx: Context) -> Problem | None:
    return bad_rows("dictionary", "source_name", missing_or_empty(ctx.text("dictionary", "source_name")),
                     "missing or empty source_name")
