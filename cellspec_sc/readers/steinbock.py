"""Read a steinbock (imaging mass cytometry) output folder into a CellSpec.

steinbock writes one CSV per image and kind of measurement, all indexed by the mask label ``Object``:

==========================  ===================================================================
file                        columns
==========================  ===================================================================
``panel.csv``               ``channel`` (metal tag), ``name`` (target), optional ``keep`` (0/1)
``images.csv``              ``image`` (``<stem>.tiff``), ``width_px``, ``height_px``, ... and for
                            IMC ``acquisition_width_um``, ``acquisition_height_um``
``intensities/<stem>.csv``  ``Object``, one column per kept panel ``name`` (mean by default)
``regionprops/<stem>.csv``  ``Object``, ``area``, ``centroid-0``, ``centroid-1``,
                            ``major_axis_length``, ``minor_axis_length``, ``eccentricity`` ...
``neighbors/<stem>.csv``    ``Object``, ``Neighbor``, ``Distance`` (each undirected edge twice)
==========================  ===================================================================

Coordinates: ``centroid-0`` and ``centroid-1`` are scikit-image's ``regionprops`` centroid, the mean
row and column index of the label's pixels, so ``centroid-0`` is y, ``centroid-1`` is x, and the
centre of pixel ``i`` is at ``i``; in the spec's frame it is at ``i + 0.5``, hence
``x = (centroid-1 + 0.5) * pixel_size``. The pixel size is ``acquisition_width_um / width_px`` from
``images.csv`` (IMC: about 1 um), or ``pixel_size=``. See ``docs/readers.md``.

>>> image_stem("Patient1_001.tiff")
'Patient1_001'
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from cellspec_sc.errors import InputError
from cellspec_sc.model.cellspec import CellSpec
from cellspec_sc.model.provenance import input_record
from cellspec_sc.readers.features import (
    SKIMAGE_REGIONPROPS,
    FeatureSpec,
    build_dictionary,
    channels_frame,
    clean_marker,
)
from cellspec_sc.readers.headers import Header, read_header, require_columns
from cellspec_sc.readers.parsing import Parsed, read_options
from cellspec_sc.readers.pipeline import ColumnRoles, Tables, ToolAdapter, assemble
from cellspec_sc.readers.values import (
    check_finite_centroids,
    check_missing_text,
    check_unique_ids,
    pixel_size_for,
    positive_area,
)
from cellspec_sc.spec.types import canonical_frame
from cellspec_sc.spec.vocabulary import vocabulary

ADAPTER = "steinbock"
# Bump whenever the output for the same input changes (spec section 11).
ADAPTER_VERSION = "1.0.0"
TOOL = "steinbock"

OBJECT = "Object"
CENTROIDS = ("centroid-1", "centroid-0")  # (x, y): scikit-image's centroid is (row, column)
NEIGHBOR_COLUMNS = ("Object", "Neighbor", "Distance")
FOLDERS = ("intensities", "regionprops", "neighbors")
# steinbock measure intensities --aggr <numpy function> -> spec statistic (the files do not say which).
AGGREGATIONS = {"mean": "mean", "median": "median", "sum": "sum", "min": "min", "max": "max", "std": "sd",
                "var": "variance"}


def image_stem(name: str) -> str:
    """The file stem steinbock uses for an image's tables (``images.csv`` names the ``.tiff``)."""
    for suffix in (".ome.tiff", ".ome.tif", ".tiff", ".tif"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


@dataclass(frozen=True)
class Panel:
    """The kept channels of ``panel.csv``: metal tags and target names, in channel order."""

    channels: list[str]
    names: list[str]


def read_panel(path: Path, encoding: str | None = None) -> Panel:
    """Kept channels of a steinbock ``panel.csv`` (rows with ``keep`` 0 are left out)."""
    header = read_header(path, ",", "steinbock panel.csv", encoding)
    require_columns(header, "steinbock panel.csv", [("channel",), ("name",)])
    table = pacsv.read_csv(path, read_options=read_options(header), convert_options=pacsv.ConvertOptions(
        column_types={n: pa.string() for n in header.names}, strings_can_be_null=True))
    keep = np.ones(table.num_rows, dtype=bool)
    if "keep" in header.names:
        flags = table.column("keep").to_pylist()
        bad = [i for i, v in enumerate(flags) if (v or "").strip() not in ("0", "1", "True", "False", "true", "false")]
        if bad:
            raise InputError(f"{path.name}: line {bad[0] + 2}, column 'keep': expected 0 or 1, got {flags[bad[0]]!r}")
        keep = np.array([(v or "").strip() in ("1", "True", "true") for v in flags])
    channels = np.asarray(table.column("channel").to_pylist(), dtype=object)
    names = np.asarray(table.column("name").to_pylist(), dtype=object)
    rows = np.flatnonzero(keep)
    check_missing_text(path, channels[rows], "channel", rows)
    check_missing_text(path, names[rows], "name", rows)
    return Panel([str(c).strip() for c in channels[rows]], [str(n).strip() for n in names[rows]])


class SteinbockAdapter(ToolAdapter):
    """steinbock's grammar: panel names as markers, scikit-image regionprops as shapes, centroids in pixels
    with the pixel-centre convention, one pair of tables per image joined on ``Object``."""

    name, version, tool, producer = ADAPTER, ADAPTER_VERSION, TOOL, "steinbock"
    required = ((OBJECT,),)

    def __init__(self, *, pixel_size=None, sample_id=None, marker_map=None, aggregation: str = "mean",
                 neighbors: bool = True, neighbor_method: str = "mask_touching", encoding: str | None = None) -> None:
        super().__init__(marker_map, encoding)
        if aggregation not in AGGREGATIONS:
            raise InputError(f"aggregation={aggregation!r}: steinbock's --aggr is one of {', '.join(AGGREGATIONS)}")
        if neighbor_method not in vocabulary().adjacency_methods:
            raise InputError(f"neighbor_method={neighbor_method!r}: one of "
                             f"{', '.join(vocabulary().adjacency_methods)} (spec section 7)")
        self.pixel_size, self.sample_id, self.aggregation = pixel_size, sample_id, aggregation
        self.neighbors, self.neighbor_method = neighbors, neighbor_method
        self.panel: Panel | None = None

    def roles(self, header: Header) -> ColumnRoles:
        numbers = [c for c in CENTROIDS if c in header.names]
        return ColumnRoles(text=[OBJECT], numbers=numbers,
                           matrix=[n for n in header.names if n != OBJECT and n not in numbers])

    def classify_intensities(self, names: Sequence[str]) -> list[FeatureSpec]:
        """Every intensity column is the statistic of ``aggregation`` of the marker it is named after."""
        statistic = AGGREGATIONS[self.aggregation]
        known = set(self.panel.names) if self.panel is not None else None
        return [FeatureSpec("intensity", statistic, "a.u.", n, "cell", n) if known is None or n in known
                else FeatureSpec.other(n) for n in names]

    def classify_regionprops(self, names: Sequence[str]) -> list[FeatureSpec]:
        """scikit-image region properties of the cell mask, in pixels."""
        out = []
        for name in names:
            found = SKIMAGE_REGIONPROPS.get(name)
            out.append(FeatureSpec("shape", found[0], found[1], name, "cell") if found else FeatureSpec.other(name))
        return out


@dataclass(frozen=True)
class ImageInfo:
    """One row of ``images.csv``: the image's stem, its size in pixels and its pixel size if known."""

    stem: str
    line: int
    width_px: float | None
    height_px: float | None
    pixel_size: float | None
    pixel_size_y: float | None


def read_images_csv(path: Path, encoding: str | None = None) -> list[ImageInfo]:
    """Rows of a steinbock ``images.csv``; the pixel size is ``acquisition_width_um / width_px``."""
    header = read_header(path, ",", "steinbock images.csv", encoding)
    require_columns(header, "steinbock images.csv", [("image",)])
    types = {n: (pa.string() if n in ("image", "acquisition_description", "source_file", "recovery_file",
                                      "recovered") else pa.float64()) for n in header.names}
    try:
        table = pacsv.read_csv(path, read_options=read_options(header), convert_options=pacsv.ConvertOptions(
            column_types=types, null_values=[""], strings_can_be_null=True))
    except pa.ArrowInvalid as err:
        raise InputError(f"{path.name}: cannot parse: {err}") from None

    def column(name: str) -> list:
        return table.column(name).to_pylist() if name in header.names else [None] * table.num_rows

    width, height = column("width_px"), column("height_px")
    um_w, um_h = column("acquisition_width_um"), column("acquisition_height_um")
    out = []
    for i, image in enumerate(column("image")):
        if image is None or not str(image).strip():
            raise InputError(f"{path.name}: line {i + 2}, column 'image': missing image name")
        ps = _ratio(um_w[i], width[i])
        ps_y = _ratio(um_h[i], height[i])
        out.append(ImageInfo(image_stem(str(image).strip()), i + 2, width[i], height[i], ps,
                             ps_y if ps_y is not None and ps is not None and abs(ps_y - ps) > 1e-9 * ps else None))
    return out


def _ratio(um: float | None, px: float | None) -> float | None:
    if um is None or px is None or not (np.isfinite(um) and np.isfinite(px)) or um <= 0 or px <= 0:
        return None
    return float(um) / float(px)


def _image_pixel_sizes(folder: Path, stems: Sequence[str], infos: Mapping[str, ImageInfo],
                       pixel_size) -> tuple[dict[str, float], dict[str, float | None], str]:
    given = pixel_size_for(stems, pixel_size)
    if given is not None:
        return given, {s: None for s in stems}, "argument"
    sizes, sizes_y = {}, {}
    for stem in stems:
        info = infos.get(stem)
        if info is None or info.pixel_size is None:
            where = (f"images.csv: line {info.line}, column 'acquisition_width_um'" if info is not None
                     else f"images.csv: no row for image {stem!r}" if infos else "no images.csv")
            raise InputError(f"{folder.name}/{where}: no pixel size for image {stem!r} (steinbock centroids are in "
                             "pixels); pass it in micrometres per pixel: read_steinbock(folder, pixel_size=1.0) or "
                             "`cellspec import steinbock FOLDER OUT --pixel-size 1.0`")
        sizes[stem], sizes_y[stem] = info.pixel_size, info.pixel_size_y
    return sizes, sizes_y, "images.csv: acquisition_width_um / width_px"


@dataclass
class ImageTables:
    """The parsed intensities and regionprops of one image, joined on Object."""

    stem: str
    intensities: Header
    regionprops: Header | None
    ids: np.ndarray
    x_raw: np.ndarray
    y_raw: np.ndarray
    matrix: np.ndarray
    counts: dict[str, int]


def _read_image(adapter: SteinbockAdapter, folder: Path, stem: str) -> ImageTables:
    inten = read_header(folder / "intensities" / f"{stem}.csv", ",", "steinbock intensities", adapter.encoding)
    require_columns(inten, "steinbock intensities", adapter.required)
    props_path = folder / "regionprops" / f"{stem}.csv"
    if not props_path.is_file():
        raise InputError(f"{folder.name}/regionprops/{stem}.csv: no such file; steinbock's centroids are in the "
                         "regionprops table (`steinbock measure regionprops`)")
    props = read_header(props_path, ",", "steinbock regionprops", adapter.encoding)
    require_columns(props, "steinbock regionprops", [(OBJECT,), (CENTROIDS[0],), (CENTROIDS[1],)])
    a = adapter.parse(inten, adapter.roles(inten))
    b = adapter.parse(props, adapter.roles(props))
    ids_a, ids_b = a.text(OBJECT), b.text(OBJECT)
    check_missing_text(inten.path, ids_a, OBJECT, None)
    check_unique_ids(inten.path, np.full(len(ids_a), stem, dtype=object), ids_a, OBJECT, None)
    order = _aligned(inten.path, props.path, ids_a, ids_b)
    x_raw, y_raw = (b.number(c)[order] for c in CENTROIDS)
    for values, column in ((x_raw, CENTROIDS[0]), (y_raw, CENTROIDS[1])):
        check_finite_centroids(props.path, values, column, order)
    matrix = np.hstack([a.matrix, b.matrix[order]]) if b.matrix.shape[1] else a.matrix
    counts = {k: a.counts[k] + b.counts[k] for k in a.counts}
    return ImageTables(stem, inten, props, ids_a, x_raw, y_raw, matrix, counts)


def _aligned(path_a: Path, path_b: Path, ids_a: np.ndarray, ids_b: np.ndarray) -> np.ndarray:
    """Row of ``ids_b`` for every id of ``ids_a`` (steinbock writes both in label order)."""
    if len(ids_a) == len(ids_b) and np.array_equal(ids_a, ids_b):
        return np.arange(len(ids_a))
    position = pd.Index(ids_b)
    if not position.is_unique:
        check_unique_ids(path_b, np.zeros(len(ids_b), dtype=object), ids_b, OBJECT, None)
    found = position.get_indexer(ids_a)
    if (found < 0).any():
        i = int(np.flatnonzero(found < 0)[0])
        raise InputError(f"{path_a.parent.name}/{path_a.name}: line {i + 2}, column {OBJECT!r}: object "
                         f"{ids_a[i]!r} has no row in {path_b.parent.name}/{path_b.name}")
    if len(ids_b) > len(ids_a):
        extra = sorted(set(ids_b) - set(ids_a))[0]
        raise InputError(f"{path_b.parent.name}/{path_b.name}: object {extra!r} has no row in "
                         f"{path_a.parent.name}/{path_a.name}")
    return found


def _adjacency(folder: Path, stem: str, ids: np.ndarray, method: str, encoding: str | None) -> pd.DataFrame | None:
    path = folder / "neighbors" / f"{stem}.csv"
    if not path.is_file():
        return None
    header = read_header(path, ",", "steinbock neighbors", encoding)
    require_columns(header, "steinbock neighbors", [(c,) for c in NEIGHBOR_COLUMNS[:2]])
    table = pacsv.read_csv(path, read_options=read_options(header), convert_options=pacsv.ConvertOptions(
        column_types={n: pa.string() for n in header.names}, strings_can_be_null=True))
    a = np.asarray(table.column("Object").to_pylist(), dtype=object)
    b = np.asarray(table.column("Neighbor").to_pylist(), dtype=object)
    known = set(ids)
    for values, column in ((a, "Object"), (b, "Neighbor")):
        unknown = [i for i, v in enumerate(values) if v not in known]
        if unknown:
            i = unknown[0]
            raise InputError(f"{folder.name}/neighbors/{path.name}: line {i + 2}, column {column!r}: object "
                             f"{values[i]!r} is not in intensities/{stem}.csv")
    keep = a != b
    lo = np.where(a < b, a, b)[keep]
    hi = np.where(a < b, b, a)[keep]
    pairs = pd.DataFrame({"cell_id_a": lo, "cell_id_b": hi}).drop_duplicates(ignore_index=True)
    frame = pd.DataFrame({"image_id": stem, "cell_id_a": pairs["cell_id_a"], "cell_id_b": pairs["cell_id_b"],
                          "shared_boundary": 0.0, "method": method})
    return frame


def read_steinbock(
    folder: str | os.PathLike,
    *,
    pixel_size: float | Mapping[str, float] | None = None,
    sample_id: str | None = None,
    marker_map: Mapping[str, str] | None = None,
    aggregation: str = "mean",
    neighbors: bool = True,
    neighbor_method: str = "mask_touching",
    encoding: str | None = None,
) -> CellSpec:
    """Read a steinbock output folder (``intensities/``, ``regionprops/``, ``neighbors/``, ``panel.csv``,
    ``images.csv``) into a CellSpec.

    The pixel size (micrometres per pixel) comes from ``pixel_size`` (a number or ``{image: size}``) or
    from ``images.csv`` (``acquisition_width_um / width_px``); without either the reader stops.
    ``aggregation`` is the ``--aggr`` steinbock measured intensities with (files do not say; default
    mean). With ``neighbors``, ``neighbors/<image>.csv`` becomes the adjacency table: one row per
    unordered pair, ``method=neighbor_method`` (one of the spec's methods; steinbock's default graph
    joins cells whose masks touch after expansion), ``shared_boundary`` 0 (steinbock does not measure it).

    >>> import cellspec_sc as cs
    >>> x = cs.read_steinbock("steinbock_output/", pixel_size=1.0)  # doctest: +SKIP
    """
    adapter = SteinbockAdapter(pixel_size=pixel_size, sample_id=sample_id, marker_map=marker_map,
                               aggregation=aggregation, neighbors=neighbors, neighbor_method=neighbor_method,
                               encoding=encoding)
    return read_folder(adapter, folder)


def read_folder(adapter: SteinbockAdapter, folder: str | os.PathLike, *, validate_result: bool = True) -> CellSpec:
    """The pipeline's steps for a folder of per-image tables: header and parse of every image's
    intensities and regionprops, one classification, then the tables, provenance and validation."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder; pass the steinbock output folder holding intensities/ and "
                         "regionprops/")
    pixel_size, sample_id, aggregation = adapter.pixel_size, adapter.sample_id, adapter.aggregation
    neighbors, neighbor_method = adapter.neighbors, adapter.neighbor_method
    panel = read_panel(folder / "panel.csv", adapter.encoding) if (folder / "panel.csv").is_file() else None
    adapter.panel = panel
    infos = read_images_csv(folder / "images.csv", adapter.encoding) if (folder / "images.csv").is_file() else []
    stems = _image_stems(folder, infos)
    by_stem = {info.stem: info for info in infos}
    sizes, sizes_y, size_source = _image_pixel_sizes(folder, stems, by_stem, pixel_size)
    parts = [_read_image(adapter, folder, stem) for stem in stems]
    first = parts[0]
    intensity_names = [n for n in first.intensities.names if n != OBJECT]
    prop_names = [n for n in first.regionprops.names if n not in (OBJECT, *CENTROIDS)]
    for part in parts[1:]:
        _check_same_columns(folder, first, part)
    specs = adapter.classify_intensities(intensity_names) + adapter.classify_regionprops(prop_names)
    dictionary, applied = build_dictionary(specs, adapter.marker_map)
    matrix = np.vstack([p.matrix for p in parts]) if len(parts) > 1 else first.matrix
    n_rows = [len(p.ids) for p in parts]
    per_row = np.repeat([sizes[s] for s in stems], n_rows)
    per_row_y = np.repeat([sizes_y[s] or sizes[s] for s in stems], n_rows)
    x_px = np.concatenate([p.x_raw for p in parts]) + 0.5  # regionprops: pixel i has its centre at i
    y_px = np.concatenate([p.y_raw for p in parts]) + 0.5
    images = np.repeat(np.asarray(stems, dtype=object), n_rows)
    cells = {"cell_id": np.concatenate([p.ids for p in parts]).astype(object), "image_id": images,
             "sample_id": images if sample_id is None else np.full(len(images), sample_id, dtype=object),
             "x": x_px * per_row, "y": y_px * per_row_y}
    area_col = [j for j, s in enumerate(dictionary.itertuples()) if s.kind == "shape" and s.statistic == "area"]
    if area_col:
        cells["area"] = positive_area(matrix[:, area_col[0]] * per_row * per_row_y)
    cells.update({"x_px": x_px, "y_px": y_px})

    channel_names, markers = _channels(panel, intensity_names, adapter)
    images_table = _images_table(stems, by_stem, sizes, sizes_y, sample_id)
    adjacency = None
    if neighbors:
        frames = [f for p in parts if (f := _adjacency(folder, p.stem, p.ids, neighbor_method, adapter.encoding))
                  is not None]
        if frames:
            adjacency = canonical_frame(pd.concat(frames, ignore_index=True), "adjacency")
    inputs = _inputs(folder, stems, neighbors and adjacency is not None)
    parameters = {
        "pixel_size": sizes, "pixel_size_y": {s: v for s, v in sizes_y.items() if v is not None} or None,
        "pixel_size_source": size_source, "sample_id": sample_id, "marker_map": dict(adapter.marker_map),
        "aggregation": aggregation, "panel": panel is not None, "images": list(stems),
        "centroids": list(CENTROIDS),
        "pixel_centre": "x = (centroid-1 + 0.5) * pixel_size (regionprops puts the centre of pixel i at i)",
        "neighbors": None if adjacency is None else {
            "method": neighbor_method, "pairs": int(len(adjacency)),
            "shared_boundary": "0: steinbock does not measure the shared boundary"},
    }
    counts = {k: sum(p.counts[k] for p in parts) for k in first.counts}
    parsed = Parsed(rows_read=sum(n_rows), rows=None, text_columns={}, number_columns={}, unfiltered={},
                    matrix=matrix, counts=counts)
    tables = Tables(cells=cells, images=images_table, channels=channels_frame(stems, channel_names, markers),
                    parameters=parameters, extra_inputs=inputs[1:], adjacency=adjacency)
    return assemble(adapter, path=folder, parsed=parsed, dictionary=dictionary, tables=tables, path_record=inputs[0],
                    validate_result=validate_result)


def _image_stems(folder: Path, infos: Sequence[ImageInfo]) -> list[str]:
    files = sorted(p.name[:-4] for p in (folder / "intensities").glob("*.csv")) \
        if (folder / "intensities").is_dir() else []
    if not files:
        raise InputError(f"{folder.name}: no intensities/*.csv; not a steinbock output folder (expected "
                         "intensities/, regionprops/, and optionally neighbors/, panel.csv, images.csv)")
    if not infos:
        return files
    listed = [i.stem for i in infos if i.stem in set(files)]
    return listed + [f for f in files if f not in set(listed)]


def _check_same_columns(folder: Path, first: ImageTables, part: ImageTables) -> None:
    for kind, a, b in (("intensities", first.intensities, part.intensities),
                       ("regionprops", first.regionprops, part.regionprops)):
        if a.names != b.names:
            diff = sorted(set(a.names) ^ set(b.names)) or ["(same columns, another order)"]
            raise InputError(f"{folder.name}/{kind}/{b.path.name}: line 1: columns differ from {kind}/{a.path.name} "
                             f"({', '.join(map(str, diff[:6]))}); every image must have the same columns")


def _channels(panel: Panel | None, intensity_names: Sequence[str], adapter: SteinbockAdapter
              ) -> tuple[list[str], list[str]]:
    mapping = adapter.marker_map
    if panel is None:
        return list(intensity_names), [clean_marker(n, mapping)[0] for n in intensity_names]
    return list(panel.channels), [clean_marker(n, mapping)[0] for n in panel.names]


def _images_table(stems, infos: Mapping[str, ImageInfo], sizes, sizes_y, sample_id) -> dict[str, list]:
    table: dict[str, list] = {"image_id": list(stems), "sample_id": [sample_id or s for s in stems],
                              "pixel_size": [sizes[s] for s in stems]}
    if any(v is not None for v in sizes_y.values()):
        table["pixel_size_y"] = [sizes_y[s] or sizes[s] for s in stems]
    if stems and all(s in infos and infos[s].width_px is not None for s in stems):
        table["width_px"] = [int(infos[s].width_px) for s in stems]
        table["height_px"] = [int(infos[s].height_px) for s in stems]
    return table


def _inputs(folder: Path, stems: Sequence[str], with_neighbors: bool) -> list[dict]:
    files = [folder / n for n in ("panel.csv", "images.csv") if (folder / n).is_file()]
    for sub in FOLDERS if with_neighbors else FOLDERS[:2]:
        files += [folder / sub / f"{s}.csv" for s in stems if (folder / sub / f"{s}.csv").is_file()]
    records = []
    for path in files:
        record = input_record(path)
        record["path_basename"] = path.relative_to(folder).as_posix()  # intensities/a.csv and regionprops/a.csv
        records.append(record)
    return records
