"""inForm's grammar as data (Akoya Vectra/Polaris ``cell_seg_data.txt``: column names and what they mean), and the
plan of one table.

inForm writes one tab-separated row per cell: ``Path``, ``Sample Name`` (the field's image, e.g.
``Core[1,5,6,1]_[21302,15107].im3``), ``Tissue Category``, ``Phenotype`` (or one ``Phenotype-<marker>`` column per
marker), ``Cell ID``, ``Cell X Position`` and ``Cell Y Position`` (pixels, or microns when the export's units are
microns), shapes (``Nucleus Area (pixels)`` / ``(square microns)``, ``Nucleus Major Axis``) and per compartment and
component ``<Compartment> <component> <Statistic> (Normalized Counts, Total Weighting)``, where the compartment is
``Nucleus``, ``Cytoplasm``, ``Membrane`` or ``Entire Cell``. Missing values are written ``#N/A``; some columns
(``Confidence``) hold percentages as text (``95.00%``, ``0.01 %``).

>>> spec = classify("Entire Cell CD8 (Opal 570) Mean (Normalized Counts, Total Weighting)", "pixels")
>>> spec.kind, spec.statistic, spec.compartment, spec.marker
('intensity', 'mean', 'cell', 'CD8 (Opal 570)')
>>> classify("Nucleus Area (square microns)", "microns").unit, classify("Nucleus Major Axis", "pixels").unit
('um2', 'px')
>>> position_unit_of(("Cell X Position", "Nucleus Area (pixels)"))
'pixels'
>>> percent_value(pa.chunked_array([["95.00%", " 0.01 %", None]])).tolist()
[95.0, 0.01, nan]
"""

from __future__ import annotations

import functools
import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from cellspec_sc.errors import InputError
from cellspec_sc.readers._features import FeatureSpec
from cellspec_sc.readers._pipeline import ColumnRoles, Plan
from cellspec_sc.readers._table import (
    Header,
    normalise_header,
    notice,
    other_name,
    read_header,
    read_options,
    require_columns,
)

ADAPTER = "inform"
# Bump whenever the output for the same input changes (spec section 11).
ADAPTER_VERSION = "1.0.0"
TOOL = "inForm"

ID_COLUMN = "Cell ID"
CENTROIDS = ("Cell X Position", "Cell Y Position")
IMAGE_COLUMN = "Sample Name"
REQUIRED = ((ID_COLUMN,), (CENTROIDS[0],), (CENTROIDS[1],))
# What inForm writes for a missing value (besides the empty field).
NULLS = ("", "#N/A", "N/A")
# Text columns (lower case) -> cells column (None: read, not kept as a column of its own); a ``Phenotype-<marker>``
# column is text too (PHENOTYPE).
TEXT_COLUMNS = {"path": None, "sample name": None, "cell id": None, "tissue category": "tissue_category",
                "phenotype": "phenotype", "annotation id": "annotation_id", "lab id": "lab_id", "slide id": "slide_id",
                "tma sector": "tma_sector", "tma row": "tma_row", "tma column": "tma_column", "tma field": "tma_field",
                "process region id": "process_region_id", "category region id": "category_region_id",
                "inform software version": None}
PHENOTYPE = re.compile(r"phenotype[ -].+", re.I)
# Columns of percentages written as text ("95.00%"): cells columns of the number before the sign.
PERCENT_COLUMNS = ("Confidence",)
PERCENT = r"^\s*[-+]?(\d+\.?\d*|\.\d+)\s*%\s*$"
# Compartment words -> spec compartment.
COMPARTMENTS = {"nucleus": "nucleus", "cytoplasm": "cytoplasm", "membrane": "membrane", "entire cell": "cell"}
STATISTICS = {"mean": "mean", "min": "min", "max": "max", "std dev": "sd", "total": "sum"}
INTENSITY = re.compile(r"(?P<compartment>nucleus|cytoplasm|membrane|entire cell)\s+(?P<marker>.+?)\s+"
                       r"(?P<statistic>mean|min|max|std dev|total)(\s+\((?P<scale>[^)]*)\))?", re.I)
# Shape words -> (spec statistic, dimension: 0 dimensionless, 1 length, 2 area).
SHAPES = {"area": ("area", 2), "major axis": ("major_axis_length", 1), "minor axis": ("minor_axis_length", 1)}
SHAPE = re.compile(r"(?P<compartment>nucleus|cytoplasm|membrane|entire cell)\s+(?P<what>area|major axis|minor axis)"
                   r"(\s+\((?P<unit>[^)]*)\))?", re.I)
# Units inForm writes in brackets -> the position unit they imply.
UNIT_WORDS = {"pixels": "pixels", "microns": "microns", "square microns": "microns", "sq microns": "microns",
              "per megapixel": "pixels", "per square mm": "microns", "um": "microns", "um2": "microns"}
POSITION_UNITS = ("pixels", "microns")


@functools.lru_cache(maxsize=1 << 16)  # the same headers in every table of a folder
def classify(source: str, position_unit: str) -> FeatureSpec:
    """What one inForm measurement column means (``position_unit``: the unit of the export, for shapes whose name
    gives none)."""
    norm = normalise_header(source)
    match = INTENSITY.fullmatch(norm)
    if match and match["marker"].strip().lower() not in SHAPES:
        return FeatureSpec("intensity", STATISTICS[match["statistic"].lower()], "a.u.", source,
                           COMPARTMENTS[match["compartment"].lower()], match["marker"].strip())
    match = SHAPE.fullmatch(norm)
    if match:
        statistic, dimension = SHAPES[match["what"].lower()]
        unit = UNIT_WORDS.get((match["unit"] or "").strip().lower(), position_unit)
        spec_unit = ("um" if unit == "microns" else "px") + ("2" if dimension == 2 else "")
        return FeatureSpec("shape", statistic, spec_unit, source, COMPARTMENTS[match["compartment"].lower()])
    return FeatureSpec.other(source)


@functools.lru_cache(maxsize=1 << 16)  # the same headers in every table of a folder
def position_unit_of(names: tuple[str, ...]) -> str | None:
    """The unit the export's bracketed units imply for ``Cell X Position`` (None: they say none, or both)."""
    found = {UNIT_WORDS[m.lower()] for n in names for m in re.findall(r"\(([^)]*)\)", normalise_header(n))
             if m.lower() in UNIT_WORDS}
    return found.pop() if len(found) == 1 else None


def percent_value(values: pa.ChunkedArray, where: tuple[str, str] = ("", "")) -> np.ndarray:
    """Percentages written as text (``95.00%``, ``0.01 %``, a plain number) as float64 (NaN when missing); a value
    that is none is refused naming ``where`` (file, column) and its line."""
    trimmed = pc.utf8_trim_whitespace(pc.utf8_trim(pc.utf8_trim_whitespace(values), "%"))
    try:
        return pc.cast(trimmed, pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        ok = pc.match_substring_regex(trimmed, r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
        bad = pc.index(pc.fill_null(ok, True), False).as_py()
        raise InputError(f"{where[0]}: line {bad + 2}, column {where[1]!r}: cannot parse {values[bad].as_py()!r} as "
                         "a percentage") from None


@functools.lru_cache(maxsize=1 << 16)  # the same headers in every table of a folder
def text_target(name: str) -> str | None | bool:
    """The cells column of a text column (None: read, not kept), or False when ``name`` is no text column."""
    key = normalise_header(name).lower()
    if key in TEXT_COLUMNS:
        return TEXT_COLUMNS[key]
    if PHENOTYPE.fullmatch(key):
        return other_name(name)
    return False


@dataclass(frozen=True, kw_only=True)
class InformPlan(Plan):
    """An inForm table's plan: the unit of the positions and where it came from, the image column (None: one
    image, named after the file), text columns kept as cells columns and the percentage columns (column -> cells
    column)."""

    position_unit: str
    unit_source: str
    image_column: str | None
    text_targets: dict[str, str]
    percents: dict[str, str]


def plan_export(path: Path, *, pixel_size, position_unit: str | None, encoding: str | None) -> InformPlan:
    """The checked header of the inForm table at ``path`` as a plan; refuses before any parsing a table without a
    pixel size, and one whose position unit neither its headers nor ``position_unit`` say (or where they disagree).
    """
    header = read_header(path, ("\t", ","), TOOL, encoding)
    require_columns(header, TOOL, REQUIRED)
    if pixel_size is None:
        raise InputError(f"{header.path.name}: inForm tables carry no pixel size; pass it in micrometres per pixel: "
                         "read_inform(path, pixel_size=0.5) or `cellspec import inform FILE OUT --pixel-size 0.5` "
                         "(inForm's image resolution, e.g. 0.5 at 20x on Vectra/Polaris)")
    unit, source = _position_unit(header, position_unit)
    targets = {n: text_target(n) for n in header.names}
    text = [n for n, t in targets.items() if t is not False]
    percents = {n: other_name(n) for n in _percent_columns(header) if n not in text}
    _warn_measurements_as_percents(header, percents, unit)
    centroids = [header.find(c) for c in CENTROIDS]
    fixed = {*text, *percents, *centroids}
    matrix = [n for n in header.names if n not in fixed]
    image_column = header.find(IMAGE_COLUMN)
    roles = ColumnRoles(text=[*text, *percents], numbers=centroids, matrix=matrix, group=image_column, nulls=NULLS)
    return InformPlan(header=header, roles=roles, features=tuple(classify(n, unit) for n in matrix),
                      position_unit=unit, unit_source=source, image_column=image_column,
                      text_targets={n: t for n, t in targets.items() if isinstance(t, str)}, percents=percents)


def _position_unit(header: Header, given: str | None) -> tuple[str, str]:
    said = position_unit_of(header.names)
    if given is not None:
        if given not in POSITION_UNITS:
            raise InputError(f"position_unit={given!r}: one of {', '.join(POSITION_UNITS)}")
        if said is not None and said != given:
            raise InputError(f"{header.path.name}: position_unit={given!r} given, but the table's headers are in "
                             f"{said} (e.g. {_unit_example(header, said)!r}); the two unit systems must agree")
        return given, "argument"
    if said is None:
        raise InputError(f"{header.path.name}: the headers do not say whether 'Cell X Position' is in pixels or "
                         "microns (no column names its unit); pass position_unit='pixels' or 'microns' (CLI "
                         "--position-unit), as set in inForm's export")
    return said, f"column units ({_unit_example(header, said)!r})"


def _unit_example(header: Header, unit: str) -> str:
    return next(n for n in header.names if any(UNIT_WORDS.get(m.lower()) == unit
                                               for m in re.findall(r"\(([^)]*)\)", normalise_header(n))))


def _warn_measurements_as_percents(header: Header, percents: dict[str, str], unit: str) -> None:
    """Say so when a column named as a measurement (an intensity or a shape) holds percentages as text: it becomes a
    cells column of percentages, not the feature its name gives, and a reader of the matrix would miss it."""
    for name, target in percents.items():
        feature = classify(name, unit)
        if feature.kind != "other":
            article = "an" if feature.kind[0] in "aeiou" else "a"
            notice(f"{header.path.name}: column {name!r} is named as {article} {feature.kind} measurement but holds "
                   f"percentages written as text; it is read as the cells column {target!r} (the number before the "
                   "per cent sign) and is not in the matrix (provenance parameters['percent_columns'])")


# Bytes of the file whose rows show which columns hold percentages as text.
SAMPLE_BYTES = 1 << 16


def _percent_columns(header: Header) -> list[str]:
    """The columns named as percentages (:data:`PERCENT_COLUMNS`) and those holding percentages as text in the
    first :data:`SAMPLE_BYTES` of the file."""
    named_column = header.find(*PERCENT_COLUMNS)
    named = [n for n in header.names if n == named_column]
    with open(header.path, "rb") as handle:
        data = handle.read(SAMPLE_BYTES)
    end = data.rfind(b"\n")
    if end < 0 or b"%" not in data:  # a percentage written as text holds a per cent sign
        return named
    try:
        table = pacsv.read_csv(io.BytesIO(data[: end + 1]), read_options=read_options(header, use_threads=False),
                               parse_options=pacsv.ParseOptions(delimiter=header.delimiter),
                               convert_options=pacsv.ConvertOptions(
                                   column_types={n: pa.string() for n in header.names}, strings_can_be_null=True))
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return named  # the parse itself names what is wrong, with its line
    # the regular expression only where a per cent sign is (compiling it for every column costs more than the parse)
    found = [n for n in header.names if n in table.column_names
             and pc.any(pc.match_substring(table.column(n), "%")).as_py()
             and pc.any(pc.match_substring_regex(table.column(n), PERCENT)).as_py()]
    return list(dict.fromkeys([*named, *found]))
