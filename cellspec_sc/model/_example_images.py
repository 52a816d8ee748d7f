"""The example's images: one OME-TIFF per image in which each cell is a disc of its area, whose pixels in each
channel hold the cell's ``cell:<marker>:mean`` (rounded to 16 bits); the background is 0.

Pixel ``i`` covers ``[i, i + 1) * pixel_size`` micrometres (its centre at ``(i + 0.5) * pixel_size``, as the
spec says); a pixel belongs to a cell's disc when its centre lies within the disc. The discs do not overlap (the
simulated outlines never do, and a disc of the same area lies inside its outline's circumcircle). Levels
halve the image (2 x 2 means of the level above, rounded; an odd last row or column is dropped) down to a longest
side of at most :data:`SMALLEST_LEVEL`, stored as SubIFDs.

The file is written a strip of :data:`TILE` rows at a time, in :data:`TILE` x :data:`TILE` tiles: each channel's
strips are drawn in turn and handed to tifffile as tiles, and each strip is halved at once into the levels below,
which wait in scratch files beside the image until their turn (a TIFF holds one level's pages after the other).
Memory stays at a few strips whatever the image's size, so a slide of a million cells (about 31,000 x 24,000
pixels a channel) is written in a few hundred MB.

>>> import numpy as np
>>> plane = np.zeros((1, 6, 6), np.float64)
>>> draw_discs(plane, np.array([1.5]), np.array([1.5]), np.array([0.8]), np.array([[7.0]]), pixel_size=0.5)
>>> int((plane[0] == 7).sum())  # pixel centres within 0.8 um of (1.5, 1.5) um
12
>>> level_shapes(1000, 600)
[(1000, 600), (500, 300), (250, 150)]
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cellspec_sc._files import sha256_file
from cellspec_sc.progress import progress

SMALLEST_LEVEL = 256
TILE = 256
COMPRESSIONS = ("zlib", None)
_OFFSETS_AT_ONCE = 4_000_000  # cells x disc pixels drawn in one vectorised step
_DTYPE = np.dtype(np.uint16)


def draw_discs(planes: np.ndarray, x_um: np.ndarray, y_um: np.ndarray, radius_um: np.ndarray, values: np.ndarray,
               *, pixel_size: float, first_row: int = 0) -> None:
    """Set the pixels of (c, y, x) ``planes`` whose centres lie within each disc to that cell's ``values`` (cells x
    c), vectorised over cells in chunks; a later cell wins a pixel two discs share. ``planes`` holds the image's
    rows ``first_row`` to ``first_row + planes.shape[1]`` (a strip): pixels are decided in image coordinates, so
    a strip gets exactly the pixels the whole image would."""
    if not x_um.size:
        return
    reach = int(np.ceil(np.nanmax(radius_um) / pixel_size)) + 1
    offsets = np.arange(-reach, reach + 1)
    per_chunk = max(1, _OFFSETS_AT_ONCE // offsets.size**2)
    _, height, width = planes.shape
    for start in range(0, x_um.size, per_chunk):
        part = slice(start, start + per_chunk)
        # the squared distance along each axis from a cell's centre to the pixel centres around it (infinite
        # outside the strip), added for every pixel of the square around the cell
        ix, dx2 = _axis_distances(x_um[part], offsets, pixel_size, 0, width)
        iy, dy2 = _axis_distances(y_um[part], offsets, pixel_size, first_row, first_row + height)
        inside = dy2[:, :, None] + dx2[:, None, :] <= radius_um[part, None, None] ** 2
        cell, row, column = np.nonzero(inside)
        rows, cols = iy[cell, row] - first_row, ix[cell, column]
        for channel in range(planes.shape[0]):
            planes[channel, rows, cols] = values[part][cell, channel]


def _axis_distances(centre_um: np.ndarray, offsets: np.ndarray, pixel_size: float, lo: int, hi: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Pixel indices around each centre along one axis and their centres' squared distances (inf outside
    ``lo`` to ``hi``)."""
    index = np.floor(centre_um / pixel_size).astype(np.int64)[:, None] + offsets
    squared = ((index + 0.5) * pixel_size - centre_um[:, None]) ** 2
    squared[(index < lo) | (index >= hi)] = np.inf
    return index, squared


def level_shapes(height: int, width: int) -> list[tuple[int, int]]:
    """(height, width) of every level, full resolution first: halved (rounded down) while the longest side of the
    level above is over :data:`SMALLEST_LEVEL`."""
    shapes = [(int(height), int(width))]
    while max(shapes[-1]) > SMALLEST_LEVEL:
        shapes.append((shapes[-1][0] // 2, shapes[-1][1] // 2))
    return shapes


def halve(rows: np.ndarray, width: int) -> np.ndarray:
    """2 x 2 means of an even number of uint16 ``rows`` (their first ``2 * width`` columns), rounded half to even.

    >>> halve(np.array([[1, 2, 9], [3, 5, 9]], np.uint16), 1).tolist()
    [[3]]
    >>> halve(np.array([[1, 2, 3, 4], [0, 3, 4, 3]], np.uint16), 2).tolist()  # 6/4 -> 2 (half to even), 14/4 -> 4
    [[2, 4]]
    """
    top, bottom = rows[0::2, :2 * width].astype(np.uint32), rows[1::2, :2 * width]
    top += bottom
    total = top[:, 0::2] + top[:, 1::2]
    quotient, remainder = total >> 2, total & 3
    quotient += (remainder > 2) | ((remainder == 2) & (quotient & 1).astype(bool))
    return quotient.astype(rows.dtype)


@dataclass
class Discs:
    """The cells of one image to draw: centres and radii (um), pixel values (cells x channels), pixel size.

    Cells are found for a strip by their centre's row (sorted once), and drawn in their given order."""

    x_um: np.ndarray
    y_um: np.ndarray
    radius_um: np.ndarray
    values: np.ndarray
    pixel_size: float

    def __post_init__(self) -> None:
        self._row = np.floor(self.y_um / self.pixel_size)
        self._by_row = np.argsort(self._row, kind="stable")
        self._sorted_rows = self._row[self._by_row]
        radius = self.radius_um[np.isfinite(self.radius_um)]
        self._reach = int(np.ceil(radius.max() / self.pixel_size)) + 1 if radius.size else 0

    def strip(self, channel: int, first_row: int, stop_row: int, width: int) -> np.ndarray:
        """Rows ``first_row`` to ``stop_row`` of ``channel`` as a (rows, width) array."""
        plane = np.zeros((1, stop_row - first_row, width), dtype=_DTYPE)
        lo, hi = np.searchsorted(self._sorted_rows, [first_row - self._reach, stop_row + self._reach])
        cells = np.sort(self._by_row[lo:hi])
        draw_discs(plane, self.x_um[cells], self.y_um[cells], self.radius_um[cells],
                   self.values[cells][:, [channel]], pixel_size=self.pixel_size, first_row=first_row)
        return plane[0]


class LevelFiles:
    """The levels below full resolution of each channel, made while full resolution is drawn: rows go in at the
    top level, are halved on their way down, and each level's rows are appended to a scratch file of its own
    (``<folder>/c<channel>-l<level>.raw``), read back a strip at a time when that level is written."""

    def __init__(self, folder: Path, shapes: list[tuple[int, int]]):
        self.folder, self.shapes = folder, shapes
        folder.mkdir(parents=True, exist_ok=True)
        self._channel = -1
        self._handles: list[Any] = []
        self._pending: list[np.ndarray | None] = []
        self._made: list[int] = []

    def path(self, channel: int, level: int) -> Path:
        return self.folder / f"c{channel}-l{level}.raw"

    def start(self, channel: int) -> None:
        """Open the files of ``channel``'s levels (closing the previous channel's)."""
        self.finish()
        self._channel = channel
        self._handles = [None] + [open(self.path(channel, k), "wb") for k in range(1, len(self.shapes))]
        self._pending = [None] * len(self.shapes)
        self._made = [0] * len(self.shapes)

    def push(self, level: int, rows: np.ndarray) -> None:
        """Rows of ``level`` (top to bottom, in turn): the next level gets their 2 x 2 means."""
        below = level + 1
        if below >= len(self.shapes):
            return
        if self._pending[below] is not None:
            rows = np.concatenate([self._pending[below], rows])
        height, width = self.shapes[below]
        usable = min(rows.shape[0] // 2, height - self._made[below]) * 2
        self._pending[below] = rows[usable:usable + 1] if rows.shape[0] > usable else None
        if usable:
            halved = halve(rows[:usable], width)
            self._handles[below].write(halved.tobytes())
            self._made[below] += halved.shape[0]
            self.push(below, halved)

    def finish(self) -> None:
        for handle in self._handles[1:]:
            handle.close()
        self._handles = []

    def strips(self, channel: int, level: int) -> Iterator[np.ndarray]:
        """The rows of ``level`` of ``channel``, :data:`TILE` at a time."""
        height, width = self.shapes[level]
        with open(self.path(channel, level), "rb") as handle:
            for start in range(0, height, TILE):
                count = min(TILE, height - start)
                yield np.fromfile(handle, dtype=_DTYPE, count=count * width).reshape(count, width)


def tiles_of(strips: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
    """The :data:`TILE` x :data:`TILE` tiles of each strip, left to right (tifffile pads those at the edges)."""
    for strip in strips:
        for start in range(0, strip.shape[1], TILE):
            yield strip[:, start:start + TILE]


def write_ome_tiff(path: Path, discs: Discs, shape: tuple[int, int, int], channel_names: list[str], name: str,
                   compression: str | None = "zlib") -> None:
    """Draw ``discs`` into a (c, y, x) ``shape`` uint16 OME-TIFF at ``path``: tiled, its pyramid in SubIFDs, its
    names and pixel size, written strip by strip in bounded memory (with a progress bar on big images). Its OME
    UUID follows ``name``, so the same image gives the same bytes (and SHA-256). The file appears complete or not
    at all (written beside it, then renamed)."""
    import tifffile

    channels, height, width = shape
    shapes = level_shapes(height, width)
    metadata = {"axes": "CYX", "UUID": f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, name)}",
                "Channel": {"Name": list(channel_names)}, "PhysicalSizeX": discs.pixel_size,
                "PhysicalSizeXUnit": "µm", "PhysicalSizeY": discs.pixel_size, "PhysicalSizeYUnit": "µm"}
    partial = path.with_name(f".{path.name}.partial")
    levels = LevelFiles(path.with_name(f".{path.name}.levels"), shapes)
    pixels = channels * sum(h * w for h, w in shapes)
    try:
        with progress(pixels, f"drawing {path.name}", unit="px", size=pixels) as bar, \
                tifffile.TiffWriter(partial, ome=True, bigtiff=channels * height * width * _DTYPE.itemsize > 2**31
                                    ) as tif:
            def full_resolution() -> Iterator[np.ndarray]:
                for channel in range(channels):
                    levels.start(channel)
                    for start in range(0, height, TILE):
                        strip = discs.strip(channel, start, min(start + TILE, height), width)
                        levels.push(0, strip)
                        bar.update(strip.size)
                        yield strip

            def lower(level: int) -> Iterator[np.ndarray]:
                for channel in range(channels):
                    for strip in levels.strips(channel, level):
                        bar.update(strip.size)
                        yield strip

            _write_level(tif, full_resolution, shapes[0], channels, compression,
                         subifds=len(shapes) - 1, metadata=metadata)
            levels.finish()  # tifffile stops taking tiles at the last one: the generator never ends by itself
            for level in range(1, len(shapes)):
                _write_level(tif, lambda k=level: lower(k), shapes[level], channels, compression, subfiletype=1)
        os.replace(partial, path)
    finally:
        levels.finish()
        shutil.rmtree(levels.folder, ignore_errors=True)
        partial.unlink(missing_ok=True)


def _write_level(tif: Any, strips: Callable[[], Iterator[np.ndarray]], shape: tuple[int, int], channels: int,
                 compression: str | None, **options: Any) -> None:
    """One level's pages: tiled from its strips when bigger than a tile, else whole (at most a tile a channel)."""
    height, width = shape
    if max(shape) > TILE:
        tif.write(tiles_of(strips()), shape=(channels, height, width), dtype=_DTYPE, tile=(TILE, TILE),
                  compression=compression, **options)
    else:
        whole = np.concatenate(list(strips())).reshape(channels, height, width)
        tif.write(whole, compression=compression, **options)


def write_example_images(folder: Path, cells: pd.DataFrame, images: pd.DataFrame, channels: pd.DataFrame,
                         radius_um: np.ndarray, values: np.ndarray, identity: str,
                         compression: str | None = "zlib") -> pd.DataFrame:
    """Write ``<image_id>.ome.tiff`` for every image into ``folder``; returns ``images`` with ``source_image``,
    ``source_image_sha256``, ``width_px`` and ``height_px`` of the files. ``values`` (cells x channels) are the
    pixel values of each cell's disc, channels in ``channel_index`` order; ``identity`` (the simulation's
    parameters) names the files' OME UUIDs; ``compression`` is ``"zlib"`` or None (uncompressed)."""
    folder.mkdir(parents=True, exist_ok=True)
    image_of_cell = cells["image_id"].to_numpy(dtype=object)
    names, hashes = [], []
    for _, row in images.iterrows():
        image_id = row["image_id"]
        own = channels[channels["image_id"] == image_id].sort_values("channel_index")
        rows = image_of_cell == image_id
        pixel_values = np.clip(np.round(values[rows]), 0, np.iinfo(_DTYPE).max)
        discs = Discs(cells["x"].to_numpy(np.float64)[rows], cells["y"].to_numpy(np.float64)[rows],
                      radius_um[rows], pixel_values, float(row["pixel_size"]))
        name = f"{image_id}.ome.tiff"
        write_ome_tiff(folder / name, discs, (len(own), int(row["height_px"]), int(row["width_px"])),
                       own["channel_name"].astype(str).tolist(), f"{identity}/{image_id}", compression)
        names.append(name)
        hashes.append(sha256_file(folder / name))
    return images.assign(source_image=names, source_image_sha256=hashes)
