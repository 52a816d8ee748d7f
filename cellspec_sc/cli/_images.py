"""``--image ID=PATH`` (repeatable) of ``cellspec preview``, ``convert`` and ``luxar``: the images handed over
with the cells, each checked against the object before use (``--no-verify`` skips the SHA-256)."""

from __future__ import annotations

import argparse

from cellspec_sc.errors import InputError


def add_image_options(p: argparse.ArgumentParser, *, also_selects: bool = False) -> None:
    """Add ``--image ID=PATH`` and ``--no-verify`` to a subcommand's parser."""
    extra = " (a bare ID, without =PATH, selects the image shown)" if also_selects else ""
    p.add_argument("--image", action="append", default=None, metavar="ID=PATH",
                   help="an OME-TIFF or OME-Zarr image of image_id ID, checked against the object (size, pixel "
                        f"size, channels, SHA-256); repeat for several images{extra}")
    p.add_argument("--no-verify", action="store_true",
                   help="do not compare image files with images.source_image_sha256")


def image_paths(values: list[str] | None, *, allow_bare: bool = False) -> tuple[dict[str, str], list[str]]:
    """``({image_id: path}, [bare ids])`` from the ``--image`` values.

    >>> image_paths(["img1=a.ome.tiff", "img2=b.ome.zarr"])
    ({'img1': 'a.ome.tiff', 'img2': 'b.ome.zarr'}, [])
    """
    images: dict[str, str] = {}
    bare = []
    for value in values or []:
        image_id, sep, path = value.partition("=")
        if not sep:
            if allow_bare:
                bare.append(value)
                continue
            raise InputError(f"--image {value!r}: expected ID=PATH (an image_id, '=', the image file)")
        if not image_id or not path:
            raise InputError(f"--image {value!r}: expected ID=PATH with both an image_id and a path")
        if image_id in images:
            raise InputError(f"--image {image_id}: given twice ({images[image_id]} and {path})")
        images[image_id] = path
    return images, bare
