"""Pixels for display: a level read down to a size, each channel windowed by the display rule, and a
composite of chosen channels in their colours."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cellspec_sc.display import robust_window
from cellspec_sc.images._image import Image

# the colours of a composite's channels, in order (up to six; the first a user sees most is white-ish on dark)
COMPOSITE_COLOURS = ("#00ffff", "#ff00ff", "#ffff00", "#00ff00", "#ff4040", "#4080ff")


def read_downsampled(image: Image, longest_side: int, region_px: tuple[float, float, float, float] | None = None,
                     channels: Sequence[int] | None = None
                     ) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """The image (or a region of it, in full-resolution pixels x0, y0, x1, y1) from the coarsest level that
    still gives ``longest_side`` pixels, decimated to at most that; returns (c, y, x) float32 pixels and the
    full-resolution box they cover (x0, y0, x1, y1). ``channels`` (positions) reads only those, in that order
    (default: every channel)."""
    x0, y0, x1, y1 = region_px if region_px is not None else (0.0, 0.0, float(image.width), float(image.height))
    x0, y0 = max(0.0, x0), max(0.0, y0)
    x1, y1 = min(float(image.width), x1), min(float(image.height), y1)
    span = max(x1 - x0, y1 - y0, 1.0)
    wanted = max(1, round(longest_side * max(image.width, image.height) / span))
    level = image.level_for(wanted)
    fy, fx = image.downsampling(level)
    a, b = int(np.floor(y0 / fy)), max(int(np.ceil(y1 / fy)), int(np.floor(y0 / fy)) + 1)
    c, d = int(np.floor(x0 / fx)), max(int(np.ceil(x1 / fx)), int(np.floor(x0 / fx)) + 1)
    step = max(1, int(np.ceil(max(b - a, d - c) / longest_side)))
    chosen = list(range(image.n_channels)) if channels is None else [int(k) for k in channels]
    pixels = np.asarray(image.levels[level][chosen, a:b:step, c:d:step].compute(), dtype=np.float32)
    covered = (c * fx, a * fy, min(d * fx, image.width), min(b * fy, image.height))
    return pixels, covered


def windowed(plane: np.ndarray, window: tuple[float, float] | None = None) -> np.ndarray:
    """A plane scaled to 0..1 by its display window (the shared percentile rule unless given)."""
    lo, hi = window if window is not None else robust_window(plane.ravel())
    return np.clip((plane - lo) / (hi - lo), 0.0, 1.0)


def composite(planes: np.ndarray, colours: Sequence[str] = COMPOSITE_COLOURS,
              windows: Sequence[tuple[float, float] | None] | None = None) -> np.ndarray:
    """Additive RGB composite (y, x, 3) in 0..1 of (c, y, x) planes, each windowed and in its colour."""
    rgb = np.zeros((*planes.shape[1:], 3), dtype=np.float32)
    for index, plane in enumerate(planes):
        colour = np.array([int(colours[index][k:k + 2], 16) / 255 for k in (1, 3, 5)], dtype=np.float32)
        window = windows[index] if windows is not None else None
        rgb += windowed(plane, window)[..., None] * colour
    return np.clip(rgb, 0.0, 1.0)
