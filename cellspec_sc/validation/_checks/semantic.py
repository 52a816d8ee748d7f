"""Semantic checks (section 10): plausibility of values; they warn, never fail."""

from __future__ import annotations

import numpy as np

from cellspec_sc.validation._context import (
    Context,
    Problem,
    Skip,
    bad_rows,
    check,
    dictionary_mask,
    duplicated_rows,
    per_feature_problem,
)


@check("centroids_within_image")
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
    return bad_rows("cells", "x", outside, "centroid outside the image extent (1 pixel tolerance)")


@check("area_range")
def _area_range(ctx: Context) -> Problem | None:
    low, high = ctx.area_range
    area = ctx.number("cells", "area")
    with np.errstate(invalid="ignore"):
        outside = ~np.isnan(area) & ((area < low) | (area > high))
    return bad_rows("cells", "area", outside, f"area outside area_range [{low}, {high}] um2")


@check("negative_intensity")
def _negative_intensity(ctx: Context) -> Problem | None:
    stats = ctx.stats()
    intensity = dictionary_mask(ctx, kind="intensity")[: stats.n_features]
    counts = np.zeros(stats.n_features, dtype=np.int64)
    counts[: intensity.size] = np.where(intensity, stats.negative[: intensity.size], 0)
    return per_feature_problem(ctx, counts, "negative intensity values (count)")


@check("feature_na_fraction")
def _na_fraction(ctx: Context) -> Problem | None:
    m, stats = ctx.matrix(), ctx.stats()
    too_many = np.where(stats.nan > ctx.na_max * max(m.shape[0], 1), stats.nan, 0)
    return per_feature_problem(ctx, too_many, f"more than na_max={ctx.na_max:g} missing (count)")


@check("feature_support")
def _feature_support(ctx: Context) -> Problem | None:
    ctx.matrix()
    if "measurements_rows" in ctx.broken:
        raise Skip("measurements rows do not match cells")
    ctx.character("cells", "image_id")
    stats = ctx.stats()
    cols = np.flatnonzero(dictionary_mask(ctx, kind="intensity", statistic="mean")[: stats.n_features])
    flat = ~(stats.high[:, cols] > stats.low[:, cols])  # constant, or fewer than two non-NA values
    counts = np.zeros(stats.n_features, dtype=np.int64)
    counts[cols] = flat.sum(axis=0)
    return per_feature_problem(ctx, counts, "no variation within an image (images affected)")


@check("duplicate_centroids")
def _duplicate_centroids(ctx: Context) -> Problem | None:
    shared = duplicated_rows(ctx.image_codes()[0], ctx.number("cells", "x"), ctx.number("cells", "y"))
    return bad_rows("cells", "x", shared, "centroid shared with another cell")
