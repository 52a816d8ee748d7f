"""Pixel size, image size and channel names from OME-XML (an OME-TIFF's ImageDescription or a ``.ome.xml``).

OME-TIFF files are opened with ``tifffile`` (only the first IFD's ImageDescription is read, never the
pixels); a file ending in ``.xml`` is read as OME-XML text.

>>> meta = ome_pixels_from_xml('<OME xmlns="http://www.openmicroscopy.org/Schemas/OME/2016-06"><Image>'
...     '<Pixels PhysicalSizeX="650" PhysicalSizeXUnit="nm" SizeX="20" SizeY="10"><Channel Name="DNA"/>'
...     '</Pixels></Image></OME>', "x.ome.xml")
>>> meta.pixel_size, meta.width_px, meta.channel_names
(0.65, 20, ['DNA'])
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from cellspec_sc.errors import InputError

# Length units of OME's UnitsLength that microscopes use, in micrometres.
_MICROMETRES = {"µm": 1.0, "μm": 1.0, "um": 1.0, "micron": 1.0, "nm": 1e-3, "Å": 1e-4, "mm": 1e3, "cm": 1e4,
                "m": 1e6, "pm": 1e-6}


@dataclass(frozen=True)
class OmePixels:
    """What a reader needs from an image's OME metadata."""

    pixel_size: float
    pixel_size_y: float | None
    width_px: int | None
    height_px: int | None
    channel_names: list[str] = field(default_factory=list)


def read_ome_pixels(path: str | os.PathLike) -> OmePixels:
    """OME metadata of an OME-TIFF or a companion ``.ome.xml`` file; InputError names what is missing."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"image={str(path)!r}: no such file")
    if path.name.lower().endswith(".xml"):
        return ome_pixels_from_xml(path.read_text(encoding="utf-8"), path.name)
    return ome_pixels_from_xml(_tiff_description(path), path.name)


def _tiff_description(path: Path) -> str:
    import tifffile

    try:
        with tifffile.TiffFile(path) as tif:
            description = tif.pages.first.description if len(tif.pages) else ""
    except (tifffile.TiffFileError, OSError, ValueError) as err:
        raise InputError(f"{path.name}: cannot read as TIFF ({err}); pass pixel_size= instead") from None
    if "<OME" not in description:
        raise InputError(f"{path.name}: the TIFF has no OME-XML ImageDescription, so no PhysicalSizeX; "
                         "pass pixel_size= (micrometres per pixel) instead")
    return description


def ome_pixels_from_xml(text: str, name: str) -> OmePixels:
    """Parse the first Image/Pixels element of an OME-XML document."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        raise InputError(f"{name}: the OME-XML cannot be parsed ({err})") from None
    pixels = next((el for el in root.iter() if el.tag.rsplit("}", 1)[-1] == "Pixels"), None)
    if pixels is None:
        raise InputError(f"{name}: the OME-XML has no Pixels element")
    size_x = _length(pixels, "PhysicalSizeX", name)
    if size_x is None:
        raise InputError(f"{name}: the OME-XML has no PhysicalSizeX; pass pixel_size= (micrometres per pixel)")
    size_y = _length(pixels, "PhysicalSizeY", name)
    channels = [el.get("Name") or el.get("ID") or "" for el in pixels if el.tag.rsplit("}", 1)[-1] == "Channel"]
    return OmePixels(
        pixel_size=size_x,
        pixel_size_y=size_y if size_y is not None and size_y != size_x else None,
        width_px=_int(pixels.get("SizeX")),
        height_px=_int(pixels.get("SizeY")),
        channel_names=channels,
    )


def _length(pixels: ET.Element, attribute: str, name: str) -> float | None:
    value = pixels.get(attribute)
    if value is None:
        return None
    unit = pixels.get(f"{attribute}Unit", "µm")
    if unit not in _MICROMETRES:
        raise InputError(f"{name}: {attribute}Unit={unit!r} is not a length unit this reader knows; "
                         "pass pixel_size= (micrometres per pixel)")
    try:
        size = float(value) * _MICROMETRES[unit]
    except ValueError:
        raise InputError(f"{name}: {attribute}={value!r} is not a number") from None
    if not size > 0:
        raise InputError(f"{name}: {attribute}={value!r} is not a positive size")
    return size


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
