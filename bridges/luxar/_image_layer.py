"""The ``image:<channel>[,<channel>...]`` layer: each image handed over, as a composite of the chosen channels
(each in its display window, in the composite colours), drawn as a textured rectangle under the cells of that
image's frame.

The texture is read from the pyramid level closest to :data:`TEXTURE_SIDE` pixels on the longest side, never from
full resolution when a coarser level will do, and only the chosen channels are read. The rectangle spans the pixels
it shows in micrometres (pixel ``i`` covers ``[i, i + 1) * pixel_size``), so the cells sit on their pixels to within
one texture pixel.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from cellspec_sc.errors import InputError
from cellspec_sc.images import COMPOSITE_COLOURS, Image, composite, read_downsampled

TEXTURE_SIDE = 2048
LAYER_ORDER = 5  # below the image groups of the cells (10)
_FACES = np.array([[0, 1, 2], [0, 2, 3]], dtype=np.uint32)


def image_channels(argument: str) -> list[str]:
    """The channel names of an ``image:`` layer's argument (comma-separated, at most six).

    >>> image_channels("CD3e,Pan-Cytokeratin")
    ['CD3e', 'Pan-Cytokeratin']
    """
    names = [name.strip() for name in argument.split(",") if name.strip()]
    if not names or len(names) > len(COMPOSITE_COLOURS):
        raise InputError(f"image:{argument}: name 1 to {len(COMPOSITE_COLOURS)} channels, separated by commas")
    return names


def check_image_layer(argument: str, opened: Mapping[str, Image]) -> None:
    """Refuse an image layer without images, or naming a channel an image does not have."""
    if not opened:
        raise InputError(f"image:{argument} layer: no image handed over; pass images={{image_id: path}} "
                         "(--image ID=PATH)")
    for image in opened.values():
        for name in image_channels(argument):
            image.channel(name)  # raises naming the image's channels


def texture(image: Image, channels: list[str]) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """(y, x, 3) uint8 composite of ``channels`` and the full-resolution pixel box it covers."""
    pixels, covered = read_downsampled(image, TEXTURE_SIDE, channels=[image.channel(c) for c in channels])
    rgb = composite(pixels)
    return np.round(rgb * 255).astype(np.uint8), covered


def add_image_layer(scene: Any, name: str, offset: float, image: Image, channels: list[str],
                    pixel_size: tuple[float, float], coordinates: Callable[[np.ndarray, np.ndarray], tuple]) -> None:
    """Add the textured rectangle of ``image`` in a group of its own at ``offset``, under the cells.

    ``coordinates(rows, xy)`` gives the node's positions and dim_order (the image's place on a stacking
    dimension, when there is one)."""
    import luxar

    rgb, (x0, y0, x1, y1) = texture(image, channels)
    corners = np.array([[x0 * pixel_size[0], y0 * pixel_size[1]], [x1 * pixel_size[0], y0 * pixel_size[1]],
                        [x1 * pixel_size[0], y1 * pixel_size[1]], [x0 * pixel_size[0], y1 * pixel_size[1]]])
    # texture row 0 is the image's top row (y0), which the uv origin (bottom-left of the texture) is not
    uvs = np.array([[0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 0.0]], dtype=np.float32)
    positions, order = coordinates(np.arange(4), corners)
    group = scene.add_group(name, layer=True, blending_mode="normal", layer_order=LAYER_ORDER,
                            transform=luxar.translate(float(offset), 0.0, 0.0))
    group.add_mesh("pixels", positions, _FACES, uvs=uvs, texture=np.ascontiguousarray(rgb[::-1]),
                   texture_encoding="raw", texture_width=rgb.shape[1], texture_height=rgb.shape[0],
                   texture_channels=3, shading="none", dim_order=order, texture_filter="nearest")
