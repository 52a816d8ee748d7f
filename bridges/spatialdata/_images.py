"""Image elements of the SpatialData: one multiscale image per image handed over, named ``<name>_image``, with
channel names on ``c``, lazy from the file until written, registered in the image's pixel coordinate system
(``<name>_px``, identity) and its micrometre system (``<name>``, scaled by the pixel size).

SpatialData puts the centre of pixel ``i`` at ``i + 0.5`` and the spec at ``(i + 0.5) * pixel_size`` um, so a pure
scale aligns the image with the circles. The scales are the file's own pyramid levels, each lazy over the file's
tiles, so making the element costs no work on the pixels whatever the slide's size; a file without a pyramid gets
halvings computed lazily from full resolution by spatialdata.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from cellspec_sc.bridges.spatialdata._record import PIXEL_SUFFIX
from cellspec_sc.images import Image

IMAGE_SUFFIX = "_image"
_SMALLEST_SIDE = 256  # a file without a pyramid gets halvings down to this longest side


def image_elements(opened: Mapping[str, Image], names: Mapping[str, str],
                   pixel_sizes: Mapping[str, tuple[float, float]]) -> dict[str, Any]:
    """``{element name: multiscale image}`` for every opened image (``names``: image id -> base name;
    ``pixel_sizes``: image id -> (x, y) micrometres per pixel)."""
    return {names[image_id] + IMAGE_SUFFIX: _element(image, names[image_id], pixel_sizes[image_id])
            for image_id, image in opened.items()}


def _element(image: Image, name: str, pixel_size: tuple[float, float]) -> Any:
    from spatialdata.models import Image2DModel
    from spatialdata.transformations import Identity, Scale

    transformations: dict[str, Any] = {name + PIXEL_SUFFIX: Identity()}
    if all(np.isfinite(pixel_size)) and min(pixel_size) > 0:
        transformations[name] = Scale([pixel_size[1], pixel_size[0]], axes=("y", "x"))
    if len(image.levels) > 1:
        return _file_levels(image, transformations)
    level = image.levels[0]
    return Image2DModel.parse(level, dims=("c", "y", "x"), c_coords=list(image.channel_names),
                              transformations=transformations, scale_factors=_scale_factors(image),
                              chunks=_chunks(level))


def _file_levels(image: Image, transformations: dict[str, Any]) -> Any:
    """The multiscale element of the file's levels (``scale0`` full resolution), each a lazy (c, y, x) array with
    the coordinates spatialdata gives a level: the centre of its pixel ``i`` at ``(i + 0.5) * full / size``."""
    from spatialdata.models import Image2DModel
    from spatialdata.transformations import set_transformation
    from xarray import DataArray, Dataset, DataTree

    scales = {}
    for number, level in enumerate(image.levels):
        _, height, width = level.shape
        coords = {"c": list(image.channel_names), "y": (np.arange(height) + 0.5) * (image.height / height),
                  "x": (np.arange(width) + 0.5) * (image.width / width)}
        scales[f"scale{number}"] = Dataset({"image": DataArray(level.rechunk(_chunks(level)), dims=("c", "y", "x"),
                                                               coords=coords)})
    tree = DataTree.from_dict(scales)
    set_transformation(tree, transformations, set_all=True)
    Image2DModel.validate(tree)
    return tree


def _scale_factors(image: Image) -> list[int] | None:
    count = len(image.levels) - 1
    if count == 0:  # always multiscale: at least one halving
        side = max(image.width, image.height)
        count = 1
        while side > _SMALLEST_SIDE * 2 ** (count + 1) and count < 8:
            count += 1
    while count and min(image.width, image.height) < 2**count:  # no level smaller than one pixel
        count -= 1
    return [2] * count or None


def _chunks(level: Any) -> tuple[int, int, int]:
    """One channel and at most 1024 x 1024 pixels a chunk (or the file's tiles when smaller)."""
    _, tile_y, tile_x = (c[0] for c in level.chunks)
    return 1, max(1, min(tile_y, 1024)), max(1, min(tile_x, 1024))
