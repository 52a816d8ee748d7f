"""Read MCMICRO ``mcquant`` single-cell tables (``<image>--<segmentation>_<mask>.csv``) into a CellSpec.

mcquant writes one comma-separated row per mask label: ``CellID``, one column per channel with the
mean intensity (named after ``markers.csv``, no suffix), ``<marker>_<property>`` columns for other
intensity properties (``CD3_intensity_median``), then the regionprops of the mask (``X_centroid``,
``Y_centroid``, ``Area``, ``MajorAxisLength``, ``MinorAxisLength``, ``Eccentricity``, ``Solidity``,
``Extent``, ``Orientation``). Older versions wrote all masks into one file with mask suffixes
(``CD3_cellMask``, ``CD3_nucleiRingMask``) and ``column_centroid`` / ``row_centroid``.

Everything is in pixels of the full-resolution image. ``X_centroid`` is scikit-image's
``regionprops`` ``centroid[1]``, the mean column index of the label's pixels, so the centre of pixel
``i`` is at ``i``; in the spec's frame (section 8) that pixel's centre is at ``i + 0.5``, hence
``x = (X_centroid + 0.5) * pixel_size`` and ``x_px = X_centroid + 0.5``. See ``docs/readers.md``.

>>> from cellspec_sc.readers.mcmicro import split_file_name
>>> split_file_name("exemplar-001--unmicst_cell.csv")
('exemplar-001', 'cell')
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from cellspec_sc.errors import InputError
from cellspec_sc.model import CellSpec, input_record
from cellspec_sc.readers.features import (SKIMAGE_OTHER_PROPS, SKIMAGE_REGIONPROPS, FeatureSpec, channels_frame,
                                          clean_marker, feature_positions, intensity_channels)
from cellspec_sc.readers.headers import Header
from cellspec_sc.readers.mcmicro_markers import in_table, read_markers, unquoted_channels, warn_unmatched
from cellspec_sc.readers.notices import notice
from cellspec_sc.readers.ome import OmePixels, read_ome_pixels
from cellspec_sc.readers.parsing import Parsed
from cellspec_sc.readers.pipeline import ColumnRoles, Tables, ToolAdapter, read_export
from cellspec_sc.readers.values import (check_finite_centroids, check_image_ids, constant_strings, first_line_where,
                                        pixel_size_for, positive_area, string_column)

ADAPTER = "mcmicro"
# Bump whenever the output for the same input changes (spec section 11).
# 1.1.0: "other" ids made unique with their statistic; nf-core <image>_<mask>.csv names split; the
# X_position / Y_position layout read; Latin-1/cp1252 files read.
# 1.2.0: markers.csv names in quotes matched to the table's unquoted columns; its remove column honoured;
# Unnamed: N and scikit-image properties without a spec statistic (bbox-0, euler_number) kind other.
ADAPTER_VERSION = "1.2.0"
TOOL = "MCMICRO mcquant"

ID_COLUMN = "CellID"
CENTROIDS = ("X_centroid", "Y_centroid")
OLD_CENTROIDS = ("column_centroid", "row_centroid")
# The oldest mcquant (MaskIDs of SingleCellDataExtraction.py, histoCAT order) wrote X_position =
# regionprops centroid[0], the row, and Y_position = centroid[1], the column: (x, y) = (Y_, X_position).
OLDEST_CENTROIDS = ("Y_position", "X_position")
CENTROID_LAYOUTS = (CENTROIDS, OLD_CENTROIDS, OLDEST_CENTROIDS)
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
# What pandas' to_csv writes for an unnamed index (scimap issue 16): the row number, not a marker.
PANDAS_INDEX = re.compile(r"Unnamed: \d+")
_MASK_SUFFIX = re.compile(r"^(?P<base>.+)_(?P<mask>[A-Za-z]+Mask)$")


def split_file_name(name: str) -> tuple[str, str | None]:
    """(image name, mask name) of ``<image>--<segmentation>_<mask>.csv`` (MCMICRO), ``<image>_<mask>.csv``
    (mcquant run alone, nf-core/mcmicro: ``TEST1_mask_TEST1.csv``) or older ``<image>_<mask>Mask.csv``.

    >>> split_file_name("TEST1_mask_TEST1.csv"), split_file_name("core_7_nuclei.csv")
    (('TEST1', 'mask_TEST1'), ('core_7', 'nuclei'))
    """
    stem = name[:-4] if name.lower().endswith(".csv") else name
    match = re.fullmatch(r"(?P<image>.+?)--(?P<seg>.+)_(?P<mask>[^_]+)", stem)
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


def mask_compartment(mask: str | None) -> str | None:
    """Spec compartment of an mcquant mask name (``cell``, ``nucleiRingMask`` ...), None if unknown."""
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

    With ``markers`` (from markers.csv) only those names are markers; without, every column that is
    not a known regionprop or ``<marker>_<property>`` is the mean of a marker named like the column.
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


# -- adapter ---------------------------------------------------------------------------------------
class McquantAdapter(ToolAdapter):
    """mcquant's grammar: the tables above, the image and mask from the file name, pixel centroids with
    scikit-image's pixel-centre convention, the pixel size from an argument or OME-XML."""

    name, version, tool, producer = ADAPTER, ADAPTER_VERSION, TOOL, "mcquant (MCMICRO)"
    required = ((ID_COLUMN,), tuple(x for x, _ in CENTROID_LAYOUTS), tuple(y for _, y in CENTROID_LAYOUTS))

    def __init__(self, *, pixel_size=None, image_id=None, sample_id=None, marker_map=None, markers_csv=None,
                 image=None, strict: bool = False, encoding: str | None = None) -> None:
        super().__init__(marker_map, encoding)
        self.pixel_size, self.image_id, self.sample_id = pixel_size, image_id, sample_id
        self.markers_csv, self.image, self.strict = markers_csv, image, strict

    def check_header(self, header: Header) -> None:
        self.ome = read_ome_pixels(self.image) if self.image is not None else None
        self.ps, self.ps_y, self.size_source = _pixel_size(header.path, self.pixel_size, self.ome)
        self.file_image, self.file_mask = split_file_name(header.path.name)
        self.compartment = mask_compartment(self.file_mask) or "cell"
        self.markers = read_markers(self.markers_csv) if self.markers_csv is not None else None
        self.channel_names = self.markers.names if self.markers is not None else None
        self.removed: list[str] = []

    def roles(self, header: Header) -> ColumnRoles:
        centroids = {*CENTROIDS, *OLD_CENTROIDS, *OLDEST_CENTROIDS}
        fixed = {ID_COLUMN, *centroids}
        return ColumnRoles(text=[ID_COLUMN], numbers=[c for c in header.names if c in centroids],
                           matrix=[n for n in header.names if n not in fixed])

    def classify(self, header: Header, roles: ColumnRoles) -> list[FeatureSpec]:
        names = list(roles.matrix)
        index = [n for n in names if PANDAS_INDEX.fullmatch(n)]
        if index:
            notice(f"{header.path.name}: column(s) {', '.join(map(repr, index))} look like the index pandas writes "
                   "(to_csv without index=False): kept as kind other, not a marker")
        if self.channel_names is not None:
            bases = {_strip_mask(n)[0] for n in names}
            self.removed = [n for n in self.channel_names if n in self.markers.removed and not in_table(n, bases)]
            kept = [n for n in self.channel_names if n not in self.removed]
            self.channel_names = unquoted_channels(kept, bases, Path(self.markers_csv).name, strict=self.strict)
        specs, self.shape_compartment = classify_columns(names, default_compartment=self.compartment,
                                                         markers=self.channel_names)
        if self.channel_names is not None:
            free, _ = classify_columns(names, default_compartment=self.compartment, markers=None)
            lost = [n for n, a, b in zip(names, free, specs, strict=True) if a.kind == "intensity" and b.kind == "other"]
            warn_unmatched(Path(self.markers_csv).name, self.channel_names, lost,
                           {s.marker for s in specs if s.kind == "intensity"}, strict=self.strict)
        return specs

    def tables(self, header, parsed, dictionary, applied, specs) -> Tables:
        path, n = header.path, parsed.n
        ps, ps_y = self.ps, self.ps_y
        cell_ids = parsed.arrow(ID_COLUMN)
        image_name = self.image_id if self.image_id is not None else self.file_image
        cell_codes = check_image_ids(path, cell_ids, ID_COLUMN, image_name)
        sample = self.sample_id if self.sample_id is not None else image_name
        x_raw, y_raw, centroid_cols = _raw_centroids(header, parsed)

        x_px, y_px = x_raw + 0.5, y_raw + 0.5  # regionprops: pixel i has its centre at i; the spec: at i + 0.5
        cells = {"cell_id": string_column(cell_ids), "image_id": string_column(constant_strings(image_name, n)),
                 "sample_id": string_column(constant_strings(sample, n)), "x": x_px * ps, "y": y_px * (ps_y or ps)}
        area = _cell_area(dictionary, parsed.matrix, self.shape_compartment, ps * (ps_y or ps))
        if area is not None:
            cells["area"] = area
        cells.update({"x_px": x_px, "y_px": y_px})

        channel_names, markers = self._channels(dictionary, applied)
        image_record = input_record(self.image) if self.image is not None else None
        images_table = _images_table(image_name, self.sample_id, ps, ps_y, self.ome, image_record)
        parameters = {
            "pixel_size": ps, "pixel_size_y": ps_y, "pixel_size_source": self.size_source, "image_id": self.image_id,
            "sample_id": self.sample_id, "marker_map": dict(self.marker_map),
            "markers_csv": None if self.markers_csv is None else Path(self.markers_csv).name,
            "markers_removed": self.removed,
            "image": None if self.image is None else Path(self.image).name,
            "image_pixel_size": None if self.ome is None else self.ome.pixel_size,
            "mask": self.file_mask, "compartment": self.compartment, "shape_compartment": self.shape_compartment,
            "centroids": centroid_cols,
            "pixel_centre": f"x = ({centroid_cols[0]} + 0.5) * pixel_size (regionprops puts the centre of pixel i "
                            "at i)",
        }
        return Tables(cells=cells, images=images_table, channels=channels_frame([image_name], channel_names, markers),
                      parameters=parameters, cell_codes=cell_codes, image_codes=(np.zeros(n, np.int64), [image_name]),
                      extra_inputs=[p for p in (self.markers_csv, image_record) if p is not None])

    def _channels(self, dictionary, applied) -> tuple[list[str], list[str]]:
        if self.channel_names is None:
            return intensity_channels(dictionary, applied)
        markers = [clean_marker(n, self.marker_map)[0] for n in self.channel_names]
        repeated = sorted(m for m, count in Counter(markers).items() if count > 1)
        if repeated:
            raise InputError(f"{Path(self.markers_csv).name}: marker_map gives several channels the name(s) "
                             f"{', '.join(map(repr, repeated))}; markers must be unique per image")
        return self.channel_names, markers


def read_mcmicro(
    path: str | os.PathLike,
    *,
    pixel_size: float | None = None,
    image_id: str | None = None,
    sample_id: str | None = None,
    marker_map: Mapping[str, str] | None = None,
    markers_csv: str | os.PathLike | None = None,
    image: str | os.PathLike | None = None,
    strict: bool = False,
    encoding: str | None = None,
) -> CellSpec:
    """Read an mcquant table into a CellSpec.

    The pixel size (micrometres per pixel) comes from ``pixel_size`` or from the OME-XML
    ``PhysicalSizeX`` of ``image`` (an OME-TIFF, or a companion ``.ome.xml``); without either the reader
    stops. ``markers_csv`` gives channel order and names; ``image_id`` defaults to the part of the file
    name before ``--`` (or before ``_<mask>``); ``sample_id`` to the image id. When ``markers_csv``
    does not fit the table (it names none or only part of the marker columns, names channels without a
    column, or writes names in quotes the columns lack), a ReaderWarning says how (``strict=True``: refused).

    >>> import cellspec_sc as cs
    >>> x = cs.read_mcmicro("exemplar-001--unmicst_cell.csv", pixel_size=0.65)  # doctest: +SKIP
    """
    adapter = McquantAdapter(pixel_size=pixel_size, image_id=image_id, sample_id=sample_id, marker_map=marker_map,
                             markers_csv=markers_csv, image=image, strict=strict, encoding=encoding)
    return read_export(adapter, path)


def _pixel_size(path: Path, pixel_size: float | None, ome: OmePixels | None
                ) -> tuple[float, float | None, str]:
    if pixel_size is not None:
        return pixel_size_for(["image"], pixel_size)["image"], None, "argument"
    if ome is not None:
        return ome.pixel_size, ome.pixel_size_y, "OME-XML PhysicalSizeX of image="
    raise InputError(f"{path.name}: mcquant tables are in pixels and carry no pixel size; pass it in micrometres "
                     "per pixel: read_mcmicro(path, pixel_size=0.65), or image='<image>.ome.tif' to read "
                     "PhysicalSizeX, or `cellspec import mcmicro FILE OUT --pixel-size 0.65`")


def _raw_centroids(header: Header, parsed: Parsed) -> tuple[np.ndarray, np.ndarray, list[str]]:
    path = header.path
    layouts = [list(layout) for layout in CENTROID_LAYOUTS if all(c in header.names for c in layout)]
    if not layouts:
        raise InputError(f"{path.name}: line 1: no complete pair of centroid columns; mcquant writes "
                         f"{' or '.join(' and '.join(map(repr, layout)) for layout in CENTROID_LAYOUTS)}")
    cols = layouts[0]
    x, y = (parsed.number(c) for c in cols)
    for values, column in ((x, cols[0]), (y, cols[1])):
        check_finite_centroids(path, values, column, None)
    if cols == list(CENTROIDS) and all(c in header.names for c in OLD_CENTROIDS):
        for new, old in zip(CENTROIDS, OLD_CENTROIDS, strict=True):
            a, b = parsed.number(new), parsed.number(old)
            bad = ~(np.abs(a - b) <= 0.5)
            if bad.any():
                raise InputError(f"{path.name}: line {first_line_where(bad)}: {new!r} and {old!r} disagree by more "
                                 "than half a pixel; the file mixes coordinate frames")
        cols += list(OLD_CENTROIDS)
    return x, y, cols


def _cell_area(dictionary, matrix: np.ndarray, shape_compartment: str, pixel_area: float) -> np.ndarray | None:
    if shape_compartment != "cell":
        return None  # a nucleus or ring mask's Area is not the whole-cell area
    hit = feature_positions(dictionary, kind="shape", statistic="area")
    if not hit:
        return None
    return positive_area(matrix[:, hit[0]] * pixel_area)


def _images_table(image_name: str, sample_id: str | None, ps: float, ps_y: float | None, ome: OmePixels | None,
                  record: dict | None) -> dict[str, list]:
    table: dict[str, list] = {"image_id": [image_name],
                              "sample_id": [sample_id if sample_id is not None else image_name],
                              "pixel_size": [ps]}
    if ps_y is not None:
        table["pixel_size_y"] = [ps_y]
    if ome is not None:
        table["width_px"] = [ome.width_px]
        table["height_px"] = [ome.height_px]
    if record is not None and not record["path_basename"].lower().endswith(".xml"):  # not a companion .ome.xml
        table["source_image"] = [record["path_basename"]]
        table["source_image_sha256"] = [record["sha256"]]
    return table
