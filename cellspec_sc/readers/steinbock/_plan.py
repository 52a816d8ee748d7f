"""steinbock's folder as data: its tables and side files, and the plan of one output folder.

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

:func:`plan_export` reads ``panel.csv`` and ``images.csv``, finds the images, checks that every image's tables
have the same columns and plans the joined table (``Object``, the intensity columns, then the regionprops
columns). The side files read after the parse (``neighbors/``, the provenance records of every file) are here
too. Everything works on whole Arrow columns; the only Python loops run once per image.

>>> image_stem("Patient1_001.tiff")
'Patient1_001'
>>> table_stem("P1_001.ome.tiff")
'P1_001.ome'
>>> roles_of(Header(Path("s"), ",", ("Object", "CD3", "area", "centroid-0", "centroid-1"))).matrix
['CD3', 'area']
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc._files import FileDigest
from cellspec_sc.errors import InputError, MissingPath
from cellspec_sc.model import input_record
from cellspec_sc.readers._features import SKIMAGE_REGIONPROPS, FeatureSpec
from cellspec_sc.readers._pipeline import ColumnRoles, Plan
from cellspec_sc.readers._table import (
    Header,
    check_missing_text,
    first_repeat,
    listed,
    notice,
    pixel_size_for,
    read_as_text,
    read_header,
    recorded_digest,
    require_columns,
)

ADAPTER = "steinbock"
# Bump whenever the output for the same input changes (spec section 11).
# 1.1.0: intensity columns named with spaces around a panel name (" 3") are that marker's, not kind other.
# 1.2.0: an images.csv row "P1_001.ome.tiff" describes the tables "P1_001.ome.csv" (steinbock replaces only the
#        last suffix), which 1.1.0 refused for want of a pixel size or read without images.csv's sizes.
# 1.3.0: images.csv sizes that are no positive whole number of pixels are refused (1.2.0 cut 100.5 to 100); an
#        images.csv without height_px is read without image sizes (1.2.0 raised TypeError).
ADAPTER_VERSION = "1.3.0"
TOOL = "steinbock"

CENTROIDS = ("centroid-1", "centroid-0")  # (x, y): scikit-image's centroid is (row, column)
# steinbock measure intensities --aggr <numpy function> -> spec statistic (the files do not say which).
AGGREGATIONS = {"mean": "mean", "median": "median", "sum": "sum", "min": "min", "max": "max", "std": "sd",
                "var": "variance"}

OBJECT = "Object"
# Groups of alternative column names; a steinbock intensities table has one column of every group.
REQUIRED = ((OBJECT,),)
NEIGHBOR_COLUMNS = ("Object", "Neighbor", "Distance")
FOLDERS = ("intensities", "regionprops", "neighbors")
# What ``steinbock measure neighbors --type`` names: none is a method of the spec (section 7) unless the user says so.
NEIGHBOR_TYPES = {"centroids": "centroid distance within --dmax",
                  "borders": "border distance within --dmax (touching only at --dmax 0)",
                  "expansion": "masks expanded by --dmax until they touch"}


@dataclass(frozen=True)
class Layout:
    """One folder layout steinbock has written: the sub-folders of the per-image tables and the neighbour table's
    two id columns."""

    name: str
    intensities: str
    regionprops: str
    neighbors: str
    neighbor_columns: tuple[str, str]

    @property
    def folders(self) -> tuple[str, str, str]:
        return self.intensities, self.regionprops, self.neighbors


# The current layout, then the early one (steinbock before 0.10: cell_* folders, graphs with Object1/Object2).
LAYOUTS = (Layout("steinbock", "intensities", "regionprops", "neighbors", ("Object", "Neighbor")),
           Layout("early steinbock", "cell_intensities", "cell_regionprops", "cell_graphs", ("Object1", "Object2")))
# Where images.csv may be, relative to the output folder (steinbock preprocess writes it beside img/ or into it).
IMAGES_CSV_PLACES = ("images.csv", "img/images.csv")


@dataclass(frozen=True)
class Tables:
    """Where an output folder keeps its per-image tables: the folder holding them (the output folder itself, or a
    segmentation's sub-folder such as ``deepcell/``), in which layout, and its side files."""

    root: Path
    folder: Path
    layout: Layout
    panel: Path | None
    images: Path | None

    def path(self, kind: int, stem: str) -> Path:
        """The table of ``stem`` in sub-folder ``kind`` (0 intensities, 1 regionprops, 2 neighbours)."""
        return self.folder / self.layout.folders[kind] / f"{stem}.csv"

    def where(self, path: Path) -> str:
        """``path`` inside the output folder, for messages and provenance."""
        root, text = str(self.root), str(path)
        if text.startswith(root + os.sep):  # what relative_to gives, at a tenth of its cost (a folder has many files)
            return text[len(root) + 1:].replace(os.sep, "/")
        return path.relative_to(self.root).as_posix()


def find_tables(root: Path, segmentation: str | None) -> Tables:
    """The per-image tables of the output folder ``root``: in it, or in its one sub-folder that has them (``deepcell/
    intensities``); several candidates are refused naming them and ``segmentation=``, which chooses one."""
    candidates = [(root, layout) for layout in LAYOUTS if (root / layout.intensities).is_dir()]
    subfolders = sorted(c for c in root.iterdir() if c.is_dir()) if root.is_dir() else []
    candidates += [(sub, layout) for sub in subfolders for layout in LAYOUTS if (sub / layout.intensities).is_dir()]
    if segmentation is not None:
        chosen = [(f, lay) for f, lay in candidates if f != root and f.name == segmentation]
        if not chosen:
            names = sorted({f.name for f, _ in candidates if f != root})
            raise InputError(f"{root.name}: segmentation={segmentation!r}: no sub-folder of that name holds "
                             f"per-image tables; found {', '.join(names) or 'none'}")
        candidates = chosen
    elif len(candidates) > 1:
        named = [f"{f.relative_to(root).as_posix() + '/' if f != root else ''}{lay.intensities}/"
                 for f, lay in candidates]
        subs = [f.name for f, _ in candidates if f != root]
        hint = f" choose one with segmentation= (e.g. segmentation={subs[0]!r}; CLI --segmentation)" if subs else \
            " keep one layout"
        raise InputError(f"{root.name}: {len(candidates)} folders of per-image tables ({', '.join(named)});{hint}")
    folder, layout = candidates[0] if candidates else (root, LAYOUTS[0])
    panel = next((p for p in (root / "panel.csv", folder / "panel.csv") if p.is_file()), None)
    images = next((p for p in [*(root / n for n in IMAGES_CSV_PLACES), folder / "images.csv"] if p.is_file()), None)
    return Tables(root, folder, layout, panel, images)
KEEP_TRUE = ("1", "True", "true")
KEEP_FALSE = ("0", "False", "false")
IMAGES_CSV_NUMBERS = ("width_px", "height_px", "acquisition_width_um", "acquisition_height_um")


def image_stem(name: str) -> str:
    """The file stem steinbock uses for an image's tables (``images.csv`` names the ``.tiff``)."""
    for suffix in (".ome.tiff", ".ome.tif", ".tiff", ".tif"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def table_stem(name: str) -> str:
    """The stem steinbock itself gives an image's tables: only the last suffix replaced, so that
    ``P1_001.ome.tiff`` has ``intensities/P1_001.ome.csv``."""
    for suffix in (".tiff", ".tif"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def infos_by_stem(infos: Sequence[ImageInfo], present: Collection[str]) -> dict[str, ImageInfo]:
    """Each ``images.csv`` row under the stem of the table it describes: its stem without ``.ome``
    (``img_1.ome.tiff`` for ``img_1.csv``), else steinbock's own (``P1_001.ome.csv``)."""
    return {(info.table_stem if info.stem not in present and info.table_stem in present else info.stem): info
            for info in infos}


@dataclass(frozen=True)
class Panel:
    """The kept channels of ``panel.csv``: metal tags and target names, in channel order."""

    channels: list[str]
    names: list[str]


def read_panel(path: Path, encoding: str | None = None) -> Panel:
    """Kept channels of a steinbock ``panel.csv`` (rows with ``keep`` 0 are left out)."""
    header = read_header(path, ",", "steinbock panel.csv", encoding, index_column=True)
    require_columns(header, "steinbock panel.csv", [("channel",), ("name",)])
    table = read_as_text(header, [n for n in header.names if n])
    keep = np.ones(table.num_rows, dtype=bool)
    if "keep" in header.names:
        flags = pc.utf8_trim_whitespace(pc.fill_null(table.column("keep"), ""))
        valid = pc.is_in(flags, value_set=pa.array(KEEP_TRUE + KEEP_FALSE))
        bad = pc.index(valid, False).as_py()
        if bad >= 0:
            raise InputError(f"{path.name}: line {bad + 2}, column 'keep': expected 0 or 1, got "
                             f"{table.column('keep')[bad].as_py()!r}")
        keep = pc.is_in(flags, value_set=pa.array(KEEP_TRUE)).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(keep)
    channels, names = (table.column(c).take(pa.array(rows)).to_numpy(zero_copy_only=False) for c in ("channel", "name"))
    check_missing_text(path, channels, "channel", rows)
    check_missing_text(path, names, "name", rows)
    markers = [str(n).strip() for n in names]
    repeat = first_repeat(markers)
    if repeat is not None:
        first, again = (int(rows[i]) + 2 for i in repeat)
        raise InputError(f"{path.name}: lines {first} and {again}, column 'name': {markers[repeat[1]]!r} names "
                         "two kept channels; markers must be unique: rename one, or set keep to 0 for one")
    return Panel([str(c).strip() for c in channels], markers)


@dataclass(frozen=True)
class ImageInfo:
    """One row of ``images.csv``: the image's stem, its size in pixels and its pixel size if known."""

    stem: str
    line: int
    table_stem: str
    width_px: float | None
    height_px: float | None
    pixel_size: float | None
    pixel_size_y: float | None


def has_images_csv(folder: Path, path: Path | None = None) -> bool:
    """Whether the folder has an ``images.csv`` (``path``, default ``folder/images.csv``) to read; an empty one
    (0 bytes, as an interrupted steinbock run leaves) is said to be ignored."""
    path = path if path is not None else folder / "images.csv"
    if not path.is_file():
        return False
    if path.stat().st_size == 0:
        notice(f"{folder.name}/images.csv is empty (0 bytes): ignored, so the pixel size must come from pixel_size=")
        return False
    return True


def read_images_csv(path: Path, encoding: str | None = None) -> list[ImageInfo]:
    """Rows of a steinbock ``images.csv``; the pixel size is ``acquisition_width_um / width_px``. Only the
    columns used here are read as numbers: others (older steinbock's ``source``, a lab's own metadata) are
    left alone, whatever they hold."""
    header = read_header(path, ",", "steinbock images.csv", encoding, index_column=True)
    require_columns(header, "steinbock images.csv", [("image",)])
    table = read_as_text(header, columns=[n for n in header.names if n == "image" or n in IMAGES_CSV_NUMBERS])

    def column(name: str) -> np.ndarray:
        if name not in header.names:
            return np.full(table.num_rows, np.nan)
        return numbers_of(path, name, table.column(name).to_pylist())

    blank = pc.fill_null(pc.equal(pc.utf8_trim_whitespace(table.column("image")), ""), True)
    missing = pc.index(blank, True).as_py()
    if missing >= 0:
        raise InputError(f"{path.name}: line {missing + 2}, column 'image': missing image name")
    images = table.column("image").to_pylist()  # one row per image
    names = [str(i).strip() for i in images]
    stems = [image_stem(n) for n in names]
    repeat = first_repeat(stems)
    if repeat is not None:
        raise InputError(f"{path.name}: lines {repeat[0] + 2} and {repeat[1] + 2}, column 'image': image "
                         f"{stems[repeat[1]]!r} is listed twice (one row per image; remove one)")
    width, height = (_pixels(path, name, column(name)) for name in ("width_px", "height_px"))
    size, size_y = _ratio(column("acquisition_width_um"), width), _ratio(column("acquisition_height_um"), height)
    distinct_y = np.isfinite(size_y) & np.isfinite(size) & (np.abs(size_y - size) > 1e-9 * size)
    return [ImageInfo(stems[i], i + 2, table_stem(names[i]), _number(width[i]), _number(height[i]),
                      _number(size[i]), _number(size_y[i]) if distinct_y[i] else None) for i in range(len(images))]


def numbers_of(path: Path, column: str, texts: Sequence[str | None]) -> np.ndarray:
    """The numbers of a short text column (one row per image), NaN where empty; a value that is no number
    is refused with its line and column.

    >>> numbers_of(Path("images.csv"), "width_px", ["10", None, " 2.5 "]).tolist()
    [10.0, nan, 2.5]
    """
    out = np.full(len(texts), np.nan)
    for i, text in enumerate(texts):
        if text is None or not text.strip():
            continue
        try:
            out[i] = float(text)
        except ValueError:
            raise InputError(f"{path.name}: line {i + 2}, column {column!r}: "
                             f"cannot parse {text!r} as a number") from None
    return out


def _pixels(path: Path, column: str, values: np.ndarray) -> np.ndarray:
    """``values`` (NaN where empty) unless one is not a positive whole number of pixels (refused by line)."""
    bad = np.flatnonzero(~np.isnan(values) & ~((values > 0) & (values < 2 ** 53) & (values == np.round(values))))
    if len(bad):
        raise InputError(f"{path.name}: line {bad[0] + 2}, column {column!r}: {values[bad[0]]!r} is not a positive "
                         "whole number of pixels")
    return values


def _ratio(um: np.ndarray, px: np.ndarray) -> np.ndarray:
    """Micrometres per pixel where both are finite and positive, else NaN."""
    ok = np.isfinite(um) & np.isfinite(px) & (um > 0) & (px > 0)
    return np.where(ok, um / np.where(ok, px, 1.0), np.nan)


def _number(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def image_stems(tables: Tables, infos: Sequence[ImageInfo]) -> list[str]:
    """The images of the folder: those of ``images.csv`` in its order, then the other ``intensities/*.csv``."""
    folder, root = tables.folder / tables.layout.intensities, tables.root
    files = sorted(p.name[:-4] for p in folder.glob("*.csv")) if folder.is_dir() else []
    if not files:
        raise InputError(f"{root.name}: no intensities/*.csv; not a steinbock output folder (expected "
                         "intensities/, regionprops/, and optionally neighbors/, panel.csv, images.csv, in the folder "
                         "or in a segmentation's sub-folder such as deepcell/; or the early layout's cell_intensities/,"
                         " cell_regionprops/, cell_graphs/)")
    where = tables.where(folder)
    empty = [f for f in files if not has_data_rows(folder / f"{f}.csv")]
    if empty and len(empty) == len(files):
        raise InputError(f"{root.name}/{where}: every table has a header but no objects "
                         f"({listed(empty, quote=False, most=5)}): no cells to import")
    if empty:
        notice(f"{root.name}/{where}: {listed([e + '.csv' for e in empty], quote=False, most=5)} hold(s) a "
               "header but no objects (an empty mask): "
               f"{'that image is' if len(empty) == 1 else 'those images are'} left out")
    present = set(files) - set(empty)
    described = infos_by_stem(infos, files)
    without = [info.table_stem + ".csv" for stem, info in described.items() if stem not in files]
    if without:
        notice(f"{root.name}/images.csv lists {len(without)} image(s) without a table in {where}/ "
               f"({listed(without, quote=False, most=5)}): left out")
    in_csv = [stem for stem in described if stem in present]
    return in_csv + sorted(present - set(in_csv))


def has_data_rows(path: Path) -> bool:
    """Whether a table holds anything after its header line (which a whole-line read of 1 MB at most
    skips; then a few bytes decide)."""
    with open(path, "rb") as handle:
        handle.readline(1 << 20)
        return bool(handle.read(256).strip())


def image_pixel_sizes(folder: Path, stems: Sequence[str], infos: Mapping[str, ImageInfo], pixel_size
                      ) -> tuple[dict[str, float], dict[str, float | None], str]:
    """(x pixel size, y pixel size when it differs, where they came from) of every image."""
    given = pixel_size_for(stems, pixel_size)
    if given is not None:
        return given, {s: None for s in stems}, "argument"
    sizes, sizes_y = {}, {}
    for stem in stems:
        info = infos.get(stem)
        if info is None or info.pixel_size is None:
            where = (f"/images.csv: line {info.line}, column 'acquisition_width_um'" if info is not None
                     else f"/images.csv: no row for image {stem!r}" if infos else ": no images.csv")
            raise InputError(f"{folder.name}{where}: no pixel size for image {stem!r} (steinbock centroids are in "
                             "pixels); pass it in micrometres per pixel: read_steinbock(folder, pixel_size=1.0) or "
                             "`cellspec import steinbock FOLDER OUT --pixel-size 1.0`")
        sizes[stem], sizes_y[stem] = info.pixel_size, info.pixel_size_y
        if info.pixel_size_y is not None and abs(info.pixel_size_y / info.pixel_size - 1) > 0.01:
            notice(f"{folder.name}/images.csv: line {info.line}: image {stem!r} has pixels of {info.pixel_size:.6g} um "
                   f"in x (acquisition_width_um / width_px) but {info.pixel_size_y:.6g} um in y (acquisition_height_um "
                   "/ height_px); an acquisition stopped early leaves fewer rows than planned: pass pixel_size= if "
                   "the pixels are square")
    return sizes, sizes_y, "images.csv: acquisition_width_um / width_px"


def images_table(stems: Sequence[str], infos: Mapping[str, ImageInfo], sizes: Mapping[str, float],
                 sizes_y: Mapping[str, float | None], sample_id: str | None) -> dict[str, list]:
    """The spec's images table of the folder's images."""
    table: dict[str, list] = {"image_id": list(stems), "sample_id": [sample_id or s for s in stems],
                              "pixel_size": [sizes[s] for s in stems]}
    if any(v is not None for v in sizes_y.values()):
        table["pixel_size_y"] = [sizes_y[s] or sizes[s] for s in stems]
    if stems and all(s in infos and None not in (infos[s].width_px, infos[s].height_px) for s in stems):
        table["width_px"] = [int(infos[s].width_px) for s in stems]
        table["height_px"] = [int(infos[s].height_px) for s in stems]
    return table


def neighbor_pairs(tables: Tables, stem: str, ids: pa.ChunkedArray | pa.Array, encoding: str | None
                   ) -> tuple[pa.ChunkedArray, pa.ChunkedArray] | None:
    """The neighbour table of ``stem`` as the two cell ids of adjacency rows: each unordered pair once, in the order
    it is first seen, the smaller id (byte order) first, self-pairs dropped; None when the file does not exist.
    ``ids``: the cell ids of the image (checked unique)."""
    path = tables.path(2, stem)
    try:
        header = read_header(path, ",", "steinbock neighbors", encoding)
    except MissingPath:
        return None
    first_column, second_column = tables.layout.neighbor_columns
    require_columns(header, "steinbock neighbors", [(first_column,), (second_column,)])
    table = read_as_text(header, columns=[first_column, second_column])
    known = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    ends = []
    for column in (first_column, second_column):  # each end as its id's position among the image's ids
        values = table.column(column)
        codes = pc.index_in(values, value_set=known)
        if codes.null_count:
            i = pc.index(pc.is_null(codes), True).as_py()
            raise InputError(f"{tables.root.name}/{tables.where(path)}: line {i + 2}, column {column!r}: object "
                             f"{values[i].as_py()!r} is not in {tables.where(tables.path(0, stem))}")
        ends.append(codes.to_numpy().astype(np.int64))
    a, b = ends
    a, b = a[a != b], b[a != b]
    rank = byte_order_ranks(known)
    first = rank[a] < rank[b]
    low, high = np.where(first, a, b), np.where(first, b, a)
    # each pair once, where it is first seen: the pair as one number from the ids' positions
    rows = np.sort(np.unique(low * len(known) + high, return_index=True)[1])
    return pa.chunked_array([known.take(low[rows])]), pa.chunked_array([known.take(high[rows])])


def byte_order_ranks(ids: pa.Array) -> np.ndarray:
    """The rank of each of ``ids`` (distinct text) in byte order, the order of the spec's pairs.

    >>> byte_order_ranks(pa.array(["9", "10", "2"])).tolist()
    [2, 0, 1]
    """
    ranks = np.empty(len(ids), dtype=np.int64)
    ranks[pc.sort_indices(ids).to_numpy()] = np.arange(len(ids))
    return ranks


def input_records(tables: Tables, stems: Sequence[str], with_neighbors: bool,
                  hashes: Mapping[Path, FileDigest | None] | None = None) -> list[dict]:
    """Provenance records of every file read, named by their path inside the output folder (``hashes``: the
    SHA-256 and size of the tables the parse hashed as it read them, which are not read again)."""
    files = [p for p in (tables.panel, tables.images) if p is not None]
    hashes = hashes or {}
    for kind in (0, 1, 2) if with_neighbors else (0, 1):  # a table read and hashed is there
        files += [p for s in stems if (p := tables.path(kind, s)) in hashes or recorded_digest(p) or p.is_file()]
    records = []
    for path in files:
        record = input_record(path, digest=hashes.get(path) or recorded_digest(path))
        record["path_basename"] = tables.where(path)  # intensities/a.csv and regionprops/a.csv
        records.append(record)
    return records


# -- the plan ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class SteinbockPlan(Plan):
    """A steinbock folder's plan: the base plan of the joined table, plus the panel, the images (in order) with
    their ``images.csv`` rows and pixel sizes, and the (intensities, regionprops) headers of every image."""

    panel: Panel | None
    stems: tuple[str, ...]
    infos: Mapping[str, ImageInfo]
    sizes: Mapping[str, float]
    sizes_y: Mapping[str, float | None]
    size_source: str
    files: tuple[tuple[Header, Header], ...]
    intensity_names: tuple[str, ...]
    tables: Tables
    aggregation: str
    aggregation_source: str


def plan_export(folder: Path, *, pixel_size, aggregation: str | None, encoding: str | None,
                segmentation: str | None = None) -> SteinbockPlan:
    """The plan of the steinbock output ``folder``: the header of the joined table of every image (``Object``,
    intensities, regionprops), after finding the tables (:func:`find_tables`), reading ``panel.csv`` and
    ``images.csv`` and checking that every image has the same columns; intensities are the statistic
    ``aggregation`` of their marker (None: steinbock's default, mean, said in a warning since the files do not say)."""
    if not folder.exists():
        raise MissingPath(folder, f"{folder}: no such folder; pass the steinbock output folder holding intensities/ "
                          "and regionprops/")
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder; pass the steinbock output folder holding intensities/ and "
                         "regionprops/")
    tables = find_tables(folder, segmentation)
    panel = read_panel(tables.panel, encoding) if tables.panel is not None else None
    rows = read_images_csv(tables.images, encoding) if has_images_csv(folder, tables.images) else []
    stems = image_stems(tables, rows)
    infos = infos_by_stem(rows, stems)
    sizes, sizes_y, size_source = image_pixel_sizes(folder, stems, infos, pixel_size)
    files = _image_headers_within(tables, stems, encoding)
    for pair in files[1:]:
        _check_same_columns(tables, files[0], pair)
    intensities, regionprops = files[0]
    intensity_names = [n for n in intensities.names if n != OBJECT]
    header = Header(folder, ",", (OBJECT, *intensity_names, *(n for n in regionprops.names if n != OBJECT)),
                    intensities.encoding)
    roles = roles_of(header)
    n = len(intensity_names)
    if aggregation is None:
        aggregation, source = "mean", "assumed: steinbock's default --aggr mean (the tables do not say)"
        if intensity_names:
            notice(f"{folder.name}: steinbock's intensity tables do not say which --aggr measured them; read as the "
                   "mean (steinbock's default): pass aggregation= (e.g. aggregation='median'; CLI --aggregation) "
                   "if they were measured otherwise")
    else:
        source = "argument"
    features = (*classify_intensities(roles.matrix[:n], aggregation, panel), *classify_regionprops(roles.matrix[n:]))
    return SteinbockPlan(header=header, roles=roles, features=features, panel=panel, stems=tuple(stems), infos=infos,
                         sizes=sizes, sizes_y=sizes_y, size_source=size_source, files=tuple(files),
                         intensity_names=tuple(intensity_names), tables=tables, aggregation=aggregation,
                         aggregation_source=source)


def roles_of(header: Header) -> ColumnRoles:
    """The roles of the columns of a steinbock table (or of the joined one): ``Object`` is text, the centroids are
    numbers, every other column a measurement."""
    numbers = [c for c in CENTROIDS if c in header.names]
    matrix = [n for n in header.names if n != OBJECT and n not in numbers]
    return ColumnRoles(text=[OBJECT], numbers=numbers, matrix=matrix)


def classify_intensities(names: Sequence[str], aggregation: str, panel: Panel | None) -> list[FeatureSpec]:
    """Every intensity column is the statistic of ``aggregation`` of the marker it is named after."""
    statistic = AGGREGATIONS[aggregation]
    known = set(panel.names) if panel is not None else None  # trimmed, like the columns here
    return [FeatureSpec("intensity", statistic, "a.u.", n, "cell", n.strip())
            if known is None or n.strip() in known else FeatureSpec.other(n) for n in names]


def classify_regionprops(names: Sequence[str]) -> list[FeatureSpec]:
    """scikit-image region properties of the cell mask, in pixels."""
    out = []
    for name in names:
        found = SKIMAGE_REGIONPROPS.get(name)
        out.append(FeatureSpec("shape", found[0], found[1], name, "cell") if found else FeatureSpec.other(name))
    return out


# The bytes of small tables the plan keeps from reading their headers, for their parse (so that each is read once).
KEPT_TABLE_BYTES = 1 << 24


def _image_headers_within(tables: Tables, stems: Sequence[str], encoding: str | None) -> list[tuple[Header, Header]]:
    """Every image's two headers; the bytes a small table's header read took are kept for its parse while they
    add up to :data:`KEPT_TABLE_BYTES` at most (a folder of hundreds of images would hold hundreds of MB; the
    tables beyond are read again by their parse, each hashed from that one read)."""
    files, kept = [], 0
    for stem in stems:
        pair = _image_headers(tables, stem, encoding)
        size = sum(len(header.contents) if header.contents is not None else 0 for header in pair)
        if kept + size > KEPT_TABLE_BYTES:
            pair = tuple(replace(header, contents=None) for header in pair)
        else:
            kept += size
        files.append(pair)
    return files


def _image_headers(tables: Tables, stem: str, encoding: str | None) -> tuple[Header, Header]:
    intensities = read_header(tables.path(0, stem), ",", "steinbock intensities", encoding)
    require_columns(intensities, "steinbock intensities", REQUIRED)
    props_path = tables.path(1, stem)
    try:
        regionprops = read_header(props_path, ",", "steinbock regionprops", encoding)
    except MissingPath:
        raise InputError(f"{tables.root.name}/{tables.where(props_path)}: no such file; steinbock's centroids are in "
                         "the regionprops table (`steinbock measure regionprops`)") from None
    require_columns(regionprops, "steinbock regionprops", [(OBJECT,), (CENTROIDS[0],), (CENTROIDS[1],)])
    return intensities, regionprops


def _check_same_columns(tables: Tables, first: tuple[Header, Header], other: tuple[Header, Header]) -> None:
    for a, b in zip(first, other, strict=True):
        if a.names != b.names:
            diff = sorted(set(a.names) ^ set(b.names)) or ["(same columns, another order)"]
            raise InputError(f"{tables.root.name}/{tables.where(b.path)}: line 1: columns differ from "
                             f"{tables.where(a.path)} ({', '.join(map(str, diff[:6]))}); every image must have the "
                             "same columns")
