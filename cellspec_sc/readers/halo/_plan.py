"""HALO's grammar as data (Indica Labs object data: column names and what they mean), and the plan of one table.

HALO's object data export (HighPlex FL, Multiplex IHC, Indica Labs) is comma-separated UTF-8, usually with a byte
order mark, one row per object: ``Image Location`` (the image's path), ``Analysis Region``, ``Algorithm Name``,
``Object Id``, the bounding box ``XMin``, ``XMax``, ``YMin``, ``YMax`` in full-resolution pixels, then per dye
(``DAPI``, ``Dye 2`` or the marker's name) ``<dye> <Compartment> Intensity`` and ``<dye> Positive
Classification`` / ``<dye> Positive <Compartment> Classification`` (0/1 calls), and shapes with their units in
the name (``Cell Area (µm²)``, ``Nucleus Perimeter (µm)``).

>>> classify("CD8 (Opal 570) Cytoplasm Intensity")  # doctest: +NORMALIZE_WHITESPACE
FeatureSpec(kind='intensity', statistic='mean', unit='a.u.', source_name='CD8 (Opal 570) Cytoplasm Intensity',
            compartment='cytoplasm', marker='CD8 (Opal 570)')
>>> classify("Cell Area (\\u00b5m\\u00b2)").unit, classify("Nucleus Perimeter (\\u00b5m)").statistic
('um2', 'perimeter')
>>> flag_name("DAPI Positive Nucleus Classification")
'dapi_positive_nucleus_classification'
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from cellspec_sc.errors import InputError
from cellspec_sc.readers._features import FeatureSpec
from cellspec_sc.readers._pipeline import ColumnRoles, Plan
from cellspec_sc.readers._table import normalise_header, other_name, read_header, require_columns

ADAPTER = "halo"
# Bump whenever the output for the same input changes (spec section 11).
ADAPTER_VERSION = "1.0.0"
TOOL = "HALO"

ID_COLUMN = "Object Id"
# The bounding box in full-resolution pixels; the centroid is its centre.
BOX = ("XMin", "XMax", "YMin", "YMax")
IMAGE_COLUMNS = ("Image Location", "Image File Name", "Image")
REQUIRED = ((ID_COLUMN,), *((c,) for c in BOX))
# Text columns (lower case) -> cells column (None: read, not kept as a column of its own).
TEXT_COLUMNS = {"image location": None, "image file name": None, "image": None, "object id": None,
                "analysis region": "analysis_region", "analysis inputs": "analysis_inputs",
                "algorithm name": "algorithm_name", "classifier label": "classification",
                "classification": "classification",
                "tissue layer": "tissue_layer", "layer": "layer", "phenotype": "phenotype"}
# Compartment words of intensity and shape columns -> spec compartment.
COMPARTMENTS = {"nucleus": "nucleus", "cytoplasm": "cytoplasm", "cell": "cell", "membrane": "membrane"}
INTENSITY = re.compile(r"(?P<marker>.+?)\s+(?P<compartment>nucleus|cytoplasm|cell|membrane)\s+intensity", re.I)
# "<dye> Positive Classification", "<dye> Positive Nucleus Classification": phenotype calls, kept as cells columns.
CLASSIFICATION = re.compile(r".+\s+positive(\s+(nucleus|cytoplasm|cell|membrane))?\s+classification", re.I)
# Shape words -> spec statistic; their unit is in brackets after the name.
SHAPES = {"area": "area", "perimeter": "perimeter", "max caliper": "max_caliper", "min caliper": "min_caliper",
          "max diameter": "max_diameter", "min diameter": "min_diameter"}
SHAPE = re.compile(r"(?P<compartment>nucleus|cytoplasm|cell|membrane)\s+(?P<what>[a-z ]+?)\s*\((?P<unit>[^)]*)\)", re.I)
# Units as HALO writes them in brackets (after micro-sign normalisation) -> spec unit.
UNITS = {"um²": "um2", "um^2": "um2", "um2": "um2", "um": "um", "px²": "px2", "px^2": "px2", "px2": "px2",
         "px": "px", "pixels": "px"}


@functools.lru_cache(maxsize=1 << 16)  # the same headers in every table of a folder
def classify(source: str) -> FeatureSpec:
    """What one HALO measurement column means."""
    norm = normalise_header(source)
    match = INTENSITY.fullmatch(norm)
    if match:
        return FeatureSpec("intensity", "mean", "a.u.", source, COMPARTMENTS[match["compartment"].lower()],
                           match["marker"].strip())
    match = SHAPE.fullmatch(norm)
    if match:
        statistic, unit = SHAPES.get(match["what"].strip().lower()), UNITS.get(match["unit"].strip().lower())
        if statistic is not None and unit is not None and (unit in ("um2", "px2")) == (statistic == "area"):
            return FeatureSpec("shape", statistic, unit, source, COMPARTMENTS[match["compartment"].lower()])
        return FeatureSpec.other(source, unit or "a.u.")
    return FeatureSpec.other(source)


def flag_name(source: str) -> str:
    """The cells column of a classification column (snake_case of its header)."""
    return other_name(source)


@dataclass(frozen=True, kw_only=True)
class HaloPlan(Plan):
    """A HALO table's plan: the image column (None: one image, named after the file), the text columns kept as
    cells columns (column -> cells column) and the classification columns (column -> cells column)."""

    image_column: str | None
    text_targets: dict[str, str]
    flags: dict[str, str]


def plan_export(path: Path, *, pixel_size, encoding: str | None) -> HaloPlan:
    """The checked header of the HALO table at ``path`` as a plan; refuses a table that is not HALO's and, before
    any parsing, one without a pixel size (HALO's boxes are in pixels and the table carries no pixel size)."""
    header = read_header(path, (",", "\t", ";"), TOOL, encoding)
    require_columns(header, TOOL, REQUIRED)
    if pixel_size is None:
        raise InputError(f"{header.path.name}: HALO object tables give the bounding box in pixels and carry no "
                         "pixel size; pass it in micrometres per pixel: read_halo(path, pixel_size=0.5) or "
                         "`cellspec import halo FILE OUT --pixel-size 0.5` (HALO shows it in the image's metadata)")
    box = [header.find(c) for c in BOX]
    text = [n for n in header.names if normalise_header(n).lower() in TEXT_COLUMNS]
    targets = {n: TEXT_COLUMNS[normalise_header(n).lower()] for n in text}
    text_targets = {n: t for n, t in targets.items() if t is not None}
    flags = {n: flag_name(n) for n in header.names if CLASSIFICATION.fullmatch(normalise_header(n))}
    fixed = {*text, *box, *flags}
    matrix = [n for n in header.names if n not in fixed]
    image_column = header.find(*IMAGE_COLUMNS)
    roles = ColumnRoles(text=text, numbers=[*box, *flags], matrix=matrix, group=image_column)
    return HaloPlan(header=header, roles=roles, features=tuple(classify(n) for n in matrix),
                    image_column=image_column, text_targets=text_targets, flags=flags)
