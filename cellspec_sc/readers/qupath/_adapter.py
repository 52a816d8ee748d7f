"""Read QuPath "Export measurements" tables of cells or detections (spec sections 3-8): the adapter.

:func:`~cellspec_sc.readers.qupath._plan.plan_export` makes the plan from the header line; the adapter parses the
file as planned (reading as text the columns of project metadata it finds), refuses or warns about rows that are
not cells, and builds cells, images and channels from the kept rows.

Coordinates: QuPath ROI coordinates are continuous pixel coordinates with 0 at the top-left corner of
the full-resolution image, and ``Centroid X µm`` is ``centroid_x_px * pixel width`` (no half-pixel
shift), which is the spec's frame as it is. See ``docs/readers.md``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc._background import in_background
from cellspec_sc.errors import InputError
from cellspec_sc.model import arrow_code_array
from cellspec_sc.readers._features import channels_frame, feature_positions, intensity_channels
from cellspec_sc.readers._pipeline import Tables, ToolAdapter
from cellspec_sc.readers._table import (
    SEPARATORS,
    Header,
    Parsed,
    arrow_objects,
    check_finite_centroids,
    check_missing_text,
    check_unique_ids,
    constant_strings,
    first_line_where,
    has_missing_text,
    ids_are_unique,
    normalise_header,
    notice,
    pixel_size_for,
    positive_area,
    read_as_text,
    string_column,
)
from cellspec_sc.readers.qupath._plan import (
    ADAPTER,
    ADAPTER_VERSION,
    CELL_TYPES,
    NOT_CELLS,
    OLD_CLASS_TYPES,
    TEXT_COLUMNS,
    TOOL,
    QuPathPlan,
    header_style,
    parse_finding_text,
    plan_export,
)


class QuPathAdapter(ToolAdapter):
    """QuPath's reader: object-type filtering, image and object ids, and micrometre or pixel centroids (and the
    pixel size derived from both)."""

    name, version, tool, producer = ADAPTER, ADAPTER_VERSION, TOOL, TOOL
    reads_table_folders = True  # a script's export: one table per image

    def __init__(self, *, pixel_size=None, image_id=None, sample_id=None, marker_map=None,
                 object_types: Sequence[str] | None = ("Cell", "Detection"), encoding: str | None = None) -> None:
        super().__init__(marker_map, encoding)
        self.pixel_size, self.image_id, self.sample_id = pixel_size, image_id, sample_id
        self.object_types = object_types

    def plan(self, path: Path) -> QuPathPlan:
        """The plan of the export at ``path`` (see :func:`~cellspec_sc.readers.qupath._plan.plan_export`)."""
        return plan_export(path, pixel_size=self.pixel_size, object_types=self.object_types, encoding=self.encoding)

    def parse(self, plan: QuPathPlan) -> tuple[Parsed, QuPathPlan]:
        """The rows of the wanted object types, reading as text the measurement columns found to hold text; refuses
        a file without such rows and the regions of a QuPath 0.1 export, and warns about kept rows that are not
        cells."""
        parsed, plan = parse_finding_text(lambda settled: super(QuPathAdapter, self).parse(settled)[0], plan)
        header = plan.header
        if parsed.n == 0:
            raise no_kept_rows(header, plan.roles.keep[0], self.object_types)
        check_old_object_names(header, parsed, self.object_types)
        if self.object_types is None or not set(self.object_types) <= set(CELL_TYPES):  # else only cells are kept
            warn_not_cells(header, parsed)
        return parsed, plan

    def tables(self, plan: QuPathPlan, parsed: Parsed, dictionary: pd.DataFrame, applied: Mapping[str, str]
               ) -> Tables:
        """Cells (ids checked on another core), images with their pixel sizes, channels and parameters."""
        header = plan.header
        path = header.path
        um_cols, px_cols, has_um, has_px = plan.um_columns, plan.px_columns, plan.has_um, plan.has_px
        images = _image_ids(header, parsed, self.image_id)  # Arrow strings, one per kept row
        image_order = [str(i) for i in pc.unique(images).to_pylist()]  # in order of first appearance
        image_index = pc.index_in(images, value_set=pa.array(image_order, type=pa.string())).to_numpy()
        cell_ids, id_source = _cell_ids(header, parsed, images)
        cell_column = string_column(cell_ids)  # one Arrow chunk: hashed in about half the time of the parse's many
        # encoded once (validation reuses the codes) and checked on another core, while the rest of the tables,
        # and the object are built
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
        cells.update({target: string_column(parsed.arrow(name)) for name, target in plan.metadata.items()})

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
            "cell_id_source": id_source, "text_columns": dict(plan.metadata),
            "header_styles": sorted({st for st in map(header_style, plan.features) if st}),
            "ignored_columns": [n for n in text_cols if TEXT_COLUMNS[normalise_header(n).lower()] is None
                                and n not in (image_column, header.find("Object ID"))],
        }
        return Tables(cells=cells, images=images_table, channels=channels_frame(image_order, channel_names, markers),
                      parameters=parameters, cell_codes=encoding,
                      image_codes=(image_index.astype(np.int64, copy=False), image_order))



def _encoded_unique_ids(cell_ids: pa.Array, image_index: np.ndarray, refuse: Callable[[], None]) -> np.ndarray:
    """The ids' dense codes (:func:`arrow_code_array`) once (image, id) is known to be unique; else ``refuse()``
    raises the refusal naming the lines (:func:`check_unique_ids`, whose slow inputs are made only then)."""
    codes = arrow_code_array(cell_ids)
    if not ids_are_unique(image_index, codes):
        refuse()
    return codes


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
        every = (arrow_objects(images) if parsed.rows is None
                 else np.full(parsed.rows_read, images[0].as_py(), dtype=object))
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
    # plan_export refused a file without both centroid kinds and without pixel_size
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


# -- which rows are cells ---------------------------------------------------------------------------------
def no_kept_rows(header: Header, column: str, object_types: Sequence[str]) -> InputError:
    """The refusal of an export with no row of the wanted object types, naming the types it has."""
    table = read_as_text(header, [column])
    found = ", ".join(sorted(str(v) for v in pc.unique(table.column(column)).to_pylist() if v is not None)[:6])
    return InputError(f"{header.path.name}: no rows with Object type in {list(object_types)} (found: {found}); "
                      "export cell or detection measurements, or pass object_types=")


def warn_not_cells(header: Header, parsed: Parsed) -> None:
    """Kept rows of other object types (annotations: whole regions; tiles) are not cells: say so."""
    column = header.find("Object type")
    if column is None:
        return
    counts = pc.value_counts(parsed.arrow(column)).to_pylist()
    other = {str(c["values"]): c["counts"] for c in counts if c["values"] not in CELL_TYPES}
    if other:
        found = ", ".join(f"{n} {t!r}" for t, n in other.items())
        notice(f"{header.path.name}: column {column!r}: {found} row(s) kept as cells because object_types allows "
               f"them; {NOT_CELLS}")


def check_old_object_names(header: Header, parsed: Parsed, object_types: Sequence[str] | None) -> None:
    """In a QuPath 0.1 export (no ``Object type``), rows whose ``Name`` is the class name of an annotation,
    tile or TMA core are refused unless ``object_types`` allows their type; then they are kept with a warning."""
    column = header.find("Name")
    if column is None or header.find("Object type") is not None:
        return
    names = parsed.arrow(column)
    regions = pc.fill_null(pc.is_in(names, value_set=pa.array(list(OLD_CLASS_TYPES))), False).to_numpy(
        zero_copy_only=False)
    if not regions.any():
        return
    types = Counter(OLD_CLASS_TYPES[str(n)] for n in pc.filter(names, pa.array(regions)).to_pylist())
    found = ", ".join(f"{n} {t!r}" for t, n in types.items())
    if object_types is None or set(types) <= set(object_types):
        notice(f"{header.path.name}: column {column!r}: {found} row(s) of a QuPath 0.1 export kept as cells because "
               f"object_types allows them; {NOT_CELLS}")
        return
    first = int(np.flatnonzero(regions)[0])
    raise InputError(f"{header.path.name}: line {first_line_where(regions, parsed.rows)}, column {column!r}: "
                     f"{names[first].as_py()!r} marks a QuPath 0.1 object that is not a cell (the export has no "
                     f"'Object type' column; {found} row(s)); {NOT_CELLS}: export detection measurements, or pass "
                     "object_types=None (CLI --all-objects) to keep them")
