"""Read a steinbock (imaging mass cytometry) output folder: the adapter that executes a steinbock plan.

The folder goes through the same pipeline as a single export
(:func:`~cellspec_sc.readers._pipeline.read_export`): its plan (:mod:`cellspec_sc.readers.steinbock._plan`) is
that of the joined table, and every image's two tables are parsed and joined on ``Object``.

Coordinates: ``centroid-0`` and ``centroid-1`` are scikit-image's ``regionprops`` centroid, the mean
row and column index of the label's pixels, so ``centroid-0`` is y, ``centroid-1`` is x, and the
centre of pixel ``i`` is at ``i``; in the spec's frame it is at ``i + 0.5``, hence
``x = (centroid-1 + 0.5) * pixel_size``. The pixel size is ``acquisition_width_um / width_px`` from
``images.csv`` (IMC: about 1 um), or ``pixel_size=``. See ``docs/readers.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc._background import ordered_map
from cellspec_sc._files import FileDigest
from cellspec_sc.errors import InputError
from cellspec_sc.model import MatrixStats, empty_matrix
from cellspec_sc.readers._features import channels_frame, clean_marker, feature_positions
from cellspec_sc.readers._pipeline import Tables, ToolAdapter
from cellspec_sc.readers._table import (
    SMALL_TABLE_BYTES,
    GroupedStats,
    Header,
    Parsed,
    check_finite_centroids,
    check_image_ids,
    estimated_rows,
    listed,
    notice,
    positive_area,
    repeated_strings,
    stream_columns,
    string_column,
    workers,
)
from cellspec_sc.readers.steinbock._plan import (
    ADAPTER,
    ADAPTER_VERSION,
    AGGREGATIONS,
    CENTROIDS,
    NEIGHBOR_TYPES,
    OBJECT,
    TOOL,
    SteinbockPlan,
    images_table,
    input_records,
    neighbor_pairs,
    plan_export,
    roles_of,
)
from cellspec_sc.spec import canonical_frame, vocabulary


class SteinbockAdapter(ToolAdapter):
    """steinbock's reader: panel names as markers, scikit-image regionprops as shapes, centroids in pixels
    with the pixel-centre convention, one pair of tables per image joined on ``Object``."""

    name, version, tool, producer = ADAPTER, ADAPTER_VERSION, TOOL, "steinbock"

    def __init__(self, *, pixel_size=None, sample_id=None, marker_map=None, aggregation: str | None = None,
                 neighbors: bool = True, neighbors_method: str | None = None, encoding: str | None = None,
                 segmentation: str | None = None) -> None:
        super().__init__(marker_map, encoding)
        if aggregation is not None and aggregation not in AGGREGATIONS:
            raise InputError(f"aggregation={aggregation!r}: steinbock's --aggr is one of {', '.join(AGGREGATIONS)}")
        methods = (*vocabulary().adjacency_methods, *NEIGHBOR_TYPES)
        if neighbors_method is not None and neighbors_method not in methods:
            raise InputError(f"neighbors_method={neighbors_method!r}: one of {', '.join(methods)} (an adjacency method "
                             "of spec section 7, or the --type steinbock measured the neighbours with)")
        self.pixel_size, self.sample_id, self.aggregation = pixel_size, sample_id, aggregation
        self.neighbors, self.neighbors_method, self.segmentation = neighbors, neighbors_method, segmentation

    def plan(self, path: Path) -> SteinbockPlan:
        """The plan of the folder at ``path`` (see :func:`~cellspec_sc.readers.steinbock._plan.plan_export`)."""
        return plan_export(path, pixel_size=self.pixel_size, aggregation=self.aggregation, encoding=self.encoding,
                           segmentation=self.segmentation)

    def parse(self, plan: SteinbockPlan) -> tuple[Parsed, SteinbockPlan]:
        """Every image's intensities and regionprops, parsed and joined on ``Object``, one image after another,
        each written straight into the joined matrix (allocated for the rows estimated from the start of each
        intensities file, so that no file is read twice; grown when short)."""
        lines = sum(estimated_rows(intensities) for intensities, _ in plan.files)
        matrix = empty_matrix(lines, len(plan.roles.matrix))
        parts, start, hashes, stats = [], 0, {}, []
        parsed_tables = ordered_map(_image_tables, plan.files, threads=_parse_threads(plan.files),
                                    name="cellspec-steinbock")
        try:
            for stem, (intensities, regionprops), (a, b) in zip(plan.stems, plan.files, parsed_tables, strict=True):
                hashes[intensities.path] = a.file_digest()
                if start + a.n > matrix.shape[0]:  # the estimate was short: grown (doubled) rather than overrun
                    grown = empty_matrix(max(start + a.n, 2 * matrix.shape[0]), matrix.shape[1])
                    grown[:start] = matrix[:start]
                    matrix = grown
                parts.append(self._join_image(stem, intensities, regionprops, a, b, matrix[start:start + a.n], hashes,
                                              stats))
                start += a.n
        finally:
            parsed_tables.close()  # on a refusal: the images parsed ahead are waited for (or cancelled)
        parsed = Parsed(rows_read=start, rows=None,
                        text_columns={OBJECT: pa.chunked_array([c for p in parts for c in p.arrow(OBJECT).chunks],
                                                               type=pa.string())},
                        number_columns={c: np.concatenate([p.number(c) for p in parts]) for c in CENTROIDS},
                        unfiltered={}, matrix=matrix[:start],
                        counts={k: sum(p.counts[k] for p in parts) for k in parts[0].counts},
                        parts=tuple(p.n for p in parts), hashes=hashes,
                        stats=folder_stats(stats, [p.n for p in parts], plan.stems))
        return parsed, plan

    def tables(self, plan: SteinbockPlan, parsed: Parsed, dictionary: pd.DataFrame, applied: Mapping[str, str]
               ) -> Tables:
        """Cells of every image, images with their pixel sizes, channels, adjacency and parameters."""
        stems, sizes, sizes_y = plan.stems, plan.sizes, plan.sizes_y
        rows_per_image = parsed.parts
        per_row = np.repeat([sizes[s] for s in stems], rows_per_image)
        per_row_y = np.repeat([sizes_y[s] or sizes[s] for s in stems], rows_per_image)
        x_px = parsed.number(CENTROIDS[0]) + 0.5  # regionprops: pixel i has its centre at i
        y_px = parsed.number(CENTROIDS[1]) + 0.5
        images = repeated_strings(stems, rows_per_image)
        cells = {"cell_id": string_column(parsed.arrow(OBJECT)), "image_id": images,
                 "sample_id": images if self.sample_id is None else repeated_strings([self.sample_id], [len(images)]),
                 "x": x_px * per_row, "y": y_px * per_row_y}
        area = feature_positions(dictionary, kind="shape", statistic="area")
        if len(area):
            cells["area"] = positive_area(parsed.matrix[:, area[0]] * per_row * per_row_y)
        cells.update({"x_px": x_px, "y_px": y_px})
        adjacency, neighbours = self._adjacency(plan, parsed) if self.neighbors else (None, None)
        inputs = input_records(plan.tables, stems, adjacency is not None, parsed.hashes or {})
        return Tables(cells=cells, images=images_table(stems, plan.infos, sizes, sizes_y, self.sample_id),
                      channels=channels_frame(stems, *self._channels(plan)),
                      parameters=self._parameters(plan, neighbours), extra_inputs=inputs, adjacency=adjacency,
                      image_codes=_image_codes(stems, rows_per_image))

    @staticmethod
    def _join_image(stem: str, intensities: Header, regionprops: Header, a: Parsed, b: Parsed, out: np.ndarray,
                    hashes: dict[Path, FileDigest], stats: list[MatrixStats | None]) -> Parsed:
        """One image's parsed intensities ``a`` joined on ``Object`` with its parsed regionprops ``b`` (rows in the
        order of the intensities table), the measurements written into ``out``; the regionprops' hash goes to
        ``hashes``, the joined matrix stats of the image to ``stats`` (:func:`joined_stats`)."""
        hashes[regionprops.path] = b.file_digest()
        ids = a.arrow(OBJECT)
        check_image_ids(intensities.path, ids, OBJECT, stem)
        order = _aligned(stem, intensities, regionprops, ids, b)
        x_raw, y_raw = (b.number(c)[order] for c in CENTROIDS)
        for values, column in ((x_raw, CENTROIDS[0]), (y_raw, CENTROIDS[1])):
            check_finite_centroids(regionprops.path, values, column, order)
        width = a.matrix.shape[1]
        out[:, :width] = a.matrix
        out[:, width:] = b.matrix[order]
        stats.append(joined_stats(a.stats, b.stats))
        return Parsed(rows_read=a.n, rows=None, text_columns={OBJECT: ids},
                      number_columns={CENTROIDS[0]: x_raw, CENTROIDS[1]: y_raw}, unfiltered={}, matrix=out,
                      counts={k: a.counts[k] + b.counts[k] for k in a.counts})

    def _adjacency(self, plan: SteinbockPlan, parsed: Parsed) -> tuple[pd.DataFrame | None, dict | None]:
        """The neighbour tables as adjacency, and what was done (provenance). The tables do not say how steinbock
        measured them: ``neighbors_method`` says, else mask_touching is assumed with a warning; a --type that no
        method of the spec describes (distance-limited or expanded neighbours) leaves them out, with a warning."""
        tables, ids = plan.tables, parsed.arrow(OBJECT)
        folder = f"{tables.root.name}/{tables.where(tables.folder / tables.layout.neighbors)}"
        if not any(tables.path(2, stem).is_file() for stem in plan.stems):
            return None, None
        method, source = self.neighbors_method, "argument"
        if method in NEIGHBOR_TYPES:
            notice(f"{folder}: neighbours measured with --type {method} ({NEIGHBOR_TYPES[method]}) are not contacts "
                   "of any adjacency method of the spec (mask_touching, polygon_intersection, delaunay); they are "
                   "left out")
            return None, {"left_out": f"--type {method}"}
        if method is None:
            method, source = "mask_touching", "assumed (the neighbour tables do not say how they were measured)"
            notice(f"{folder}: the neighbour tables do not say how steinbock measured them; read as mask_touching "
                   "(masks that touch): pass neighbors_method= ('borders', 'expansion' or 'centroids' for what "
                   "steinbock's --type was, which leaves them out; CLI --neighbors-method) if they are not")
        ends = np.cumsum([0, *parsed.parts])
        # one image after another: pyarrow parses each small table in a fraction of the Python that makes its pairs,
        # so threads only contend for the GIL (measured: 3,000 cells in four images 2.55 ms in turn, 2.95-3.1 on two)
        found = {stem: neighbor_pairs(tables, stem, ids.slice(ends[k], ends[k + 1] - ends[k]), self.encoding)
                 for k, stem in enumerate(plan.stems)}
        lacking = [stem for stem, pairs in found.items() if pairs is None]
        if lacking:
            notice(f"{folder}: no <image>.csv for {len(lacking)} of {len(found)} image(s) "
                   f"({listed(lacking, quote=False, most=5)}): their cells have no adjacency "
                   "(steinbock measure neighbors writes them; neighbors=False, CLI --no-neighbors, leaves adjacency "
                   "out without this warning)")
        pairs = {stem: found_pairs for stem, found_pairs in found.items() if found_pairs is not None}
        n = sum(len(a) for a, _ in pairs.values())
        adjacency = canonical_frame({  # one frame for every image (a frame per image, then concat, costs more)
            "image_id": repeated_strings(list(pairs), [len(a) for a, _ in pairs.values()]),
            "cell_id_a": string_column(pa.chunked_array([c for a, _ in pairs.values() for c in a.chunks],
                                                        type=pa.string())),
            "cell_id_b": string_column(pa.chunked_array([c for _, b in pairs.values() for c in b.chunks],
                                                        type=pa.string())),
            "shared_boundary": np.zeros(n), "method": repeated_strings([method], [n])}, "adjacency")
        return adjacency, {"method": method, "method_source": source, "pairs": int(len(adjacency)),
                           "shared_boundary": "0: steinbock does not measure the shared boundary"}

    def _channels(self, plan: SteinbockPlan) -> tuple[list[str], list[str]]:
        names = plan.panel.names if plan.panel is not None else plan.intensity_names
        channels = plan.panel.channels if plan.panel is not None else plan.intensity_names
        return list(channels), [clean_marker(n, self.marker_map)[0] for n in names]

    def _parameters(self, plan: SteinbockPlan, neighbours: dict | None) -> dict:
        tables = plan.tables
        return {
            "pixel_size": dict(plan.sizes),
            "pixel_size_y": {s: v for s, v in plan.sizes_y.items() if v is not None} or None,
            "pixel_size_source": plan.size_source, "sample_id": self.sample_id, "marker_map": dict(self.marker_map),
            "aggregation": plan.aggregation, "aggregation_source": plan.aggregation_source,
            "panel": plan.panel is not None, "images": list(plan.stems),
            "layout": tables.layout.name,
            "tables": None if tables.folder == tables.root else tables.where(tables.folder),
            "images_csv": None if tables.images is None else tables.where(tables.images),
            "centroids": list(CENTROIDS),
            "pixel_centre": "x = (centroid-1 + 0.5) * pixel_size (regionprops puts the centre of pixel i at i)",
            "neighbors": neighbours,
        }


def _aligned(stem: str, intensities: Header, regionprops: Header, ids: pa.ChunkedArray, props: Parsed) -> np.ndarray:
    """Row of the regionprops table for every id of the intensities table (steinbock writes both in label order)."""
    ids_b = props.arrow(OBJECT)
    if len(ids) == len(ids_b) and ids.equals(ids_b):
        return np.arange(len(ids))
    path_a, path_b = intensities.path, regionprops.path
    check_image_ids(path_b, ids_b, OBJECT, stem)
    found = pc.index_in(ids, value_set=ids_b.combine_chunks())
    missing = pc.index(pc.is_null(found), True).as_py()
    if missing >= 0:
        raise InputError(f"{path_a.parent.name}/{path_a.name}: line {missing + 2}, column {OBJECT!r}: object "
                         f"{ids[missing].as_py()!r} has no row in {path_b.parent.name}/{path_b.name}")
    if len(ids_b) > len(ids):
        extra = sorted(pc.filter(ids_b, pc.invert(pc.is_in(ids_b, value_set=ids.combine_chunks()))).to_pylist())[0]
        raise InputError(f"{path_b.parent.name}/{path_b.name}: object {extra!r} has no row in "
                         f"{path_a.parent.name}/{path_a.name}")
    return found.to_numpy(zero_copy_only=False).astype(np.int64)


def joined_stats(a: GroupedStats | None, b: GroupedStats | None) -> MatrixStats | None:
    """The matrix stats of one image's joined rows (its intensities' columns, then its regionprops'), one range per
    feature, from the stats the parse of each table gathered: counts and ranges do not depend on the order of the
    rows, and the join puts every regionprops row in a row of its own (ids unique in both tables, none left over).
    None (validation then walks the matrix) where a stat would depend on that order (the row of a first infinity)."""
    if a is None or b is None or a.stats.infinite.any() or b.stats.infinite.any():
        return None
    first, second = a.stats, b.stats
    if first.low.shape[0] != 1 or second.low.shape[0] != 1:
        return None
    out = MatrixStats(first.n_features + second.n_features, np.zeros(0, dtype=np.int64), 1)
    for name in ("nan", "negative"):
        getattr(out, name)[:] = np.concatenate([getattr(first, name), getattr(second, name)])
    out.low[:] = np.hstack([first.low, second.low])
    out.high[:] = np.hstack([first.high, second.high])
    return out


def folder_stats(images: list[MatrixStats | None], rows: list[int], stems: Sequence[str]) -> GroupedStats | None:
    """The joined matrix's stats with a range per image (``images``: :func:`joined_stats` of each image, of ``rows``
    rows), as a parse of one table gives them (one group per image); None when an image's are missing."""
    if not images or any(s is None for s in images) or len(images) != len(rows):
        return None
    total = MatrixStats(images[0].n_features, np.repeat(np.arange(len(rows), dtype=np.int64), rows), len(rows))
    for k, image in enumerate(images):
        total.merge(image, images=np.array([k]))
    return GroupedStats(total, list(stems))


def _image_codes(stems: Sequence[str], rows: Sequence[int]) -> tuple[np.ndarray, np.ndarray] | None:
    """``first_seen_codes`` of the cells' image_id, which repeats each image's name over its rows (the images in
    order, their names distinct): validation reuses them. None when an image has no rows (it is then no code)."""
    if not all(rows):
        return None
    return np.repeat(np.arange(len(stems), dtype=np.int64), rows), np.asarray(stems, dtype=object)


# The mean size of a folder's tables from which images are parsed ahead on every core.
AHEAD_TABLE_BYTES = 1 << 14


def _image_tables(files: tuple[Header, Header]) -> tuple[Parsed, Parsed]:
    """One image's intensities and regionprops tables, parsed (in this order: a refusal of the first comes first)."""
    return _stream(files[0]), _stream(files[1])


def _parse_threads(files: Sequence[tuple[Header, Header]]) -> int:
    """Threads that parse images ahead of the join: small tables (each parsed as one piece, so that a few megabytes
    at most are parsed ahead) of some size share the cores, most of their time being pyarrow's, which lets go of the
    GIL; tables of a few rows are parsed in turn (a thread would cost more than the parse it overlaps), and a folder
    with a bigger table parses one image at a time, each table on every core."""
    if len(files) < 2:
        return 1
    sizes = [len(header.contents) if header.contents is not None else header.path.stat().st_size
             for pair in files for header in pair]
    worth = max(sizes) <= SMALL_TABLE_BYTES and sum(sizes) >= len(sizes) * AHEAD_TABLE_BYTES
    return workers() if worth else 1


def _stream(header: Header) -> Parsed:
    """One of steinbock's per-image tables, parsed."""
    roles = roles_of(header)
    return stream_columns(header, text=roles.text, numbers=roles.numbers, matrix=roles.matrix)
