"""Images handed to a cells object (``images={image_id: path or Image}``), each checked against it before use.

The checks: the ``image_id`` is one of the object's; width and height equal ``width_px``/``height_px``; the pixel
size equals ``images.pixel_size`` (when the file states one, within 0.1 %); the number of channels equals the rows
of the ``channels`` table for that image (when it has any); the file's SHA-256 equals ``source_image_sha256``
(when set and ``verify``). A file without channel names takes them from the ``channels`` table by
``channel_index``. Each refusal is an :class:`~cellspec_sc.errors.ImageError` naming the image id, the file and
both values.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from cellspec_sc.errors import ImageError
from cellspec_sc.images._image import Image
from cellspec_sc.images._open import open_image
from cellspec_sc.model import CellSpec
from cellspec_sc.progress import progress

ImageInput = str | os.PathLike | Image
_PIXEL_SIZE_TOLERANCE = 1e-3  # relative: OME-XML often rounds the physical size


def checked_images(x: CellSpec, images: Mapping[str, ImageInput] | None, *, verify: bool = True
                   ) -> dict[str, Image]:
    """Open (where given as paths) and check each image against ``x``; ``{image_id: Image}`` in the order given.

    Parameters
    ----------
    x
        The cells object the images belong to.
    images
        ``{image_id: path or Image}``; None or empty gives ``{}``.
    verify
        Compare the file's SHA-256 with ``images.source_image_sha256`` where that is set (reads the whole file,
        with a progress bar on big files).

    Raises
    ------
    ImageError
        An unknown ``image_id`` (the message lists the object's), or an image that does not match its row.
    """
    if not images:
        return {}
    if not isinstance(images, Mapping):
        raise ImageError(f"images= takes a mapping {{image_id: path or opened image}}, not {type(images).__name__}")
    known = [str(i) for i in x.images["image_id"]]
    out = {}
    for image_id, given in images.items():
        image_id = str(image_id)
        if image_id not in known:
            raise ImageError(f"image {image_id!r}: the object has no such image_id; its images are "
                             f"{', '.join(known)}")
        image = given if isinstance(given, Image) else open_image(given)
        out[image_id] = check_image(x, image_id, image, verify=verify)
    return out


def check_image(x: CellSpec, image_id: str, image: Image, *, verify: bool = True) -> Image:
    """Check one opened image against row ``image_id`` of ``x.images`` and its channels; returns it named."""
    row = x.images[x.images["image_id"].astype(str) == image_id].iloc[0]
    head = f"image {image_id!r} ({image.path})"
    for column, found in (("width_px", image.width), ("height_px", image.height)):
        expected = row.get(column)
        if expected is not None and not pd.isna(expected) and int(expected) != found:
            raise ImageError(f"{head}: {column} is {int(expected)} in the object, the file has {found}")
    _check_pixel_size(head, row, image)
    channels = _channels_of(x, image_id)
    if len(channels) and len(channels) != image.n_channels:
        raise ImageError(f"{head}: the object's channels table has {len(channels)} channels for this image, "
                         f"the file has {image.n_channels}")
    expected_hash = row.get("source_image_sha256")
    if verify and expected_hash is not None and not pd.isna(expected_hash) and image.path.is_file():
        found_hash = file_sha256(image.path)
        if found_hash != str(expected_hash).lower():
            raise ImageError(f"{head}: source_image_sha256 is {expected_hash} in the object, the file's SHA-256 "
                             f"is {found_hash}")
    if not image.names_from_file and len(channels):
        image = image.with_channel_names(channels["channel_name"].astype(str).tolist())
    return image


def _check_pixel_size(head: str, row: pd.Series, image: Image) -> None:
    expected_x = row.get("pixel_size")
    expected_y = row.get("pixel_size_y")
    expected_y = expected_x if expected_y is None or pd.isna(expected_y) else expected_y
    for axis, expected, found in (("pixel_size", expected_x, image.pixel_size),
                                  ("pixel_size_y", expected_y, image.pixel_size_y)):
        if found is None or expected is None or pd.isna(expected):
            continue
        if abs(float(found) - float(expected)) > _PIXEL_SIZE_TOLERANCE * float(expected):
            raise ImageError(f"{head}: {axis} is {float(expected):g} um in the object, the file states "
                             f"{float(found):g} um")


def _channels_of(x: CellSpec, image_id: str) -> pd.DataFrame:
    channels = x.channels[x.channels["image_id"].astype(str) == image_id]
    return channels.sort_values("channel_index", kind="stable")


def file_sha256(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file, with a progress bar in bytes on big files."""
    size = Path(path).stat().st_size
    digest = hashlib.sha256()
    with open(path, "rb", buffering=0) as handle, \
            progress(size, f"SHA-256 of {Path(path).name}", unit="B", size=size) as bar:
        buffer = bytearray(1 << 22)
        view = memoryview(buffer)
        while count := handle.readinto(buffer):
            digest.update(view[:count])
            bar.update(count)
    return digest.hexdigest()
