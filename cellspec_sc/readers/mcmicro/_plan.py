"""MCMICRO's grammar as data (mcquant's column and file names), its side files, and the plan of one table.

mcquant writes one comma-separated row per mask label: ``CellID``, one column per channel with the
mean intensity (named after ``markers.csv``, no suffix), ``<marker>_<property>`` columns for other
intensity properties (``CD3_intensity_median``), then the regionprops of the mask (``X_centroid``,
``Y_centroid``, ``Area``, ``MajorAxisLength``, ``MinorAxisLength``, ``Eccentricity``, ``Solidity``,
``Extent``, ``Orientation``). Older versions wrote all masks into one file with mask suffixes
(``CD3_cellMask``, ``CD3_nucleiRingMask``) and ``column_centroid`` / ``row_centroid``.

The side files: ``markers.csv`` (channel names in channel order, as mcquant names its columns) and the
OME-XML of the image (an OME-TIFF's ImageDescription, read with ``tifffile`` without the pixels, or a
``.ome.xml``), which gives the pixel size. :func:`plan_export` reads the header and the side files into a
frozen :class:`McmicroPlan`.

>>> split_file_name("exemplar-001--unmicst_cell.csv")
('exemplar-001', 'cell')
>>> mcquant_names(["DNA", "CD3", "DNA"])
['DNA_1', 'CD3', 'DNA_2']
>>> meta = ome_pixels_from_xml('<OME xmlns="http://www.openmicroscopy.org/Schemas/OME/2016-06"><Image>'
...     '<Pixels PhysicalSizeX="650" PhysicalSizeXUnit="nm" SizeX="20" SizeY="10"><Channel Name="DNA"/>'
...     '</Pixels></Image></OME>', "x.ome.xml")
>>> meta.pixel_size, meta.width_px, meta.channel_names
(0.65, 20, ['DNA'])
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc.errors import InputError, MissingPath, needs_extra
from cellspec_sc.readers._features import SKIMAGE_OTHER_PROPS, SKIMAGE_REGIONPROPS, FeatureSpec
from cellspec_sc.readers._pipeline import ColumnRoles, Plan
from cellspec_sc.readers._table import (
    check_missing_text,
    listed,
    notice,
    pixel_size_for,
    read_as_text,
    read_header,
    require_columns,
)

ADAPTER = "mcmicro"
# Bump whenever the output for the same input changes (spec section 11).
# 1.1.0: "other" ids made unique with their statistic; nf-core <image>_<mask>.csv names split; the
# X_position / Y_position layout read; Latin-1/cp1252 files read.
# 1.2.0: markers.csv names in quotes matched to the table's unquoted columns; its remove column honoured;
# Unnamed: N and scikit-image properties without a spec statistic (bbox-0, euler_number) kind other.
# 1.3.0: a table in an MCMICRO project folder takes markers.csv and its registered image from the folder when not
# given (parameters["found_in_project"]); the project folder is read as its one table.
# 1.4.0: a folder of the tables of several masks of one segmentation (cell, nuclei ...) is read as one object, the
# masks' features joined by cell id (it was refused).
ADAPTER_VERSION = "1.4.0"
TOOL = "MCMICRO mcquant"

ID_COLUMN = "CellID"
CENTROIDS = ("X_centroid", "Y_centroid")
OLD_CENTROIDS = ("column_centroid", "row_centroid")
# The oldest mcquant (MaskIDs of SingleCellDataExtraction.py, histoCAT order) wrote X_position =
# regionprops centroid[0], the row, and Y_position = centroid[1], the column: (x, y) = (Y_, X_position).
OLDEST_CENTROIDS = ("Y_position", "X_position")
CENTROID_LAYOUTS = (CENTROIDS, OLD_CENTROIDS, OLDEST_CENTROIDS)
# Groups of alternative column names; an mcquant table has one column of every group.
REQUIRED = ((ID_COLUMN,), tuple(x for x, _ in CENTROID_LAYOUTS), tuple(y for _, y in CENTROID_LAYOUTS))
# Mask regionprops -> (spec statistic, unit); mcquant names and the snake_case names of --mask_props.
SHAPES = {
    "Area": ("area", "px2"), "MajorAxisLength": ("major_axis_length", "px"),
    "MinorAxisLength": ("minor_axis_length", "px"), "Eccentricity": ("eccentricity", "1"),
    "Solidity": ("solidity", "1"), "Extent": ("extent", "1"), "Orientation": ("orientation", "rad"),
    **SKIMAGE_REGIONPROPS,
}
# <marker>_<property> intensity columns -> spec statistic (None: kept as kind other).
INTENSITY_PROPS = {
    "intensity_mean": "mean", "intensity_median": "median", "intensity_sum": "sum", "intensity_std": "sd",
    "intensity_max": "max", "intensity_min": "min", "mean_intensity": "mean", "max_intensity": "max",
    "min_intensity": "min", "gini_index": None,
}
# Mask names (file-name suffix or column suffix, lower case, "mask" removed) -> compartment. The ring
# masks of S3segmenter approximate compartments: a ring around the nucleus is the perinuclear
# cytoplasm, a ring inside the cell outline is the membrane.
MASKS = {"cell": "cell", "nuclei": "nucleus", "nucleus": "nucleus", "cyto": "cytoplasm", "cytoplasm": "cytoplasm",
         "nucleiring": "cytoplasm", "cellring": "membrane", "cytoring": "membrane"}
_PROPS_LONGEST_FIRST = sorted(INTENSITY_PROPS, key=len, reverse=True)
# What pandas' to_csv writes for an unnamed index: the row number, not a marker.
PANDAS_INDEX = re.compile(r"Unnamed: \d+")
_MASK_SUFFIX = re.compile(r"^(?P<base>.+)_(?P<mask>[A-Za-z]+Mask)$")
_MCMICRO_NAME = re.compile(r"(?P<image>.+?)--(?P<seg>.+)_(?P<mask>[^_]+)")


def split_file_name(name: str) -> tuple[str, str | None]:
    """(image name, mask name) of ``<image>--<segmentation>_<mask>.csv`` (MCMICRO), ``<image>_<mask>.csv``
    (mcquant run alone, nf-core/mcmicro: ``TEST1_mask_TEST1.csv``) or older ``<image>_<mask>Mask.csv``.

    Parameters
    ----------
    name
        The table's file name.

    Returns
    -------
    The image name and the mask name (None when the name has no mask part: the whole stem is the image).

    Examples
    --------
    >>> split_file_name("TEST1_mask_TEST1.csv"), split_file_name("core_7_nuclei.csv")
    (('TEST1', 'mask_TEST1'), ('core_7', 'nuclei'))
    """
    stem = name[:-4] if name.lower().endswith(".csv") else name
    match = _MCMICRO_NAME.fullmatch(stem)
    if match:
        return match.group("image"), match.group("mask")
    match = _MASK_SUFFIX.fullmatch(stem)
    if match:
        return match.group("base"), match.group("mask")
    match = re.fullmatch(r"(?P<image>.+?)_(?P<mask>mask_(?P=image)|mask)", stem)  # nf-core: mask_<image>.tif
    if match:
        return match.group("image"), match.group("mask")
    match = re.fullmatch(r"(?P<image>.+)_(?P<mask>[A-Za-z]+)", stem)
    if match and match.group("mask").lower() in MASKS:
        return match.group("image"), match.group("mask")
    return stem, None


def segmentation_of(name: str) -> str | None:
    """The segmentation an MCMICRO table's file name names (``<image>--<segmentation>_<mask>.csv``), else None.

    >>> segmentation_of("exemplar-001--unmicst_nuclei.csv"), segmentation_of("core_7_nuclei.csv")
    ('unmicst', None)
    """
    match = _MCMICRO_NAME.fullmatch(name[:-4] if name.lower().endswith(".csv") else name)
    return match.group("seg") if match else None


def mask_compartment(mask: str | None) -> str | None:
    """Spec compartment of an mcquant mask name (``cell``, ``nucleiRingMask`` ...).

    Parameters
    ----------
    mask
        The mask name of a file name or column suffix (``Mask`` at its end is dropped), or None.

    Returns
    -------
    The compartment (see :data:`MASKS`; ``mask`` and ``mask_<image>``, nf-core's whole-cell mask, are ``cell``),
    or None when the name is unknown.

    Examples
    --------
    >>> mask_compartment("nucleiRingMask"), mask_compartment("mask_TEST1"), mask_compartment("probabilities")
    ('cytoplasm', 'cell', None)
    """
    if mask is None:
        return None
    key = mask.lower()
    if key == "mask" or key.startswith("mask_"):
        return "cell"  # nf-core/mcmicro's whole-cell segmentation mask_<image>.tif
    return MASKS.get(key[:-4] if key.endswith("mask") else key)


# -- column classification -------------------------------------------------------------------------------
def _strip_mask(name: str) -> tuple[str, str | None]:
    match = _MASK_SUFFIX.fullmatch(name)
    return (match.group("base"), match.group("mask")) if match else (name, None)


def _split_property(base: str, markers: set[str] | None) -> tuple[str, str] | None:
    """(marker, property) when ``base`` is ``<marker>_<known property>``."""
    for prop in _PROPS_LONGEST_FIRST:
        if base.endswith("_" + prop) and len(base) > len(prop) + 1:
            marker = base[: -len(prop) - 1]
            if markers is None or marker in markers:
                return marker, prop
    return None


def classify_columns(names: list[str], *, default_compartment: str, markers: list[str] | None
                     ) -> tuple[list[FeatureSpec], str]:
    """FeatureSpecs of the measurement columns and the compartment of the shape columns.

    Parameters
    ----------
    names
        The measurement columns of an mcquant table (without ``CellID`` and the centroids).
    default_compartment
        The compartment of columns without a mask suffix (the file name's mask, see :func:`mask_compartment`).
    markers
        The channel names of ``markers.csv``: only those are markers. Without, every column that is not a known
        regionprop or ``<marker>_<property>`` is the mean of a marker named like the column.

    Returns
    -------
    One FeatureSpec per column, in order, and the compartment of the shape columns (that of the first mask
    suffix, else ``default_compartment``).

    Examples
    --------
    >>> specs, shapes = classify_columns(["CD3", "CD3_intensity_median", "Area"], default_compartment="cell",
    ...                                  markers=None)
    >>> [(s.kind, s.statistic, s.marker) for s in specs], shapes
    ([('intensity', 'mean', 'CD3'), ('intensity', 'median', 'CD3'), ('shape', 'area', None)], 'cell')
    """
    stripped = [_strip_mask(n) for n in names]
    suffixes = [m for _, m in stripped if mask_compartment(m) is not None]
    shape_compartment = mask_compartment(suffixes[0]) if suffixes else default_compartment
    marker_set = set(markers) if markers is not None else None
    specs = []
    for name, (base, mask) in zip(names, stripped, strict=True):
        compartment = mask_compartment(mask) if mask else default_compartment
        if name in SHAPES:
            statistic, unit = SHAPES[name]
            specs.append(FeatureSpec("shape", statistic, unit, name, shape_compartment or "cell"))
            continue
        if compartment is None or PANDAS_INDEX.fullmatch(name):
            specs.append(FeatureSpec.other(name))
            continue
        split = _split_property(base, marker_set)
        if split is not None:
            marker, prop = split
            statistic = INTENSITY_PROPS[prop]
            specs.append(FeatureSpec("intensity", statistic, "a.u.", name, compartment, marker) if statistic
                         else FeatureSpec.other(name))
        elif marker_set is None and SKIMAGE_OTHER_PROPS.fullmatch(base):  # bbox-0, euler_number: no marker
            specs.append(FeatureSpec.other(name))
        elif marker_set is None or base in marker_set:
            specs.append(FeatureSpec("intensity", "mean", "a.u.", name, compartment, base))
        else:
            specs.append(FeatureSpec.other(name))
    return specs, shape_compartment or "cell"


# -- markers.csv ------------------------------------------------------------------------------------
# Values of markers.csv's remove column that mark a channel as removed.
REMOVE_TRUE = ("true", "1", "yes", "x")


def mcquant_names(names: list[str]) -> list[str]:
    """Channel names as mcquant makes them unique: every copy of a repeated name gets ``_1``, ``_2``...

    >>> mcquant_names(["DNA", "CD3", "DNA"])
    ['DNA_1', 'CD3', 'DNA_2']
    """
    total, seen = Counter(names), Counter()
    out = []
    for name in names:
        seen[name] += 1
        out.append(f"{name}_{seen[name]}" if total[name] > 1 else name)
    return out


@dataclass(frozen=True)
class Markers:
    """A ``markers.csv``: channel names in channel order, and those its ``remove`` column marks (MCMICRO's
    background subtraction drops them from the image it writes, so a table quantified from that image has
    no column for them)."""

    names: list[str]
    removed: frozenset[str] = frozenset()


def read_markers(path: str | os.PathLike) -> Markers:
    """The channels of an MCMICRO ``markers.csv`` (or the old one-name-per-line file)."""
    header = read_header(path, ",", "markers.csv")
    if "marker_name" in header.names:
        table = read_as_text(header, nulls=False)
        names = table.column("marker_name").to_numpy(zero_copy_only=False)
        check_missing_text(header.path, names, "marker_name", None)
        order = np.arange(len(names))
        if "channel_number" in header.names:
            numbers = _numbers_or_none(table.column("channel_number"))
            if numbers is not None and np.isfinite(numbers).all():
                order = np.argsort(numbers, kind="stable")
        ordered = mcquant_names([str(names[i]).strip() for i in order])
        flags = table.column("remove").to_pylist() if "remove" in header.names else [None] * len(names)
        removed = {name for name, i in zip(ordered, order, strict=True)
                   if str(flags[i] or "").strip().lower() in REMOVE_TRUE}
        return Markers(ordered, frozenset(removed))
    if len(header.names) == 1:
        table = read_as_text(header, nulls=False, one_column=True)
        return Markers(mcquant_names([str(v).strip() for v in table.column("f0").to_pylist()]))
    raise InputError(f"{header.path.name}: not an MCMICRO markers.csv: expected column 'marker_name' not found; "
                     f"found: {', '.join(header.names)}")


def in_table(marker: str, bases: set[str]) -> bool:
    """Whether the table has a column of ``marker`` (``bases``: its column names without mask suffixes)."""
    return marker in bases or any(b.startswith(marker + "_") for b in bases)


def _numbers_or_none(values: pa.ChunkedArray) -> np.ndarray | None:
    """Text as float64 (NaN for empty), or None when one value is not a number."""
    try:
        return pc.cast(pc.utf8_trim_whitespace(values), pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        return None


def unquoted_channels(channel_names: Sequence[str], bases: set[str], csv_name: str, *, strict: bool) -> list[str]:
    """``channel_names`` with the quotes taken off those written as ``'DNA 1'`` (or ``"DNA 1"``) whose columns
    the table (its column names without mask suffixes: ``bases``) has without them, as in MCMICRO workshop
    data; said in a warning (refused with ``strict``).

    >>> unquoted_channels(["'DNA 1'", "CD3"], {"DNA 1", "CD3_intensity_median"}, "markers.csv", strict=False)
    ['DNA 1', 'CD3']
    """
    out, unquoted = [], []
    for name in channel_names:
        inner = name[1:-1].strip() if len(name) > 2 and name[0] == name[-1] and name[0] in "'\"" else None
        if inner and not in_table(name, bases) and in_table(inner, bases):
            out.append(inner)
            unquoted.append(name)
        else:
            out.append(name)
    if unquoted:
        notice(f"{csv_name}: marker name(s) {listed(unquoted, quote=False)} are in quotes that the table's columns "
               "do not have; matched without the quotes", strict=strict)
    return out


def warn_unmatched(csv_name: str, channel_names: Sequence[str], lost: Sequence[str], matched: set[str], *,
                   strict: bool) -> None:
    """Warn (refuse with ``strict``) when markers.csv names none or only part of the marker columns (``lost``:
    the columns that became kind other), or names channels without a column."""
    unused = [m for m in channel_names if m not in matched]
    if lost and not matched:
        notice(f"{csv_name}: names none of the marker columns of the table ({listed(lost, quote=False)}); they "
               f"become kind other and the channels come from {csv_name}: is it the markers.csv of this table?",
               strict=strict)
    elif lost:
        notice(f"{csv_name}: column(s) {', '.join(map(repr, lost))} of the table are not in {csv_name} and become "
               f"kind other; {csv_name} names {', '.join(map(repr, unused)) or 'no other channel'} without a column",
               strict=strict)
    elif unused:
        notice(f"{csv_name}: names {len(unused)} channel(s) with no column in the table ({listed(unused)}); they are "
               "kept as channels without measurements", strict=strict)



# -- OME-XML ---------------------------------------------------------------------------------------
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
        raise MissingPath(path, f"image={str(path)!r}: no such file")
    if path.name.lower().endswith(".xml"):
        return ome_pixels_from_xml(path.read_text(encoding="utf-8"), path.name)
    return ome_pixels_from_xml(_tiff_description(path), path.name)


def _tiff_description(path: Path) -> str:
    with needs_extra("images", "cellspec_sc.read_mcmicro(image=...)"):
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


# -- the plan ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class McmicroPlan(Plan):
    """An mcquant table's plan: the base plan, plus the pixel size and where it came from, the image and mask the
    file name gives, and the channels of ``markers.csv`` (None without one) that the table has."""

    pixel_size: float
    pixel_size_y: float | None
    pixel_size_source: str
    ome: OmePixels | None
    file_image: str
    file_mask: str | None
    compartment: str
    shape_compartment: str
    channel_names: tuple[str, ...] | None
    removed: tuple[str, ...]


def plan_export(path: Path, *, pixel_size: float | None, markers_csv: str | os.PathLike | None,
                image: str | os.PathLike | None, strict: bool, encoding: str | None) -> McmicroPlan:
    """The checked header of the mcquant table at ``path`` and its side files as a plan; refuses, before any
    parsing, a file that is no mcquant table and a table without a pixel size. Says (refuses with ``strict``)
    when ``markers_csv`` does not fit the table."""
    header = read_header(path, ",", TOOL, encoding)
    require_columns(header, TOOL, REQUIRED)
    ome = read_ome_pixels(image) if image is not None else None
    ps, ps_y, size_source = _pixel_size(header.path, pixel_size, ome)
    file_image, file_mask = split_file_name(header.path.name)
    compartment = mask_compartment(file_mask) or "cell"
    centroids = {*CENTROIDS, *OLD_CENTROIDS, *OLDEST_CENTROIDS}
    roles = ColumnRoles(text=[ID_COLUMN], numbers=[c for c in header.names if c in centroids],
                        matrix=[n for n in header.names if n not in {ID_COLUMN, *centroids}])
    names = list(roles.matrix)
    index = [n for n in names if PANDAS_INDEX.fullmatch(n)]
    if index:
        notice(f"{header.path.name}: column(s) {', '.join(map(repr, index))} look like the index pandas writes "
               "(to_csv without index=False): kept as kind other, not a marker")
    channel_names, removed = None, []
    if markers_csv is not None:
        markers = read_markers(markers_csv)
        bases = {_strip_mask(n)[0] for n in names}
        removed = [n for n in markers.names if n in markers.removed and not in_table(n, bases)]
        kept = [n for n in markers.names if n not in removed]
        channel_names = unquoted_channels(kept, bases, Path(markers_csv).name, strict=strict)
    specs, shape_compartment = classify_columns(names, default_compartment=compartment, markers=channel_names)
    if channel_names is not None:
        free, _ = classify_columns(names, default_compartment=compartment, markers=None)
        lost = [n for n, a, b in zip(names, free, specs, strict=True) if a.kind == "intensity" and b.kind == "other"]
        warn_unmatched(Path(markers_csv).name, channel_names, lost, {s.marker for s in specs if s.kind == "intensity"},
                       strict=strict)
    return McmicroPlan(header=header, roles=roles, features=tuple(specs), pixel_size=ps, pixel_size_y=ps_y,
                       pixel_size_source=size_source, ome=ome, file_image=file_image, file_mask=file_mask,
                       compartment=compartment, shape_compartment=shape_compartment,
                       channel_names=None if channel_names is None else tuple(channel_names), removed=tuple(removed))


def _pixel_size(path: Path, pixel_size: float | None, ome: OmePixels | None
                ) -> tuple[float, float | None, str]:
    if pixel_size is not None:
        return pixel_size_for(["image"], pixel_size)["image"], None, "argument"
    if ome is not None:
        return ome.pixel_size, ome.pixel_size_y, "OME-XML PhysicalSizeX of image="
    raise InputError(f"{path.name}: mcquant tables are in pixels and carry no pixel size; pass it in micrometres "
                     "per pixel: read_mcmicro(path, pixel_size=0.65), or image='<image>.ome.tif' to read "
                     "PhysicalSizeX, or `cellspec import mcmicro FILE OUT --pixel-size 0.65`")
