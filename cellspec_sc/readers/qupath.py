"""Read QuPath "Export measurements" tables of cells or detections (spec sections 3-8).

QuPath writes one row per object, tab-separated (comma-separated when the file name ends in ``.csv``).
Fixed columns identify the object (``Image``, ``Object ID``, ``Object type``, ``Classification`` or
``Class``, ``Parent``, ``Centroid X µm`` ...); every other column is a measurement whose name says what
it is, in one of the styles QuPath has used:

=========================  ==========================================  ===========================
style                      example                                     written by
=========================  ==========================================  ===========================
cell detection             ``Nucleus: DAPI mean``, ``Cell: Area``       cell detection (<= 0.4 names)
channel first              ``CD3: Nucleus: Mean``                      object measurements <= 0.5
compartment first          ``Nucleus: CD3: Mean``                      object measurements >= 0.6
shape                      ``Cell: Area µm^2``, ``Nucleus: Length µm``  shape features (>= 0.4)
=========================  ==========================================  ===========================

Coordinates: QuPath ROI coordinates are continuous pixel coordinates with 0 at the top-left corner of
the full-resolution image, and ``Centroid X µm`` is ``centroid_x_px * pixel width`` (no half-pixel
shift), which is the spec's frame as it is. What each measurement name means is read by
:mod:`cellspec_sc.readers.qupath_headers`. See ``docs/readers.md``.

>>> QuPathAdapter(pixel_size=0.5).delimiter(Path("measurements.csv"))  # the header line chooses
(',', ';')
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc.errors import InputError
from cellspec_sc.model import CellSpec, arrow_code_array
from cellspec_sc.readers.features import FeatureSpec, channels_frame, feature_positions, intensity_channels
from cellspec_sc.readers.headers import SEPARATORS, Header, normalise_header
from cellspec_sc.readers.parsing import Parsed
from cellspec_sc.readers.pipeline import ColumnRoles, Tables, ToolAdapter, in_background, read_export
from cellspec_sc.readers.qupath_headers import classify, header_style
from cellspec_sc.readers.qupath_objects import (CELL_TYPES, check_old_object_names, no_kept_rows, refuse_tma_core_table,
                                                warn_not_cells)
from cellspec_sc.readers.text_columns import metadata_columns, named_metadata, parse_finding_text
from cellspec_sc.readers.values import (arrow_objects, check_finite_centroids, check_missing_text, check_unique_ids,
                                        constant_strings, first_line_where, has_missing_text, ids_are_unique,
                                        pixel_size_for, positive_area, string_column)

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

# Fixed text columns -> cells column (None: read but not kept).
TEXT_COLUMNS = {"image": None, "object id": None, "object type": "object_type", "name": "name",
                "classification": "classification", "class": "classification", "parent": "parent",
                "parent id": "parent_id", "roi": None, "tma core": "tma_core", "missing core": "missing_core"}
CENTROIDS_UM = ("Centroid X µm", "Centroid Y µm")
CENTROIDS_PX = ("Centroid X px", "Centroid Y px")
IDENTITY = ("Image", "Object ID", "Object type", "Classification", "Class", "Name", "Parent", "ROI")


# -- adapter ---------------------------------------------------------------------------------------
class QuPathAdapter(ToolAdapter):
    """QuPath's grammar: the tables above, plus object-type filtering, image and object ids, and
    micrometre or pixel centroids (and the pixel size derived from both)."""

    name, version, tool, producer = ADAPTER, ADAPTER_VERSION, TOOL, TOOL
    required = ((CENTROIDS_UM[0], CENTROIDS_PX[0]), (CENTROIDS_UM[1], CENTROIDS_PX[1]), IDENTITY)

    def __init__(self, *, pixel_size=None, image_id=None, sample_id=None, marker_map=None,
                 object_types: Sequence[str] | None = ("Cell", "Detection"), encoding: str | None = None) -> None:
        super().__init__(marker_map, encoding)
        self.pixel_size, self.image_id, self.sample_id = pixel_size, image_id, sample_id
        self.object_types = object_types

    def delimiter(self, path: Path) -> str | tuple[str, ...]:
        """Tab, or for ``.csv`` comma or semicolon (QuPath's export offers both): the header line decides."""
        return (",", ";") if path.name.lower().endswith(".csv") else "\t"

    def missing_advice(self, header: Header) -> str:
        if header.find(*IDENTITY) is None or any(None not in _found(header, c) for c in (CENTROIDS_UM, CENTROIDS_PX)):
            return ""
        return ("a QuPath export without centroid columns (the cells' positions): export the measurements again "
                "with 'Centroid X µm' and 'Centroid Y µm' (a script's columnsToInclude leaves them out unless it "
                "lists them)")

    def check_header(self, header: Header) -> None:
        refuse_tma_core_table(header)
        um_cols, px_cols = _found(header, CENTROIDS_UM), _found(header, CENTROIDS_PX)
        has_um, has_px = None not in um_cols, None not in px_cols
        if self.pixel_size is None and not (has_um and has_px):  # section 8: MUST stop
            column = um_cols[0] if has_um else px_cols[0]
            what = ("micrometre centroids but no pixel centroids, so the pixel size (images.pixel_size) is unknown"
                    if has_um else "pixel centroids and no pixel size")
            raise InputError(f"{header.path.name}: line 1, column {column!r}: the file has {what}; pass the pixel "
                             "size in micrometres per pixel: read_qupath(path, pixel_size=0.5) or `cellspec import "
                             "qupath FILE OUT --pixel-size 0.5` (QuPath shows it as 'Pixel width' in the Image tab)")

    def roles(self, header: Header) -> ColumnRoles:
        text = [n for n in header.names if normalise_header(n).lower() in TEXT_COLUMNS]
        centroids = [c for c in (*_found(header, CENTROIDS_UM), *_found(header, CENTROIDS_PX)) if c is not None]
        fixed = {*text, *centroids}
        matrix = [n for n in header.names if n not in fixed]
        type_column, image_column = header.find("Object type"), header.find("Image")
        keep = None
        if type_column is not None and self.object_types is not None:
            keep = (type_column, tuple(self.object_types))
        self.metadata = metadata_columns(header, named_metadata(matrix), fixed_names=TEXT_COLUMNS.values())
        text, matrix = text + list(self.metadata), [n for n in matrix if n not in self.metadata]
        self.parse_roles = None
        return ColumnRoles(text=text, numbers=centroids, matrix=matrix, keep=keep,
                           unfiltered=[image_column] if image_column is not None and keep is not None else [],
                           group=image_column)

    def parse(self, header: Header, roles: ColumnRoles) -> Parsed:
        parsed, self.parse_roles = parse_finding_text(lambda r: super(QuPathAdapter, self).parse(header, r), header,
                                                      roles, self.metadata, fixed_names=TEXT_COLUMNS.values())
        roles = self.parse_roles or roles
        if parsed.n == 0:
            raise no_kept_rows(header, roles.keep[0], self.object_types)
        check_old_object_names(header, parsed, self.object_types)
        if self.object_types is None or not set(self.object_types) <= set(CELL_TYPES):  # else only cells are kept
            warn_not_cells(header, parsed)
        return parsed

    def settled_roles(self, roles: ColumnRoles) -> ColumnRoles:
        return self.parse_roles or roles

    def classify(self, header: Header, roles: ColumnRoles) -> list[FeatureSpec]:
        calibrated = None not in _found(header, CENTROIDS_UM)
        return [classify(n, calibrated=calibrated) for n in roles.matrix]

    def tables(self, header, parsed, dictionary, applied, specs) -> Tables:
        path = header.path
        um_cols, px_cols = _found(header, CENTROIDS_UM), _found(header, CENTROIDS_PX)
        has_um, has_px = None not in um_cols, None not in px_cols
        images = _image_ids(header, parsed, self.image_id)  # Arrow strings, one per kept row
        image_order = [str(i) for i in pc.unique(images).to_pylist()]  # in order of first appearance
        image_index = pc.index_in(images, value_set=pa.array(image_order, type=pa.string())).to_numpy()
        cell_ids, id_source = _cell_ids(header, parsed, images)
        cell_column = string_column(cell_ids)  # one Arrow chunk: hashed in about half the time of the parse's many
        # encoded once (validation reuses the codes) and checked on another core, while the rest of the tables,
        # the object and most of its validation are built
        encoding = in_background(_encoded_unique_ids, pa.array(cell_column), image_index, lambda: check_unique_ids(
            path, arrow_objects(images), arrow_objects(cell_ids), id_source, parsed.rows))
        sizes, size_source = _pixel_sizes(header, parsed, images, image_order, self.pixel_size, um_cols, px_cols)
        per_row_size = np.array([sizes[i] for i in image_order], dtype=np.float64)[image_index]
        cells = {"cell_id": cell_column, "image_id": string_column(images)}
        samples = {i: (self.sample_id if self.sample_id is not None else i) for i in image_order}
        cells["sample_id"] = string_column(pa.array([samples[i] for i in image_order],
                                                    type=pa.string()).take(image_index))
        x, y, x_px, y_px = _centroids(header, parsed, um_cols, px_cols, has_um, has_px, per_row_size)
        cells.update({"x": x, "y": y})
        area = _cell_area(dictionary, parsed.matrix, per_row_size)
        if area is not None:
            cells["area"] = area
        if has_px:
            cells.update({"x_px": x_px, "y_px": y_px})
        cells.update(_extra_text_columns(header, parsed))
        cells.update({target: string_column(parsed.arrow(name)) for name, target in self.metadata.items()})

        image_column = header.find("Image")
        channel_names, markers = intensity_channels(dictionary, applied)
        source_images = _source_images(parsed, image_column, image_index, image_order)
        images_table = {"image_id": image_order, "sample_id": [samples[i] for i in image_order],
                        "pixel_size": [sizes[i] for i in image_order]}
        if source_images is not None:
            images_table["source_image"] = source_images
        text_cols = [n for n in header.names if normalise_header(n).lower() in TEXT_COLUMNS]
        parameters = {
            "pixel_size": {i: sizes[i] for i in image_order}, "pixel_size_source": size_source,
            "image_id": self.image_id, "sample_id": self.sample_id, "marker_map": dict(self.marker_map),
            "object_types": None if self.object_types is None else list(self.object_types),
            "delimiter": SEPARATORS[header.delimiter],
            "centroids": [c for c in (*um_cols, *px_cols) if c is not None],
            "cell_id_source": id_source, "text_columns": dict(self.metadata),
            "header_styles": sorted({st for st in map(header_style, specs) if st}),
            "ignored_columns": [n for n in text_cols if TEXT_COLUMNS[normalise_header(n).lower()] is None
                                and n not in (image_column, header.find("Object ID"))],
        }
        return Tables(cells=cells, images=images_table, channels=channels_frame(image_order, channel_names, markers),
                      parameters=parameters, cell_codes=encoding,
                      image_codes=(image_index.astype(np.int64, copy=False), image_order))


def read_qupath(
    path: str | os.PathLike,
    *,
    pixel_size: float | Mapping[str, float] | None = None,
    image_id: str | None = None,
    sample_id: str | None = None,
    marker_map: Mapping[str, str] | None = None,
    object_types: Sequence[str] | None = ("Cell", "Detection"),
    encoding: str | None = None,
) -> CellSpec:
    """Read a QuPath measurement export (TSV, or CSV when the name ends in ``.csv``) into a CellSpec.

    ``pixel_size`` (micrometres per pixel, or ``{image: size}``) is needed unless the file has both
    micrometre and pixel centroids, from which it is derived. ``image_id`` renames the single image of
    the file (default: the ``Image`` column, else the file name). ``sample_id`` defaults to the image
    id. ``marker_map`` renames markers (the original is kept in ``marker_source``). Rows whose
    ``Object type`` is not in ``object_types`` are skipped (``None`` keeps every row); kept rows that
    are not cells or detections (annotations, tiles) give a :class:`~cellspec_sc.readers.notices.ReaderWarning`.
    ``encoding`` defaults to UTF-8, or the Windows code page (cp1252) with a warning when the file is
    not UTF-8.

    >>> import cellspec_sc as cs
    >>> x = cs.read_qupath("measurements.tsv", pixel_size=0.5)  # doctest: +SKIP
    """
    adapter = QuPathAdapter(pixel_size=pixel_size, image_id=image_id, sample_id=sample_id, marker_map=marker_map,
                            object_types=object_types, encoding=encoding)
    return read_export(adapter, path)


def _encoded_unique_ids(cell_ids: pa.Array, image_index: np.ndarray, refuse: Callable[[], None]) -> np.ndarray:
    """The ids' dense codes (:func:`arrow_code_array`) once (image, id) is known to be unique; else ``refuse()``
    raises the refusal naming the lines (:func:`check_unique_ids`, whose slow inputs are made only then)."""
    codes = arrow_code_array(cell_ids)
    if not ids_are_unique(image_index, codes):
        refuse()
    return codes


def _found(header: Header, names: Sequence[str]) -> list[str | None]:
    return [header.find(c) for c in names]

def _image_ids(header: Header, parsed: Parsed, image_id: str | None) -> np.ndarray:
    column = header.find("Image")
    n, rows = parsed.n, parsed.rows
    if column is None:
        name = image_id if image_id is not None else _stem(header.path)
        return constant_strings(name, n)
    values = parsed.arrow(column)
    if has_missing_text(values):
        check_missing_text(header.path, parsed.text(column), column, rows)
    if image_id is not None:
        distinct = pc.unique(values).to_pylist()
        if len(distinct) > 1:
            raise InputError(f"{header.path.name}: image_id={image_id!r} given, but column {column!r} names "
                             f"{len(distinct)} images ({', '.join(map(repr, distinct[:4]))}); leave image_id unset")
        return constant_strings(image_id, n)
    return values


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".tsv", ".csv", ".txt"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _cell_ids(header: Header, parsed: Parsed, images: pa.ChunkedArray) -> tuple[pa.ChunkedArray | pa.Array, str]:
    column = header.find("Object ID")
    if column is not None:
        values = parsed.arrow(column)
        if has_missing_text(values):
            check_missing_text(header.path, parsed.text(column), column, parsed.rows)
        return values, column
    # No Object ID (QuPath <= 0.3): the 1-based position of the row among the rows of its image, counted
    # over the whole file (before the object-type filter), so ids do not change with object_types.
    image_column = header.find("Image")
    if parsed.rows is None or image_column is None:
        every = arrow_objects(images) if parsed.rows is None else np.full(parsed.rows_read, images[0].as_py(), dtype=object)
    else:
        whole = parsed.whole(image_column)
        every = np.where(pd.isna(whole), "", whole).astype(object)
    position = pd.Series(every, dtype=object).groupby(every, sort=False).cumcount().to_numpy() + 1
    ids = position.astype(str).astype(object)
    return pa.array(ids if parsed.rows is None else ids[parsed.rows], type=pa.string()), "row number within image"


def _pixel_sizes(header: Header, parsed: Parsed, images, image_order, pixel_size, um_cols, px_cols
                 ) -> tuple[dict[str, float], str]:
    given = pixel_size_for(image_order, pixel_size)
    if given is not None:
        return given, "argument"
    # QuPathAdapter.check_header refused a file without both centroid kinds and without pixel_size
    return _derived_pixel_sizes(header.path, parsed, images, image_order, um_cols, px_cols), \
        "derived from micrometre and pixel centroids"


def _derived_pixel_sizes(path: Path, parsed: Parsed, images, image_order, um_cols, px_cols) -> dict[str, float]:
    um = np.concatenate([parsed.number(c) for c in um_cols])
    px = np.concatenate([parsed.number(c) for c in px_cols])
    images = arrow_objects(images)
    both = np.concatenate([images, images])
    ok = np.isfinite(um) & np.isfinite(px)
    frame = pd.DataFrame({"image": both[ok], "num": um[ok] * px[ok], "den": px[ok] * px[ok]})
    sums = frame.groupby("image", sort=False)[["num", "den"]].sum()
    slope = (sums["num"] / sums["den"]).to_dict()  # least-squares slope of micrometres on pixels
    sizes = {i: float(slope.get(i, np.nan)) for i in image_order}
    bad = [i for i, v in sizes.items() if not (np.isfinite(v) and v > 0)]
    if bad:
        raise InputError(f"{path.name}: cannot derive the pixel size of image {bad[0]!r} from its micrometre and "
                         "pixel centroids; pass pixel_size= (micrometres per pixel)")
    return sizes


def _centroids(header: Header, parsed: Parsed, um_cols, px_cols, has_um, has_px, per_row_size):
    path, rows = header.path, parsed.rows
    x_px = y_px = None
    if has_px:
        x_px, y_px = (parsed.number(c) for c in px_cols)
    if has_um:
        x, y = (parsed.number(c) for c in um_cols)
        for values, column in ((x, um_cols[0]), (y, um_cols[1])):
            check_finite_centroids(path, values, column, rows)
        if has_px:
            for um, px, ucol, pcol in ((x, x_px, um_cols[0], px_cols[0]), (y, y_px, um_cols[1], px_cols[1])):
                _check_agreement(path, um, px, per_row_size, ucol, pcol, rows)
        return x, y, x_px, y_px
    for values, column in ((x_px, px_cols[0]), (y_px, px_cols[1])):
        check_finite_centroids(path, values, column, rows)
    # QuPath pixel coordinates are continuous with 0 at the image corner: no half-pixel shift.
    return x_px * per_row_size, y_px * per_row_size, x_px, y_px


def _check_agreement(path: Path, um, px, size, um_column, px_column, rows) -> None:
    """Section 8: abs(x - x_px * pixel_size) <= 0.5 * pixel_size, else stop."""
    bad = ~(np.abs(um - px * size) <= 0.5 * size) & np.isfinite(px)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        implied = float(um[pos]) / float(px[pos]) if px[pos] else float("nan")
        raise InputError(f"{path.name}: line {first_line_where(bad, rows)}, column {um_column!r}: {float(um[pos])!r} "
                         f"disagrees with column {px_column!r} = {float(px[pos])!r} x pixel size {float(size[pos])!r} "
                         f"by more than half a pixel ({int(bad.sum())} row(s)); pass the pixel size the export was "
                         f"made with (this row implies {implied:.6g}): pixel_size={implied:.6g} or --pixel-size "
                         f"{implied:.6g}, or leave it unset to derive it from both centroid columns")


def _cell_area(dictionary: pd.DataFrame, matrix: np.ndarray, per_row_size: np.ndarray) -> np.ndarray | None:
    """Whole-cell area in um2 for cells.area (the measurement itself stays raw)."""
    hit = feature_positions(dictionary, kind="shape", compartment="cell", statistic="area")
    if not hit:
        return None
    j = hit[0]
    unit = dictionary["unit"].iloc[j]
    values = matrix[:, j]
    if unit == "um2":
        return positive_area(values)
    if unit == "px2":
        return positive_area(values * per_row_size * per_row_size)
    return None


def _extra_text_columns(header: Header, parsed: Parsed) -> dict[str, np.ndarray]:
    out = {}
    for name in header.names:
        target = TEXT_COLUMNS.get(normalise_header(name).lower())
        if target is None or target in out:
            continue
        values = parsed.arrow(name)
        if target in ("object_type", "classification", "parent") or values.null_count < len(values):
            out[target] = string_column(values)
    return out


def _source_images(parsed: Parsed, column, image_index: np.ndarray, image_order) -> list[str] | None:
    if column is None:
        return None
    # The Image value on the first row of each image (never missing: _image_ids checked it). The codes are in order
    # of first appearance, so image k first appears where the running largest code becomes k (no sort).
    highest = np.maximum.accumulate(image_index)
    first_rows = np.flatnonzero(np.diff(highest, prepend=-1) > 0)
    values = parsed.arrow(column)
    first = [values[int(row)].as_py() for row in first_rows]  # a take would join the parse's chunks first
    return [Path(str(first[k]).replace("\\", "/")).name for k in range(len(image_order))]
