"""CellProfiler's grammar as data (ExportToSpreadsheet: file and column names and what they mean), its side files,
and the plan of one object table.

ExportToSpreadsheet writes one comma-separated table per object (``<prefix><Object>.csv``: ``Cells.csv``,
``MyExpt_Nuclei.csv``) with ``ImageNumber``, ``ObjectNumber``, ``Location_Center_X``/``_Y`` (pixels; the mean of
the pixels' indices), ``AreaShape_*`` (pixels), ``Intensity_<Statistic>Intensity_<image>`` ... beside the per-image
table (``<prefix>Image.csv``: ``ImageNumber``, ``FileName_<image>``, ``Metadata_*``) and, when asked for,
``<prefix>Object_relationships.csv`` (``Relationship``, ``First/Second Object Name``, ``... Image Number``,
``... Object Number``), where MeasureObjectNeighbors' ``Neighbors`` rows are the contacts of one object set.

>>> classify("Intensity_MedianIntensity_CD3", "cell")  # doctest: +NORMALIZE_WHITESPACE
FeatureSpec(kind='intensity', statistic='median', unit='a.u.', source_name='Intensity_MedianIntensity_CD3',
            compartment='cell', marker='CD3')
>>> classify("AreaShape_FormFactor", "nucleus").statistic
'circularity'
>>> object_name(Path("MyExpt_Nuclei.csv")), neighbour_method("Neighbors_NumberOfNeighbors_Adjacent")
('Nuclei', 'Adjacent')
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from cellspec_sc.errors import InputError
from cellspec_sc.readers._features import FeatureSpec
from cellspec_sc.readers._pipeline import ColumnRoles, Plan
from cellspec_sc.readers._recognise import cellprofiler_object_tables
from cellspec_sc.readers._table import notice, other_name, read_header, require_columns

ADAPTER = "cellprofiler"
# Bump whenever the output for the same input changes (spec section 11).
ADAPTER_VERSION = "1.0.0"
TOOL = "CellProfiler"

IMAGE_NUMBER, OBJECT_NUMBER = "ImageNumber", "ObjectNumber"
CENTROID_LAYOUTS = (("Location_Center_X", "Location_Center_Y"), ("AreaShape_Center_X", "AreaShape_Center_Y"))
REQUIRED = ((IMAGE_NUMBER,), (OBJECT_NUMBER,), tuple(x for x, _ in CENTROID_LAYOUTS),
            tuple(y for _, y in CENTROID_LAYOUTS))
# Object names (lower case) -> spec compartment; another name needs compartment= (else "cell", with a warning).
OBJECT_COMPARTMENTS = {"cells": "cell", "cell": "cell", "nuclei": "nucleus", "nucleus": "nucleus",
                       "cytoplasm": "cytoplasm", "membrane": "membrane", "membranes": "membrane"}
# Intensity_<statistic>Intensity_<image> -> spec statistic.
INTENSITY_STATISTICS = {"MeanIntensity": "mean", "MedianIntensity": "median", "StdIntensity": "sd",
                        "MinIntensity": "min", "MaxIntensity": "max", "IntegratedIntensity": "sum"}
INTENSITY = re.compile(r"Intensity_(?P<statistic>[A-Za-z]+)_(?P<image>.+)")
# AreaShape_<name> -> (spec statistic, unit); the rest of AreaShape (Orientation in degrees, Zernike ...) is other.
SHAPES = {"Area": ("area", "px2"), "Perimeter": ("perimeter", "px"), "Eccentricity": ("eccentricity", "1"),
          "Solidity": ("solidity", "1"), "Extent": ("extent", "1"), "MajorAxisLength": ("major_axis_length", "px"),
          "MinorAxisLength": ("minor_axis_length", "px"), "MaxFeretDiameter": ("max_caliper", "px"),
          "MinFeretDiameter": ("min_caliper", "px"), "FormFactor": ("circularity", "1")}
# Per-image text columns an object table may carry; Metadata_* become cells columns.
TEXT_PREFIXES = ("FileName_", "PathName_", "URL_", "Metadata_", "ObjectsFileName_", "ObjectsPathName_")
IMAGE_TABLE, RELATIONSHIPS = "Image.csv", "Object_relationships.csv"
RELATIONSHIP_COLUMNS = ("Relationship", "First Object Name", "First Image Number", "First Object Number",
                        "Second Object Name", "Second Image Number", "Second Object Number")
# MeasureObjectNeighbors writes Neighbors_<feature>_<method>: Adjacent (objects whose masks touch), Expanded (each
# object expanded until it touches another) or a distance in pixels; only Adjacent is a method of the spec.
NEIGHBOUR_METHODS = {"Adjacent": "mask_touching"}
NEIGHBOUR_COLUMN = re.compile(r"Neighbors_NumberOfNeighbors_(?P<method>.+)")


@functools.lru_cache(maxsize=1 << 16)  # the same headers in every table of a folder
def classify(source: str, compartment: str) -> FeatureSpec:
    """What one column of an object table means (``compartment``: the object's)."""
    match = INTENSITY.fullmatch(source)
    if match and match["statistic"] in INTENSITY_STATISTICS:
        return FeatureSpec("intensity", INTENSITY_STATISTICS[match["statistic"]], "a.u.", source, compartment,
                           match["image"])
    if source.startswith("AreaShape_") and source[len("AreaShape_"):] in SHAPES:
        statistic, unit = SHAPES[source[len("AreaShape_"):]]
        return FeatureSpec("shape", statistic, unit, source, compartment)
    return FeatureSpec.other(source)


def object_name(path: Path) -> str:
    """The object set of a table named ``<prefix><Object>.csv`` (the part after the prefix's last ``_``)."""
    stem = path.name[:-4] if path.name.lower().endswith(".csv") else path.stem
    return stem.rsplit("_", 1)[-1]


def neighbour_method(column: str) -> str | None:
    """The method suffix of a ``Neighbors_NumberOfNeighbors_<method>`` column (None for another column)."""
    match = NEIGHBOUR_COLUMN.fullmatch(column)
    return match["method"] if match else None


@dataclass(frozen=True, kw_only=True)
class CellProfilerPlan(Plan):
    """An object table's plan: the object set and its compartment (and where that came from), the centroid
    columns, the per-image table and the relationships beside it (None when absent), the neighbour methods the
    table's columns name, and the Metadata_* columns kept as cells columns."""

    object_name: str
    compartment: str
    compartment_source: str
    centroids: tuple[str, str]
    image_table: Path | None
    relationships: Path | None
    neighbour_methods: tuple[str, ...]
    metadata: dict[str, str]


def object_table(path: Path, objects: str | None) -> Path:
    """The object table to read: ``path`` itself, or in a folder the one of ``objects`` (refusing a choice between
    several without it, naming them)."""
    if not path.is_dir():
        return path
    tables = cellprofiler_object_tables(path)
    if objects is not None:
        chosen = [t for t in tables if object_name(t).lower() == objects.lower()]
        if not chosen:
            raise InputError(f"{path.name}: objects={objects!r}: no object table of that name; the folder has "
                             f"{', '.join(t.name for t in tables) or 'none'}")
        return chosen[0]
    if len(tables) == 1:
        return tables[0]
    if not tables:
        raise InputError(f"{path.name}: no CellProfiler object table (a CSV with ImageNumber and ObjectNumber) in the "
                         "folder; pass the object table (e.g. Cells.csv) written by ExportToSpreadsheet")
    raise InputError(f"{path.name}: the folder has {len(tables)} object tables ({', '.join(t.name for t in tables)});"
                     f" choose one with objects= (e.g. objects={object_name(tables[0])!r}; CLI --objects)")


def side_file(table: Path, name: str, given: str | os.PathLike | None) -> Path | None:
    """``given``, else ``<prefix><name>`` beside ``table`` (the prefix of the object table's name), else the one
    ``*<name>`` of the folder; None when there is none."""
    if given is not None:
        return Path(given)
    stem = table.name[:-4] if table.name.lower().endswith(".csv") else table.stem
    prefix = stem[: len(stem) - len(object_name(table))]
    candidate = table.parent / f"{prefix}{name}"
    if candidate.is_file():
        return candidate
    found = sorted(table.parent.glob(f"*{name}"))
    return found[0] if len(found) == 1 else None


def plan_export(path: Path, *, pixel_size, objects: str | None, compartment: str | None,
                image_table: str | os.PathLike | None, relationships: str | os.PathLike | None,
                encoding: str | None) -> CellProfilerPlan:
    """The checked header of the object table (``path``, or chosen in the folder ``path``) as a plan; refuses
    before any parsing a table without a pixel size. Warns once when the object's compartment is assumed."""
    table = object_table(path, objects)
    header = read_header(table, ",", TOOL, encoding)
    require_columns(header, TOOL, REQUIRED)
    if pixel_size is None:
        raise InputError(f"{header.path.name}: CellProfiler measures in pixels and its tables carry no pixel size; "
                         "pass it in micrometres per pixel: read_cellprofiler(path, pixel_size=1.0) or `cellspec "
                         "import cellprofiler FILE OUT --pixel-size 1.0`")
    name = object_name(header.path)
    known, source = OBJECT_COMPARTMENTS.get(name.lower()), "object name"
    if compartment is not None:
        known, source = compartment, "argument"
    elif known is None:
        known, source = "cell", "assumed"
        notice(f"{header.path.name}: object set {name!r} is not one the reader knows as a compartment (Cells, "
               "Nuclei, Cytoplasm); its measurements are read as compartment 'cell'; pass compartment= (e.g. "
               "compartment='nucleus') if that is wrong")
    centroids = next(layout for layout in CENTROID_LAYOUTS if all(c in header.names for c in layout))
    text = [n for n in header.names if n.startswith(TEXT_PREFIXES)]
    fixed = {IMAGE_NUMBER, OBJECT_NUMBER, *centroids, *text}
    matrix = [n for n in header.names if n not in fixed]
    roles = ColumnRoles(text=[IMAGE_NUMBER, OBJECT_NUMBER, *text], numbers=list(centroids), matrix=matrix,
                        group=IMAGE_NUMBER)
    return CellProfilerPlan(
        header=header, roles=roles, features=tuple(classify(n, known) for n in matrix), object_name=name,
        compartment=known, compartment_source=source, centroids=centroids,
        image_table=side_file(header.path, IMAGE_TABLE, image_table),
        relationships=side_file(header.path, RELATIONSHIPS, relationships),
        neighbour_methods=tuple(m for m in map(neighbour_method, header.names) if m is not None),
        metadata={n: other_name(n) for n in text if n.startswith("Metadata_")})
