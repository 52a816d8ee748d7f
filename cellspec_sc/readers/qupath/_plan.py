"""QuPath's grammar as data, and the plan of one export made from its header line.

QuPath writes one row per object, tab-separated (comma- or semicolon-separated when the file name ends in
``.csv``). Fixed columns identify the object (:data:`TEXT_COLUMNS`, the centroids); every other column is a
measurement whose name says what it is, in one of the four styles QuPath has used: :func:`classify` reads every
one of them into a :class:`~cellspec_sc.readers._features.FeatureSpec`, and :func:`header_style` says which
style an intensity header was written in. :func:`plan_export` checks a header and turns it into a frozen
:class:`QuPathPlan`.

>>> classify("Nucleus: CD3: Mean", calibrated=True)  # doctest: +NORMALIZE_WHITESPACE
FeatureSpec(kind='intensity', statistic='mean', unit='a.u.', source_name='Nucleus: CD3: Mean',
            compartment='nucleus', marker='CD3')
>>> classify("Cell: Area \\u00b5m^2", calibrated=True).unit
'um2'
>>> delimiter(Path("measurements.csv"))  # the header line chooses
(',', ';')
>>> looks_like_numbers(pa.array(["1.5", " -2e3", "NaN", "Infinity", None, "P01"])).tolist()
[True, True, True, True, False, False]
"""

from __future__ import annotations

import functools
import io
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
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
    NotANumber,
    Parsed,
    normalise_header,
    notice,
    other_name,
    read_as_text,
    read_header,
    read_options,
    require_columns,
)
from cellspec_sc.spec import vocabulary

ADAPTER = "qupath"
# Bump whenever the output for the same input changes (spec section 11).
# 1.1.0: "other" ids made unique with their statistic; Latin-1/cp1252 files read; rows of other object
# types may hold text in number columns.
# 1.2.0: derived headers ("Smoothed: 50 µm: ...", "ROI: 2.00 µm per pixel: DAPI: Mean") and summaries of
# quantities ("Nuclei Area µm^2: Mean") are kind other, not intensities of a marker named after them.
# 1.3.0: a column of text that is empty in the first rows (project metadata set only on images further down a
# multi-image export) is kept as text, not refused as a measurement.
ADAPTER_VERSION = "1.3.0"
TOOL = "QuPath"

# -- fixed columns --------------------------------------------------------------------------------------
# Fixed text columns -> cells column (None: read but not kept).
TEXT_COLUMNS = {"image": None, "object id": None, "object type": "object_type", "name": "name",
                "classification": "classification", "class": "classification", "parent": "parent",
                "parent id": "parent_id", "roi": None, "tma core": "tma_core", "missing core": "missing_core"}
CENTROIDS_UM = ("Centroid X µm", "Centroid Y µm")
CENTROIDS_PX = ("Centroid X px", "Centroid Y px")
IDENTITY = ("Image", "Object ID", "Object type", "Classification", "Class", "Name", "Parent", "ROI")
# Groups of alternative column names; a QuPath table has one column of every group.
REQUIRED = ((CENTROIDS_UM[0], CENTROIDS_PX[0]), (CENTROIDS_UM[1], CENTROIDS_PX[1]), IDENTITY)

# -- object types -----------------------------------------------------------------------------------------
# Which rows are cells: the ``Object type`` column (QuPath 0.2+), or in QuPath 0.1 exports, which have none, the
# class name that ``Name`` shows for an object without a name of its own. Annotations, tiles and TMA cores are
# regions of the image, not cells: skipped by default, refused in a 0.1 export, and kept only when
# ``object_types=`` allows them, with a warning.
CELL_TYPES = ("Cell", "Detection")
# QuPath 0.1's class names of the objects that are not cells -> the Object type later versions write.
OLD_CLASS_TYPES = {"PathAnnotationObject": "Annotation", "TMACoreObject": "TMA core", "PathTileObject": "Tile",
                   "PathRootObject": "Root object"}
NOT_CELLS = "annotations, tiles and TMA cores are regions of the image (their areas are whole regions), not cells"

# -- measurement names ------------------------------------------------------------------------------------
# Compartment words (first or second part of a header) -> spec compartment.
COMPARTMENTS = {"nucleus": "nucleus", "cytoplasm": "cytoplasm", "membrane": "membrane", "cell": "cell"}
# Statistic words of object measurements ("Nucleus: CD3: Mean", "CD3: Nucleus: Std.Dev.").
OBJECT_STATISTICS = {"mean": "mean", "median": "median", "min": "min", "max": "max", "std.dev.": "sd",
                     "variance": "variance", "sum": "sum"}
# Statistic words at the end of cell-detection measurements ("Nucleus: DAPI std dev"); "range" has
# no spec statistic and becomes kind other.
DETECTION_STATISTICS = {"mean": "mean", "median": "median", "min": "min", "max": "max", "std dev": "sd",
                        "sum": "sum", "variance": "variance", "range": None}
# Shape names -> (spec statistic, dimension: 0 dimensionless, 1 length, 2 area).
SHAPES = {
    "area": ("area", 2), "perimeter": ("perimeter", 1), "length": ("length", 1),
    "circularity": ("circularity", 0), "solidity": ("solidity", 0), "eccentricity": ("eccentricity", 0),
    "max caliper": ("max_caliper", 1), "min caliper": ("min_caliper", 1),
    "max diameter": ("max_diameter", 1), "min diameter": ("min_diameter", 1),
    "maximum diameter": ("max_diameter", 1), "minimum diameter": ("min_diameter", 1),
}
# Whole-header measurements.
SPECIAL = {
    "nucleus/cell area ratio": FeatureSpec("shape", "nucleus_cell_area_ratio", "1", "", "cell"),
    "detection probability": FeatureSpec("other", "detection_probability", "1", ""),
}
# Unit tokens at the end of a header, after micro-sign normalisation.
UNITS = {"um^2": "um2", "um2": "um2", "px^2": "px2", "px2": "px2", "um": "um", "px": "px"}

PER_PIXEL = re.compile(r"[\d.]+\s*(um|px)\s+per\s+pixel", flags=re.I)


def _unit_split(text: str) -> tuple[str, str | None]:
    match = re.fullmatch(r"(.*?)\s+(um\^2|px\^2|um2|px2|um|px)", text, flags=re.I)
    return (match.group(1), UNITS[match.group(2).lower()]) if match else (text, None)


def _shape(text: str, compartment: str, source: str, calibrated: bool) -> FeatureSpec | None:
    name, unit = _unit_split(text)
    found = SHAPES.get(name.strip().lower())
    if found is None:
        return None
    statistic, dimension = found
    if unit is None:
        unit = "1" if dimension == 0 else ("um" if calibrated else "px") + ("2" if dimension == 2 else "")
    return FeatureSpec("shape", statistic, unit, source, compartment)


def _derived(parts: list[str]) -> bool:
    """Headers QuPath's commands derive from other measurements: "Smoothed: 50 µm: ..." (add smoothed
    features: a weighted mean over the neighbourhood) and "ROI: 2.00 µm per pixel: DAPI: Mean" (add
    intensity features, at a resolution of their own); they measure no compartment of the cell itself.

    >>> _derived(["Smoothed", "50 um", "Nucleus", "CD3", "Mean"]), _derived(["Nucleus", "CD3", "Mean"])
    (True, False)
    """
    return parts[0].lower() == "smoothed" or any(PER_PIXEL.fullmatch(p) for p in parts[:-1])


@functools.lru_cache(maxsize=1 << 16)  # the same headers in every table of a folder
def classify(source: str, *, calibrated: bool) -> FeatureSpec:
    """What one QuPath measurement header means (``calibrated``: the file has micrometre centroids,
    so cell-detection shapes without a unit are in micrometres).

    >>> classify("CD3: Nucleus: Std.Dev.", calibrated=True).statistic
    'sd'
    >>> classify("Nucleus: DAPI range", calibrated=True).kind
    'other'
    """
    norm = normalise_header(source)
    special = SPECIAL.get(norm.lower())
    if special is not None:
        return FeatureSpec(special.kind, special.statistic, special.unit, source, special.compartment)
    parts = [p.strip() for p in norm.split(":")]
    raw_parts = source.split(":")  # marker names keep their own spacing (trimmed later)
    first = COMPARTMENTS.get(parts[0].lower())
    if _derived(parts):
        return FeatureSpec.other(source, _unit_split(norm)[1] or "a.u.")
    if len(parts) == 1:
        return _shape(norm, "cell", source, calibrated) or FeatureSpec.other(source, _unit_split(norm)[1] or "a.u.")
    stat = OBJECT_STATISTICS.get(parts[-1].lower())
    if len(parts) >= 3 and stat:
        second_last = COMPARTMENTS.get(parts[-2].lower())
        if first:  # 0.6+: Nucleus: CD3: Mean
            return FeatureSpec("intensity", stat, "a.u.", source, first, ":".join(raw_parts[1:-1]).strip())
        if second_last:  # <= 0.5: CD3: Nucleus: Mean
            return FeatureSpec("intensity", stat, "a.u.", source, second_last, ":".join(raw_parts[:-2]).strip())
        return FeatureSpec.other(source)  # "A: B: Mean" without a compartment word: no marker we can name
    if len(parts) == 2 and first:
        rest = parts[1]
        shape = _shape(rest, first, source, calibrated)
        if shape is not None:
            return shape
        match = re.fullmatch(r"\s*(.*\S)\s+(mean|median|min|max|std dev|sum|variance|range)\s*",
                             ":".join(raw_parts[1:]), flags=re.I)
        if match:  # cell detection: Nucleus: DAPI mean
            statistic = DETECTION_STATISTICS[match.group(2).lower()]
            if statistic is None:
                return FeatureSpec.other(source)
            return FeatureSpec("intensity", statistic, "a.u.", source, first, match.group(1))
    if len(parts) == 2 and stat:  # a detection without compartments: CD3: Mean
        name, unit = _unit_split(parts[0])
        if unit is not None or "%" in name:  # "Nuclei Area µm^2: Mean": a summary of a quantity, not a marker
            return FeatureSpec.other(source, unit or "a.u.")
        return FeatureSpec("intensity", stat, "a.u.", source, "cell", raw_parts[0].strip())
    return FeatureSpec.other(source, _unit_split(norm)[1] or "a.u.")


def header_style(spec: FeatureSpec) -> str | None:
    """The QuPath naming style of an intensity header (recorded in provenance parameters)."""
    if spec.kind != "intensity":
        return None
    parts = [p.strip().lower() for p in normalise_header(spec.source_name).split(":")]
    if len(parts) == 2:
        return "cell detection (Nucleus: DAPI mean)" if parts[0] in COMPARTMENTS else "no compartment (CD3: Mean)"
    if parts[0] in COMPARTMENTS:
        return "compartment first, QuPath >= 0.6 (Nucleus: CD3: Mean)"
    return "channel first, QuPath <= 0.5 (CD3: Nucleus: Mean)"


# -- the plan ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class QuPathPlan(Plan):
    """A QuPath export's plan: the base plan, plus the centroid columns found and the columns of project metadata
    read as text (column -> cells column)."""

    um_columns: tuple[str | None, str | None]
    px_columns: tuple[str | None, str | None]
    metadata: Mapping[str, str]

    @property
    def has_um(self) -> bool:
        return None not in self.um_columns

    @property
    def has_px(self) -> bool:
        return None not in self.px_columns


def delimiter(path: Path) -> str | tuple[str, ...]:
    """Tab, or for ``.csv`` comma or semicolon (QuPath's export offers both): the header line decides."""
    return (",", ";") if path.name.lower().endswith(".csv") else "\t"


def plan_export(path: Path, *, pixel_size, object_types: Sequence[str] | None, encoding: str | None) -> QuPathPlan:
    """The checked header of the QuPath export at ``path`` as a plan: which columns are text, centroids and
    measurements (with what each measurement means), which rows are kept. Refuses, before any parsing, a file that
    is no QuPath table or whose header alone shows it cannot be read."""
    header = read_header(path, delimiter(path), TOOL, encoding)
    require_columns(header, TOOL, REQUIRED, _missing_advice(header))
    refuse_tma_core_table(header)
    um_cols, px_cols = found_columns(header, CENTROIDS_UM), found_columns(header, CENTROIDS_PX)
    _check_pixel_size_known(header, pixel_size, um_cols, px_cols)
    text = [n for n in header.names if normalise_header(n).lower() in TEXT_COLUMNS]
    centroids = [c for c in (*um_cols, *px_cols) if c is not None]
    fixed = {*text, *centroids}
    matrix = [n for n in header.names if n not in fixed]
    type_column, image_column = header.find("Object type"), header.find("Image")
    keep = (type_column, tuple(object_types)) if type_column is not None and object_types is not None else None
    metadata = metadata_columns(header, named_metadata(matrix), fixed_names=TEXT_COLUMNS.values())
    text, matrix = text + list(metadata), [n for n in matrix if n not in metadata]
    calibrated = None not in um_cols
    roles = ColumnRoles(text=text, numbers=centroids, matrix=matrix, keep=keep,
                        unfiltered=[image_column] if image_column is not None and keep is not None else [],
                        group=image_column)
    return QuPathPlan(header=header, roles=roles, features=tuple(classify(n, calibrated=calibrated) for n in matrix),
                      um_columns=um_cols, px_columns=px_cols, metadata=metadata)


def found_columns(header: Header, names: Sequence[str]) -> tuple[str | None, str | None]:
    """The columns as written that match the pair ``names`` (None where missing)."""
    x, y = (header.find(c) for c in names)
    return x, y


def _missing_advice(header: Header) -> str:
    """What to say, instead of "not a QuPath table", when the centroid columns are missing ("" for that)."""
    centroids_found = any(None not in found_columns(header, c) for c in (CENTROIDS_UM, CENTROIDS_PX))
    if header.find(*IDENTITY) is None or centroids_found:
        return ""
    return ("a QuPath export without centroid columns (the cells' positions): export the measurements again "
            "with 'Centroid X µm' and 'Centroid Y µm' (a script's columnsToInclude leaves them out unless it "
            "lists them)")


def _check_pixel_size_known(header: Header, pixel_size, um_cols, px_cols) -> None:
    """Section 8: without ``pixel_size`` the file MUST have both micrometre and pixel centroids, else stop."""
    has_um, has_px = None not in um_cols, None not in px_cols
    if pixel_size is None and not (has_um and has_px):
        column = um_cols[0] if has_um else px_cols[0]
        what = ("micrometre centroids but no pixel centroids, so the pixel size (images.pixel_size) is unknown"
                if has_um else "pixel centroids and no pixel size")
        raise InputError(f"{header.path.name}: line 1, column {column!r}: the file has {what}; pass the pixel "
                         "size in micrometres per pixel: read_qupath(path, pixel_size=0.5) or `cellspec import "
                         "qupath FILE OUT --pixel-size 0.5` (QuPath shows it as 'Pixel width' in the Image tab)")


def refuse_tma_core_table(header: Header) -> None:
    """A QuPath 0.1 TMA core export (one row per core, with its ``Missing`` flag, no ``Object type``) has no
    cells: say so before its True/False flags are refused as numbers."""
    column = header.find("Missing")
    if column is not None and header.find("Object type") is None:
        raise InputError(f"{header.path.name}: line 1, column {column!r}: a QuPath TMA core table (one row per core, "
                         "with its Missing flag), not cells; export detection measurements instead")


# -- project metadata: columns of text ---------------------------------------------------------------------
# QuPath exports can carry project metadata (``Patient``, ``Stain (metadata)``) beside the measurements, and a
# reader that took every unknown column for a measurement would refuse the file at its first ``P01``. A column
# whose name ends in ``(metadata)`` is text. Another counts as text when the parse failed and, in the first rows
# of the file (those the reader keeps), it holds letters and no value that reads as a number. The column the parse
# failed on is then looked at in every row (it may be empty until an image with metadata comes, far down a
# multi-image export). A column with numbers and text mixed stays a measurement and its first text value is
# refused with line and column, as before.
# Bytes of the file whose rows decide (about 60 rows of 120 columns): a metadata column holds text on every
# row, and a small export must not pay for a big sample.
SAMPLE_BYTES = 1 << 16
NUMBER = r"^\s*[-+]?((\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|[Nn]a[Nn]|[Ii]nf(inity)?)\s*$"


def looks_like_numbers(values: pa.Array) -> np.ndarray:
    """Which values read as numbers (False for missing ones)."""
    return pc.fill_null(pc.match_substring_regex(values, NUMBER), False).to_numpy(zero_copy_only=False)


def named_metadata(candidates: Sequence[str]) -> list[str]:
    """The columns whose names say they are project metadata (``Stain (metadata)``): text, whatever they hold.

    >>> named_metadata(["Nucleus: CD3: Mean", "Stain (metadata)"])
    ['Stain (metadata)']
    """
    return [c for c in candidates if c.rstrip().endswith("(metadata)")]


def text_columns(header: Header, candidates: Sequence[str], keep: tuple[str, Sequence[str]] | None = None
                 ) -> list[str]:
    """Those of ``candidates`` that hold only text in the first :data:`SAMPLE_BYTES` of the file, counting
    only the rows ``keep=(column, values)`` keeps (a reader asks after a parse failed, so a file without
    such columns never pays for the look)."""
    table = _sample(header)
    if table is None:
        return []
    table = _kept(table, keep)
    return [name for name in candidates if name in table.column_names and holds_text(table.column(name))]


def holds_text(values: pa.ChunkedArray) -> bool:
    """Letters and no value that reads as a number (empty values aside): ``"101,25"`` (a decimal comma) is
    no text, so it stays a measurement and is refused.

    >>> holds_text(pa.chunked_array([[None, "", "P01"]])), holds_text(pa.chunked_array([["P01", "2"]]))
    (True, False)
    """
    values = pc.drop_null(values).combine_chunks()
    values = values.filter(pc.not_equal(pc.utf8_trim_whitespace(values), ""))
    return bool(len(values)) and not looks_like_numbers(values).any() and bool(
        pc.any(pc.match_substring_regex(values, r"[A-Za-z]")).as_py())


def _kept(table: pa.Table, keep: tuple[str, Sequence[str]] | None) -> pa.Table:
    """The rows of ``table`` that ``keep=(column, values)`` keeps (all rows: None)."""
    if keep is None or keep[0] not in table.column_names:
        return table
    return table.filter(pc.fill_null(pc.is_in(table.column(keep[0]), value_set=pa.array(list(keep[1]))), False))


def failed_on_text(header: Header, err: InputError, candidates: Sequence[str],
                   keep: tuple[str, Sequence[str]] | None = None) -> list[str]:
    """``[column]`` when ``err`` is a value of one of ``candidates`` that is not a number and that column,
    over every row ``keep`` keeps, holds text (:func:`holds_text`); else ``[]``. Reads only that column (and
    ``keep``'s) as text, so memory is one column of the file."""
    if not isinstance(err, NotANumber) or err.column not in candidates:
        return []
    names = [err.column, *([keep[0]] if keep is not None and keep[0] != err.column else [])]
    try:
        table = read_as_text(header, names)
    except InputError:
        return []  # the parse's own refusal says what is wrong
    return [err.column] if holds_text(_kept(table, keep).column(err.column)) else []


def _sample(header: Header) -> pa.Table | None:
    """The header and the whole lines of the file's first :data:`SAMPLE_BYTES`, every column as text."""
    with open(header.path, "rb") as handle:
        data = handle.read(SAMPLE_BYTES)
    end = data.rfind(b"\n")
    if end < 0:
        return None
    try:
        return pacsv.read_csv(io.BytesIO(data[: end + 1]), read_options=read_options(header, use_threads=False),
                              parse_options=pacsv.ParseOptions(delimiter=header.delimiter),
                              convert_options=pacsv.ConvertOptions(
                                  column_types={n: pa.string() for n in header.names}, strings_can_be_null=True))
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None  # the parse itself names what is wrong, with its line


def parse_finding_text(parse: Callable[[QuPathPlan], Parsed], plan: QuPathPlan) -> tuple[Parsed, QuPathPlan]:
    """``parse(plan)``; if it fails, and :func:`text_columns` finds text among the measurement columns (or
    :func:`failed_on_text` finds the column it failed on is text), those are read as text (cells columns named by
    :func:`metadata_columns`) and the file is parsed again, until it parses or fails on a column that is no text.
    Returns the parse and the plan it used."""
    header, settled, sampled = plan.header, plan, False
    while True:
        try:
            return parse(settled), settled
        except InputError as err:  # looked for only now, so a file without such columns never pays for the look
            roles = settled.roles
            found = [] if sampled else text_columns(header, roles.matrix, roles.keep)
            sampled = True
            found = found or failed_on_text(header, err, roles.matrix, roles.keep)
            if not found:
                raise
        named = metadata_columns(header, found, fixed_names=[*TEXT_COLUMNS.values(), *settled.metadata.values()])
        settled = replace(settled.with_text(found), metadata={**settled.metadata, **named})


def metadata_columns(header: Header, names: Sequence[str], *, fixed_names) -> dict[str, str]:
    """The cells column (snake_case, never a column of the spec's cells table nor one of ``fixed_names``) for
    each text column ``names``, said in a warning.

    >>> import warnings
    >>> from pathlib import Path
    >>> with warnings.catch_warnings(record=True):
    ...     metadata_columns(Header(Path("m.tsv"), "\\t", ("Patient", "x")), ["Patient", "x"], fixed_names=["name"])
    {'Patient': 'patient', 'x': 'x_text'}
    """
    taken = {*(n for n in fixed_names if n), *(c.name for c in vocabulary().columns("cells") if not c.is_pattern)}
    out = {}
    for name in names:
        target = other_name(name)
        while target in taken:
            target += "_text"
        out[name] = target
        taken.add(target)
    if out:
        notice(f"{header.path.name}: column(s) {', '.join(map(repr, out))} hold text, not measurements (project "
               f"metadata?); kept as cells column(s) {', '.join(out.values())}")
    return out
