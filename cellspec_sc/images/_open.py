"""Opening an image file: OME-TIFF (flat, tiled, pyramids in SubIFDs or in further series, BigTIFF) with
tifffile, OME-Zarr (NGFF 0.4 and 0.5) with zarr. Only metadata is read here; pixels stay in the file.

Every failure is an :class:`~cellspec_sc.errors.ImageError` naming the file: a path that is not a regular file
or folder (a FIFO is refused before it is opened, so nothing waits on it), a file that is not a TIFF (by its
first bytes), a TIFF whose pixel data lie past the end of the file (truncated) or whose structure tifffile
cannot follow (wrong IFD offsets), and a zarr folder without NGFF multiscales.
"""

from __future__ import annotations

import os
import stat
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cellspec_sc.errors import ImageError, MissingImage, require_extra
from cellspec_sc.images._image import Image, default_names

_TIFF_MAGIC = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")  # classic and BigTIFF, both byte orders
_UNIT_TO_UM = {"pm": 1e-6, "nm": 1e-3, "µm": 1.0, "um": 1.0, "micron": 1.0, "micrometer": 1.0, "mm": 1e3,
               "cm": 1e4, "m": 1e6, "nanometer": 1e-3, "millimeter": 1e3}
_CHANNEL_AXES = "CSIQ"  # axes that may hold the channels, the first preferred


def open_image(path: str | os.PathLike, *, channel_names: Sequence[str] | None = None) -> Image:
    """Open an OME-TIFF or OME-Zarr image lazily: names, sizes and levels now, pixels when computed.

    Parameters
    ----------
    path
        An OME-TIFF file (``.ome.tif(f)``, ``.tif(f)``; flat, tiled, pyramidal, BigTIFF) or an OME-Zarr folder.
    channel_names
        Names for the channels, replacing the file's (or ``image_0``, ``image_1``, ... where it has none).

    Returns
    -------
    Image
        ``channel_names``, ``shape`` (c, y, x), ``pixel_size`` (um, or None) and ``levels`` (dask arrays,
        full resolution first).

    Raises
    ------
    ImageError
        The path is missing, not a regular file or folder (a FIFO), not an image, damaged or truncated.

    Examples
    --------
    >>> import tempfile, numpy as np, tifffile
    >>> path = tempfile.mkdtemp() + "/two.ome.tif"
    >>> tifffile.imwrite(path, np.zeros((2, 8, 10), np.uint16), metadata={"axes": "CYX"})
    >>> image = open_image(path)
    >>> image.shape, image.channel_names
    ((2, 8, 10), ('image_0', 'image_1'))
    """
    require_extra("images", "cellspec_sc.open_image")
    where = Path(path)
    try:
        info = os.stat(where)
    except FileNotFoundError as err:
        missing = MissingImage(f"{where}: cannot open the image: {err.strerror or err}")
        missing.filename = str(where)
        raise missing from None
    except OSError as err:
        raise ImageError(f"{where}: cannot open the image: {err.strerror or err}") from None
    if stat.S_ISDIR(info.st_mode):
        image = _open_zarr(where)
    elif stat.S_ISREG(info.st_mode):
        image = _open_tiff(where, info.st_size)
    else:
        raise ImageError(f"{where}: not a regular file or folder (a FIFO, socket or device); an image is an "
                         "OME-TIFF file or an OME-Zarr folder")
    return image.with_channel_names(channel_names) if channel_names is not None else image


# -- OME-TIFF ----------------------------------------------------------------------------------------
def _open_tiff(path: Path, size: int) -> Image:
    import tifffile

    with open(path, "rb") as handle:
        head = handle.read(4)
    if head not in _TIFF_MAGIC:
        raise ImageError(f"{path}: not an image: an image is an OME-TIFF file (its first bytes are "
                         f"{head!r}, a TIFF starts with II* or MM*) or an OME-Zarr folder")
    try:
        tif = tifffile.TiffFile(path)
    except Exception as err:  # tifffile raises TiffFileError, ValueError, struct.error, ... on damaged files
        raise ImageError(f"{path}: damaged TIFF: {err}") from None
    try:
        series = _pyramid_series(tif)
        _check_data_within(path, tif, series, size)
        names, ps_x, ps_y = _ome_channels_and_pixel_size(tif.ome_metadata)
        levels = tuple(_tiff_level(path, level, index) for index, level in enumerate(series))
    except ImageError:
        tif.close()
        raise
    except Exception as err:
        tif.close()
        raise ImageError(f"{path}: damaged TIFF: {err}") from None
    count = int(levels[0].shape[0])
    if names is not None and len(names) != count:
        names = None  # OME-XML that does not describe these pixels names nothing
    return Image(path=path, channel_names=tuple(names) if names else default_names(count), levels=levels,
                 pixel_size=ps_x, pixel_size_y=ps_y, format="ome-tiff", names_from_file=bool(names))


def _pyramid_series(tif: Any) -> list[Any]:
    """(series, level) of each level of the first series: its SubIFD levels, or further series that shrink it
    (older writers)."""
    if not tif.series:
        raise ImageError(f"{tif.filehandle.path}: damaged TIFF: no image in the file")
    first = tif.series[0]
    levels = [(first, index) for index in range(len(first.levels))]
    if len(levels) == 1 and len(tif.series) > 1:
        for candidate in tif.series[1:]:
            previous = levels[-1][0]
            same_axes = candidate.axes == previous.axes and len(candidate.shape) == len(previous.shape)
            if not (same_axes and _is_smaller(candidate, previous)):
                break
            levels.append((candidate, 0))
    return levels


def _is_smaller(candidate: Any, previous: Any) -> bool:
    sizes = dict(zip(candidate.axes, candidate.shape, strict=True))
    before = dict(zip(previous.axes, previous.shape, strict=True))
    others_equal = all(sizes[a] == before[a] for a in sizes if a not in "YX")
    return others_equal and sizes.get("Y", 0) < before.get("Y", 0) and sizes.get("X", 0) < before.get("X", 0)


def _check_data_within(path: Path, tif: Any, levels: list[Any], size: int) -> None:
    for number, (series, index) in enumerate(levels):
        for page in series.levels[index].pages:
            if page is None:
                raise ImageError(f"{path}: damaged TIFF: level {number} misses a page (wrong IFD offsets)")
            ends = [o + n for o, n in zip(page.dataoffsets, page.databytecounts, strict=False) if n]
            if ends and max(ends) > size:
                raise ImageError(f"{path}: truncated TIFF: level {number} needs {max(ends):,} bytes, the file "
                                 f"has {size:,}")


def _tiff_level(path: Path, level: tuple[Any, int], number: int) -> Any:
    import dask.array as da
    import zarr

    series, index = level
    array = da.from_zarr(zarr.open_array(series.aszarr(level=index), mode="r"))
    return _to_cyx(path, array, series.levels[index].axes, f"level {number}")


def _to_cyx(path: Path, array: Any, axes: str, what: str) -> Any:
    """(c, y, x) from an array with the given axes letters: C, S (samples), I or Q (pages of a plain multipage
    TIFF) as channels; every other axis, and a channel-like axis beside a longer one, must have size 1."""
    axes = axes.upper()
    sizes = dict(zip(axes, array.shape, strict=True))
    candidates = [a for a in _CHANNEL_AXES if a in sizes]
    channel = max(candidates, key=lambda a: (sizes[a] > 1, -_CHANNEL_AXES.index(a)), default=None)
    if "Y" not in sizes or "X" not in sizes:
        raise ImageError(f"{path}: {what} has axes {axes!r}; a cell image has channels, y and x")
    index = []
    for axis in axes:
        if axis in ("Y", "X", channel):
            index.append(slice(None))
        elif sizes[axis] != 1:
            raise ImageError(f"{path}: {what} has {sizes[axis]} positions along axis {axis!r}; a cell image has "
                             "channels, y and x only")
        else:
            index.append(0)
    kept = [a for a in axes if a in ("Y", "X", channel)]
    array = array[tuple(index)]
    if channel is None:
        array, kept = array[None], ["C", *kept]
        channel = "C"
    return array.transpose([kept.index(channel), kept.index("Y"), kept.index("X")])


def _ome_channels_and_pixel_size(xml: str | None) -> tuple[list[str] | None, float | None, float | None]:
    """Channel names and pixel size (um) of the first image of an OME-XML text (None where it has none)."""
    if not xml:
        return None, None, None
    try:
        root = ET.fromstring(xml)
    except ET.ParseError:
        return None, None, None
    pixels = next((e for e in root.iter() if e.tag.rsplit("}", 1)[-1] == "Pixels"), None)
    if pixels is None:
        return None, None, None
    names = [c.get("Name") for c in pixels if c.tag.rsplit("}", 1)[-1] == "Channel"]
    named = names if names and all(names) else None
    return named, _physical(pixels, "X"), _physical(pixels, "Y")


def _physical(pixels: ET.Element, axis: str) -> float | None:
    value = pixels.get(f"PhysicalSize{axis}")
    unit = pixels.get(f"PhysicalSize{axis}Unit", "µm")
    try:
        number = float(value) * _UNIT_TO_UM[unit] if value is not None else None
    except (ValueError, KeyError):
        return None
    return number if number is not None and number > 0 and number < float("inf") else None


# -- OME-Zarr ----------------------------------------------------------------------------------------
def _open_zarr(path: Path) -> Image:
    import dask.array as da
    import zarr

    try:
        group = zarr.open_group(str(path), mode="r")
        attrs = dict(group.attrs)
    except Exception as err:
        raise ImageError(f"{path}: not an OME-Zarr image: {err}") from None
    ome = attrs.get("ome", attrs)  # NGFF 0.5 nests the metadata under "ome", 0.4 has it at the top
    multiscales = ome.get("multiscales") if isinstance(ome, dict) else None
    if not multiscales:
        raise ImageError(f"{path}: not an OME-Zarr image: the folder has no NGFF 'multiscales' metadata")
    scale = multiscales[0]
    try:
        axes = "".join(_axis_letter(a) for a in scale["axes"])
        datasets = scale["datasets"]
        levels = tuple(_to_cyx(path, da.from_zarr(group[d["path"]]), axes, f"level {d['path']!r}")
                       for d in datasets)
        ps_x, ps_y = _ngff_pixel_size(scale, datasets[0])
    except ImageError:
        raise
    except Exception as err:
        raise ImageError(f"{path}: damaged OME-Zarr image: {err}") from None
    count = int(levels[0].shape[0])
    channels = (ome.get("omero") or {}).get("channels") or []
    names = [c.get("label") for c in channels if isinstance(c, dict)]
    named = names if len(names) == count and all(names) else None
    return Image(path=path, channel_names=tuple(named) if named else default_names(count), levels=levels,
                 pixel_size=ps_x, pixel_size_y=ps_y, format="ome-zarr", names_from_file=bool(named))


def _axis_letter(axis: Any) -> str:
    name = axis["name"] if isinstance(axis, dict) else str(axis)
    return {"c": "C", "t": "T", "z": "Z", "y": "Y", "x": "X"}.get(name.lower(), "Q")


def _ngff_pixel_size(scale: dict, first: dict) -> tuple[float | None, float | None]:
    """The x and y scale of the first level in micrometres (None where not stated in a length unit)."""
    names = [a["name"] if isinstance(a, dict) else str(a) for a in scale["axes"]]
    units = [a.get("unit") if isinstance(a, dict) else None for a in scale["axes"]]
    factors = [1.0] * len(names)
    for transform in first.get("coordinateTransformations", []):
        if transform.get("type") == "scale":
            factors = [a * b for a, b in zip(factors, transform["scale"], strict=True)]
    out = []
    for axis in ("x", "y"):
        if axis not in names:
            out.append(None)
            continue
        position = names.index(axis)
        unit = units[position]
        multiplier = _UNIT_TO_UM.get(unit) if unit else None
        out.append(factors[position] * multiplier if multiplier else None)
    return out[0], out[1]
