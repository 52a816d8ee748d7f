"""The test oracle for images: the mean pixel value under each cell's centroid disc, computed here from plain
numpy arrays (independently of the package), and its correlation with the cells' measurements."""

from __future__ import annotations

import numpy as np


def disc_means(plane: np.ndarray, x_um: np.ndarray, y_um: np.ndarray, radius_um: np.ndarray,
               um_per_px: tuple[float, float]) -> np.ndarray:
    """Mean of ``plane`` (y, x) over the pixels whose centres lie within half of each cell's radius of its
    centroid; ``um_per_px`` is (y, x) micrometres per pixel of ``plane``. NaN where a disc holds no pixel."""
    py, px = um_per_px
    rows = (np.arange(plane.shape[0]) + 0.5) * py
    cols = (np.arange(plane.shape[1]) + 0.5) * px
    out = np.full(x_um.size, np.nan)
    for k, (x, y, r) in enumerate(zip(x_um, y_um, radius_um * 0.5, strict=True)):
        r = max(r, 0.75 * max(px, py))  # at least the nearest pixel on a coarse level
        ys = np.nonzero(np.abs(rows - y) <= r)[0]
        xs = np.nonzero(np.abs(cols - x) <= r)[0]
        if ys.size and xs.size:
            block = plane[ys[0]:ys[-1] + 1, xs[0]:xs[-1] + 1]
            inside = (rows[ys, None] - y) ** 2 + (cols[None, xs] - x) ** 2 <= r * r
            if inside.any():
                out[k] = float(block[inside].mean())
    return out


def correlations(x, image_id: str, planes: np.ndarray, channel_names, um_per_px: tuple[float, float],
                 swap: bool = False) -> dict[str, float]:
    """Pearson r between each channel's centroid-disc means and ``cell:<channel>:mean`` of the image's cells;
    ``swap`` reads each cell at (y, x) instead of (x, y)."""
    cells = x.cells[x.cells["image_id"] == image_id]
    rows = np.flatnonzero((x.cells["image_id"] == image_id).to_numpy())
    xs, ys = cells["x"].to_numpy(float), cells["y"].to_numpy(float)
    if swap:
        xs, ys = ys, xs
    radius = np.sqrt(cells["area"].to_numpy(float) / np.pi)
    features = list(x.dictionary["feature_id"])
    out = {}
    for channel, name in enumerate(channel_names):
        means = disc_means(np.asarray(planes[channel], dtype=float), xs, ys, radius, um_per_px)
        truth = np.asarray(x.measurements[rows, features.index(f"cell:{name}:mean")], dtype=float)
        kept = np.isfinite(means)
        out[name] = float(np.corrcoef(means[kept], truth[kept])[0, 1]) if kept.sum() > 2 else float("nan")
    return out
