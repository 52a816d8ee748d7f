"""Checks of the images and channels tables (section 10, "images" and "channels")."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from cellspec_sc.validation._context import (
    Context,
    Problem,
    Skip,
    bad_rows,
    check,
    column_types,
    is_in,
    kind_rows,
    merge,
    missing_or_empty,
    required_columns,
    rows_text,
    unique_ids,
)
from cellspec_sc.validation._report import MAX_ROWS_SHOWN


@check("images_required_columns")
def _images_required(ctx: Context) -> Problem | None:
    return required_columns(ctx, "images")


@check("images_column_types")
def _images_types(ctx: Context) -> Problem | None:
    return column_types(ctx, "images", only_declared=False)


@check("images_id_unique")
def _images_unique(ctx: Context) -> Problem | None:
    return unique_ids(ctx, "images", "image_id", "missing or empty image_id")


@check("images_sample_present")
def _images_sample(ctx: Context) -> Problem | None:
    return bad_rows("images", "sample_id", missing_or_empty(ctx.text("images", "sample_id")),
                     "missing or empty sample_id")


@check("images_pixel_size")
def _images_pixel(ctx: Context) -> Problem | None:
    size = ctx.number("images", "pixel_size")
    problems = [bad_rows("images", "pixel_size", ~(np.isfinite(size) & (size > 0)),
                         "pixel_size not finite and positive")]
    if "pixel_size_y" in ctx.table("images").columns:
        size_y = ctx.number("images", "pixel_size_y")
        problems.append(bad_rows("images", "pixel_size_y", ~(np.isnan(size_y) | (np.isfinite(size_y) & (size_y > 0))),
                                  "pixel_size_y not finite and positive"))
    return merge([p for p in problems if p])


@check("images_dimensions")
def _images_dimensions(ctx: Context) -> Problem | None:
    problems, seen = [], 0
    for column in ("width_px", "height_px"):
        try:
            values = ctx.number("images", column)
        except Skip:
            continue
        seen += 1
        problems.append(bad_rows("images", column, ~(np.isnan(values) | (values > 0)), "not positive"))
    if not seen:
        raise Skip("images has neither width_px nor height_px")
    return merge([p for p in problems if p])


@check("channels_required_columns")
def _channels_required(ctx: Context) -> Problem | None:
    return required_columns(ctx, "channels")


@check("channels_column_types")
def _channels_types(ctx: Context) -> Problem | None:
    return column_types(ctx, "channels", only_declared=False)


@check("channels_images_known")
def _channels_images(ctx: Context) -> Problem | None:
    known = {i for i in ctx.text("images", "image_id") if i is not None}
    return bad_rows("channels", "image_id", ~is_in(ctx.text("channels", "image_id"), known), "image_id not in images")


@check("channels_index_contiguous")
def _channels_index(ctx: Context) -> Problem | None:
    # a row per channel per image, a few hundred: Python's lists beat numpy's per-call cost here
    images = ctx.text("channels", "image_id")
    indices: dict[Any, list[float]] = {}
    for image, index in zip(images.tolist(), ctx.number("channels", "channel_index").tolist(), strict=True):
        indices.setdefault(image, []).append(index)
    bad_images = [image for image, found in indices.items() if sorted(found) != list(range(1, len(found) + 1))]
    if not bad_images:
        return None  # each image's indices read 1..n (NaN equals no number, so an NA index fails)
    rows = np.flatnonzero(is_in(images, bad_images))
    shown = ", ".join(map(str, bad_images[:MAX_ROWS_SHOWN]))
    return Problem(f"channels.channel_index is not 1..n in image(s) {shown}: {rows_text(rows, rows.size)}",
                   "channel_index", rows, int(rows.size))


@check("channels_names")
def _channels_names(ctx: Context) -> Problem | None:
    name, marker = ctx.text("channels", "channel_name"), ctx.text("channels", "marker")
    image = ctx.text("channels", "image_id")
    pairs = list(zip(image, marker, strict=True))
    seen = Counter(pairs)
    dup = np.fromiter((seen[pair] > 1 and pair[1] is not None for pair in pairs), dtype=bool, count=len(pairs))
    return merge([p for p in (
        bad_rows("channels", "channel_name", missing_or_empty(name), "missing or empty channel_name"),
        bad_rows("channels", "marker", missing_or_empty(marker), "missing or empty marker"),
        bad_rows("channels", "marker", dup, "marker repeated within an image"),
    ) if p])


@check("markers_in_channels")
def _markers_in_channels(ctx: Context) -> Problem | None:
    intensity = kind_rows(ctx, "intensity")
    markers = list(dict.fromkeys(m for m in ctx.text("dictionary", "marker")[intensity] if m is not None))
    per_image: dict = {}
    for image, marker in zip(ctx.text("channels", "image_id"), ctx.text("channels", "marker"), strict=True):
        per_image.setdefault(image, set()).add(marker)
    missing = [f"{m!r} in image {img!r}" for img in ctx.text("images", "image_id") for m in markers
               if m not in per_image.get(img, set())]
    if not missing:
        return None
    more = f", … ({len(missing)} in all)" if len(missing) > MAX_ROWS_SHOWN else ""
    return Problem(f"intensity marker(s) missing from channels.marker: {', '.join(missing[:MAX_ROWS_SHOWN])}{more}",
                   "marker", None, len(missing))
