"""The example's images: one OME-TIFF per image in which each cell is a disc of its area, whose pixels in each
channel hold the cell's ``cell:<marker>:mean`` (rounded to 16 bits); the background is 0.

Pixel ``i`` covers ``[i, i + 1) * pixel_size`` micrometres (its centre at ``(i + 0.5) * pixel_size``, as the
spec says); a pixel belongs to a cell's disc when its centre lies within the disc. The discs do not overlap (the
simulated outlines never do, and a disc of the same area lies inside its outline's circumcircle). Levels
halve the image (2 x 2 means) down to a longest side of at most :data:`SMALLEST_LEVEL`, stored as SubIFDs.

>>> import numpy as np
>>> plane = np.zeros((1, 6, 6), np.float64)
>>> draw_discs(plane, np.array([1.5]), np.array([1.5]), np.array([0.8]), np.array([[7.0]]), pixel_size=0.5)
>>> int((plane[0] == 7).sum())  # pixel centres within 0.8 um of (1.5, 1.5) um
12
"""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pandas as pd

from cellspec_sc._files import sha256_file

SMALLEST_LEVEL = 256
_TILE = 256
_OFFSETS_AT_ONCE = 4_000_000  # cells x disc pixels drawn in one vectorised step


def draw_discs(planes: np.ndarray, x_um: np.ndarray, y_um: np.ndarray, radius_um: np.ndarray, values: np.ndarray,
               *, pixel_size: float) -> None:
    """Set the pixels of (c, y, x) ``planes`` whose centres lie within each disc to that cell's ``values`` (cells x
    c), vectorised over cells in chunks."""
    if not x_um.size:
        return
    reach = int(np.ceil(np.nanmax(radius_um) / pixel_size)) + 1
    dy, dx = np.mgrid[-reach:reach + 1, -reach:reach + 1]
    dy, dx = dy.ravel(), dx.ravel()
    per_chunk = max(1, _OFFSETS_AT_ONCE // dy.size)
    _, height, width = planes.shape
    for start in range(0, x_um.size, per_chunk):
        part = slice(start, start + per_chunk)
        cx, cy = np.floor(x_um[part] / pixel_size).astype(np.int64), np.floor(y_um[part] / pixel_size).astype(np.int64)
        ix, iy = cx[:, None] + dx, cy[:, None] + dy
        centre_x, centre_y = (ix + 0.5) * pixel_size, (iy + 0.5) * pixel_size
        inside = (centre_x - x_um[part, None]) ** 2 + (centre_y - y_um[part, None]) ** 2 <= radius_um[part, None] ** 2
        inside &= (ix >= 0) & (ix < width) & (iy >= 0) & (iy < height)
        cell, offset = np.nonzero(inside)
        rows, cols = iy[cell, offset], ix[cell, offset]
        for channel in range(planes.shape[0]):
            planes[channel, rows, cols] = values[part][cell, channel]


def pyramid(image: np.ndarray) -> list[np.ndarray]:
    """The levels below full resolution: 2 x 2 means until the longest side is at most :data:`SMALLEST_LEVEL`."""
    levels = []
    current = image
    while max(current.shape[1:]) > SMALLEST_LEVEL:
        h, w = (current.shape[1] // 2) * 2, (current.shape[2] // 2) * 2
        blocks = current[:, :h, :w].astype(np.float32).reshape(current.shape[0], h // 2, 2, w // 2, 2)
        current = np.round(blocks.mean(axis=(2, 4))).astype(image.dtype)
        levels.append(current)
    return levels


def write_ome_tiff(path: Path, image: np.ndarray, channel_names: list[str], pixel_size: float, name: str) -> None:
    """Write (c, y, x) ``image`` as a tiled OME-TIFF with its pyramid in SubIFDs, names and pixel size; its OME
    UUID follows ``name``, so the same image gives the same bytes (and SHA-256)."""
    import tifffile

    levels = pyramid(image)
    tile = (_TILE, _TILE) if max(image.shape[1:]) > _TILE else None
    metadata = {"axes": "CYX", "UUID": f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, name)}",
                "Channel": {"Name": list(channel_names)}, "PhysicalSizeX": pixel_size,
                "PhysicalSizeXUnit": "µm", "PhysicalSizeY": pixel_size, "PhysicalSizeYUnit": "µm"}
    with tifffile.TiffWriter(path, ome=True, bigtiff=image.nbytes > 2**31) as tif:
        tif.write(image, subifds=len(levels), tile=tile, metadata=metadata, compression="zlib")
        for level in levels:
            tif.write(level, subfiletype=1, tile=tile if max(level.shape[1:]) > _TILE else None,
                      compression="zlib")


def write_example_images(folder: Path, cells: pd.DataFrame, images: pd.DataFrame, channels: pd.DataFrame,
                         radius_um: np.ndarray, values: np.ndarray, identity: str) -> pd.DataFrame:
    """Write ``<image_id>.ome.tiff`` for every image into ``folder``; returns ``images`` with ``source_image``,
    ``source_image_sha256``, ``width_px`` and ``height_px`` of the files. ``values`` (cells x channels) are the
    pixel values of each cell's disc, channels in ``channel_index`` order; ``identity`` (the simulation's
    parameters) names the files' OME UUIDs."""
    folder.mkdir(parents=True, exist_ok=True)
    image_of_cell = cells["image_id"].to_numpy(dtype=object)
    names, hashes = [], []
    for _, row in images.iterrows():
        image_id = row["image_id"]
        own = channels[channels["image_id"] == image_id].sort_values("channel_index")
        rows = image_of_cell == image_id
        planes = np.zeros((len(own), int(row["height_px"]), int(row["width_px"])), dtype=np.uint16)
        pixel_values = np.clip(np.round(values[rows]), 0, np.iinfo(np.uint16).max)
        draw_discs(planes, cells["x"].to_numpy(np.float64)[rows], cells["y"].to_numpy(np.float64)[rows],
                   radius_um[rows], pixel_values, pixel_size=float(row["pixel_size"]))
        name = f"{image_id}.ome.tiff"
        write_ome_tiff(folder / name, planes, own["channel_name"].astype(str).tolist(), float(row["pixel_size"]),
                       f"{identity}/{image_id}")
        names.append(name)
        hashes.append(sha256_file(folder / name))
    return images.assign(source_image=names, source_image_sha256=hashes)
