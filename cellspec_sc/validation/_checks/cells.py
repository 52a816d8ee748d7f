"""Checks of the cells table (section 10, "cells")."""

from __future__ import annotations

import numpy as np

from cellspec_sc.model import all_distinct, first_seen_codes
from cellspec_sc.validation._context import (
    Context,
    Problem,
    bad_rows,
    check,
    column_types,
    duplicated_pairs,
    ids_present,
    merge,
    required_columns,
)


@check("cells_required_columns")
def _cells_required(ctx: Context) -> Problem | None:
    return required_columns(ctx, "cells", check_duplicates=True)


@check("cells_column_types")
def _cells_types(ctx: Context) -> Problem | None:
    return column_types(ctx, "cells", only_declared=False)


@check("cells_reserved_names")
def _cells_reserved(ctx: Context) -> Problem | None:
    bad = []
    for name in map(str, ctx.names("cells")):
        if name.startswith(ctx.voc.internal_prefix):
            bad.append(f"{name} uses the internal prefix {ctx.voc.internal_prefix}")
        for prefix in ("region__", "boundary_distance__"):
            if name.startswith(prefix) and not ctx.voc.is_valid_layer_name(name[len(prefix):]):
                bad.append(f"{name} has an invalid layer name (must match {ctx.voc.layer_name_pattern})")
    return Problem("cells: " + "; ".join(bad), bad[0].split(" ", 1)[0]) if bad else None


@check("cells_subject_id")
def _cells_subject(ctx: Context) -> Problem | None:
    if "subject_id" in ctx.table("cells").columns:
        return Problem("cells has a subject_id column; subject_id belongs in images", "subject_id")
    return None


@check("cells_ids_present")
def _cells_ids(ctx: Context) -> Problem | None:
    return ids_present(ctx, "cells", ("cell_id", "image_id", "sample_id"))


@check("cells_key_unique")
def _cells_key(ctx: Context) -> Problem | None:
    cells = ctx.cell_codes()
    if all_distinct(cells):  # ids unique over the whole table (QuPath's UUIDs), so within every image too
        return None
    images = ctx.image_codes()[0]
    return bad_rows("cells", "cell_id", duplicated_pairs(images, cells), "duplicated (image_id, cell_id)")


@check("cells_coordinates_finite")
def _cells_finite(ctx: Context) -> Problem | None:
    return merge([p for c in ("x", "y") if (p := bad_rows("cells", c, ~np.isfinite(ctx.number("cells", c)),
                                                               "missing or non-finite coordinate"))])


@check("cells_area_positive")
def _cells_area(ctx: Context) -> Problem | None:
    area = ctx.number("cells", "area")
    return bad_rows("cells", "area", ~(np.isnan(area) | (area > 0)), "area not positive")


@check("cells_images_known")
def _cells_images_known(ctx: Context) -> Problem | None:
    known = {image: True for image in ctx.text("images", "image_id") if image is not None}
    return bad_rows("cells", "image_id", ~ctx.per_cell(known, False, bool), "image_id not in images")


@check("cells_sample_consistent")
def _cells_sample(ctx: Context) -> Problem | None:
    images = dict(zip(ctx.text("images", "image_id"), ctx.text("images", "sample_id"), strict=True))
    # Compared as codes: each cell's sample, and the sample its image expects, as positions in the
    # cells' own samples (-2: a sample no cell has), so no per-cell strings are made.
    actual, samples = first_seen_codes(ctx.character("cells", "sample_id"))
    position = {sample: i for i, sample in enumerate(samples)}
    expected = ctx.per_cell({image: position.get(sample, -2) for image, sample in images.items() if sample is not None},
                            -3, np.int64)
    mismatch = (expected != -3) & (expected != actual)
    return bad_rows("cells", "sample_id", mismatch, "sample_id differs from the sample_id of its image")
