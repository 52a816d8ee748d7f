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

The folder goes through the same pipeline as a single export
(:func:`~cellspec_sc.readers.pipeline.read_export`): its header is the header of the joined table
(``Object``, the intensity columns, then the regionprops columns), every image's two tables are parsed
and joined on ``Object``, and the side files are read by :mod:`cellspec_sc.readers.steinbock_folder`.

>>> SteinbockAdapter().roles(Header(Path("s"), ",", ("Object", "CD3", "area", "centroid-0", "centroid-1"))).matrix
['CD3', 'area']
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc.errors import InputError
from cellspec_sc.model import CellSpec, empty_matrix
from cellspec_sc.readers.features import SKIMAGE_REGIONPROPS, FeatureSpec, channels_frame, clean_marker
from cellspec_sc.readers.headers import Header, read_header, require_columns
from cellspec_sc.readers.notices import listed, notice
from cellspec_sc.readers.parsing import Parsed
from cellspec_sc.readers.pieces import data_lines
from cellspec_sc.readers.pipeline import ColumnRoles, Tables, ToolAdapter, read_export
from cellspec_sc.readers.steinbock_folder import (OBJECT, Panel, has_images_csv, image_pixel_sizes, image_stems,
                                                  images_table, infos_by_stem, input_records, neighbor_pairs,
                                                  read_images_csv, read_panel)
from cellspec_sc.readers.values import check_finite_centroids, check_image_ids, positive_area, string_column
from cellspec_sc.spec import canonical_frame, vocabulary

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


class SteinbockAdapter(ToolAdapter):
    """steinbock's grammar: panel names as markers, scikit-image regionprops as shapes, centroids in pixels
    with the pixel-centre convention, one pair of tables per image joined on ``Object``.

    :meth:`header` reads the side files and checks every image's tables; the adapter keeps what it
    learnt (panel, images, pixel sizes, rows per image) for :meth:`tables`.
    """

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
        self.intensity_names: list[str] = []
        self.rows_per_image: list[int] = []

    # -- the pipeline's steps ----------------------------------------------------------------------
    def header(self, path: Path) -> Header:
        """The header of the joined table of every image (``Object``, intensities, regionprops), after
        reading ``panel.csv`` and ``images.csv`` and checking that every image has the same columns."""
        folder = path
        if not folder.is_dir():
            raise InputError(f"{folder}: not a folder; pass the steinbock output folder holding intensities/ and "
                             "regionprops/")
        self.panel = read_panel(folder / "panel.csv", self.encoding) if (folder / "panel.csv").is_file() else None
        infos = read_images_csv(folder / "images.csv", self.encoding) if has_images_csv(folder) else []
        self.stems = image_stems(folder, infos)
        self.infos = infos_by_stem(infos, self.stems)
        self.sizes, self.sizes_y, self.size_source = image_pixel_sizes(folder, self.stems, self.infos,
                                                                       self.pixel_size)
        self.files = [self._image_headers(folder, stem) for stem in self.stems]
        for files in self.files[1:]:
            _check_same_columns(folder, self.files[0], files)
        intensities, regionprops = self.files[0]
        self.intensity_names = [n for n in intensities.names if n != OBJECT]
        return Header(folder, ",", (OBJECT, *self.intensity_names, *(n for n in regionprops.names if n != OBJECT)),
                      intensities.encoding)

    def roles(self, header: Header) -> ColumnRoles:
        numbers = [c for c in CENTROIDS if c in header.names]
        return ColumnRoles(text=[OBJECT], numbers=numbers,
                           matrix=[n for n in header.names if n != OBJECT and n not in numbers])

    def parse(self, header: Header, roles: ColumnRoles) -> Parsed:
        """Every image's intensities and regionprops, parsed and joined on ``Object``, one image after another,
        each written straight into the joined matrix (allocated for the lines of the intensities files)."""
        matrix = empty_matrix(sum(data_lines(intensities.path) for intensities, _ in self.files), len(roles.matrix))
        parts, start = [], 0
        for stem, (intensities, regionprops) in zip(self.stems, self.files, strict=True):
            a = super().parse(intensities, self.roles(intensities))
            if start + a.n > matrix.shape[0]:  # never with newline-ended lines; grown rather than overrun
                grown = empty_matrix(matrix.shape[0] + a.n, matrix.shape[1])
                grown[:start] = matrix[:start]
                matrix = grown
            parts.append(self._join_image(stem, intensities, regionprops, a, matrix[start:start + a.n]))
            start += a.n
        self.rows_per_image = [p.n for p in parts]
        return Parsed(rows_read=start, rows=None,
                      text_columns={OBJECT: pa.chunked_array([c for p in parts for c in p.arrow(OBJECT).chunks],
                                                             type=pa.string())},
                      number_columns={c: np.concatenate([p.number(c) for p in parts]) for c in CENTROIDS},
                      unfiltered={}, matrix=matrix[:start],
                      counts={k: sum(p.counts[k] for p in parts) for k in parts[0].counts})

    def classify(self, header: Header, roles: ColumnRoles) -> list[FeatureSpec]:
        n = len(self.intensity_names)
        return self.classify_intensities(roles.matrix[:n]) + self.classify_regionprops(roles.matrix[n:])

    def tables(self, header, parsed, dictionary, applied, specs) -> Tables:
        folder, stems, sizes, sizes_y = header.path, self.stems, self.sizes, self.sizes_y
        per_row = np.repeat([sizes[s] for s in stems], self.rows_per_image)
        per_row_y = np.repeat([sizes_y[s] or sizes[s] for s in stems], self.rows_per_image)
        x_px = parsed.number(CENTROIDS[0]) + 0.5  # regionprops: pixel i has its centre at i
        y_px = parsed.number(CENTROIDS[1]) + 0.5
        images = np.repeat(np.asarray(stems, dtype=object), self.rows_per_image)
        cells = {"cell_id": string_column(parsed.arrow(OBJECT)), "image_id": images,
                 "sample_id": images if self.sample_id is None else np.full(len(images), self.sample_id, dtype=object),
                 "x": x_px * per_row, "y": y_px * per_row_y}
        area = np.flatnonzero(((dictionary["kind"] == "shape") & (dictionary["statistic"] == "area")).to_numpy())
        if len(area):
            cells["area"] = positive_area(parsed.matrix[:, area[0]] * per_row * per_row_y)
        cells.update({"x_px": x_px, "y_px": y_px})
        adjacency = self._adjacency(folder, parsed) if self.neighbors else None
        inputs = input_records(folder, stems, adjacency is not None)
        return Tables(cells=cells, images=images_table(stems, self.infos, sizes, sizes_y, self.sample_id),
                      channels=channels_frame(stems, *self._channels()), parameters=self._parameters(adjacency),
                      extra_inputs=inputs, adjacency=adjacency)

    # -- what the steps use ------------------------------------------------------------------------
    def classify_intensities(self, names: Sequence[str]) -> list[FeatureSpec]:
        """Every intensity column is the statistic of ``aggregation`` of the marker it is named after."""
        statistic = AGGREGATIONS[self.aggregation]
        known = set(self.panel.names) if self.panel is not None else None  # trimmed, like the columns here
        return [FeatureSpec("intensity", statistic, "a.u.", n, "cell", n.strip())
                if known is None or n.strip() in known else FeatureSpec.other(n) for n in names]

    def classify_regionprops(self, names: Sequence[str]) -> list[FeatureSpec]:
        """scikit-image region properties of the cell mask, in pixels."""
        out = []
        for name in names:
            found = SKIMAGE_REGIONPROPS.get(name)
            out.append(FeatureSpec("shape", found[0], found[1], name, "cell") if found else FeatureSpec.other(name))
        return out

    def _image_headers(self, folder: Path, stem: str) -> tuple[Header, Header]:
        intensities = read_header(folder / "intensities" / f"{stem}.csv", ",", "steinbock intensities", self.encoding)
        require_columns(intensities, "steinbock intensities", self.required)
        props_path = folder / "regionprops" / f"{stem}.csv"
        if not props_path.is_file():
            raise InputError(f"{folder.name}/regionprops/{stem}.csv: no such file; steinbock's centroids are in the "
                             "regionprops table (`steinbock measure regionprops`)")
        regionprops = read_header(props_path, ",", "steinbock regionprops", self.encoding)
        require_columns(regionprops, "steinbock regionprops", [(OBJECT,), (CENTROIDS[0],), (CENTROIDS[1],)])
        return intensities, regionprops

    def _join_image(self, stem: str, intensities: Header, regionprops: Header, a: Parsed, out: np.ndarray) -> Parsed:
        """One image's parsed intensities ``a`` joined on ``Object`` with its regionprops (rows in the order of
        the intensities table), the measurements written into ``out``."""
        b = super().parse(regionprops, self.roles(regionprops))
        ids = a.arrow(OBJECT)
        check_image_ids(intensities.path, ids, OBJECT, stem)
        order = _aligned(stem, intensities, regionprops, ids, b)
        x_raw, y_raw = (b.number(c)[order] for c in CENTROIDS)
        for values, column in ((x_raw, CENTROIDS[0]), (y_raw, CENTROIDS[1])):
            check_finite_centroids(regionprops.path, values, column, order)
        width = a.matrix.shape[1]
        out[:, :width] = a.matrix
        out[:, width:] = b.matrix[order]
        return Parsed(rows_read=a.n, rows=None, text_columns={OBJECT: ids},
                      number_columns={CENTROIDS[0]: x_raw, CENTROIDS[1]: y_raw}, unfiltered={}, matrix=out,
                      counts={k: a.counts[k] + b.counts[k] for k in a.counts})

    def _adjacency(self, folder: Path, parsed: Parsed):
        ids = parsed.arrow(OBJECT)
        ends = np.cumsum([0, *self.rows_per_image])
        found = {stem: neighbor_pairs(folder, stem, ids.slice(ends[k], ends[k + 1] - ends[k]), self.neighbor_method,
                                      self.encoding) for k, stem in enumerate(self.stems)}
        lacking = [stem for stem, frame in found.items() if frame is None]
        if lacking:
            notice(f"{folder.name}/neighbors: no <image>.csv for {len(lacking)} of {len(found)} image(s) "
                   f"({listed(lacking, quote=False, most=5)}): their cells have no adjacency "
                   "(steinbock measure neighbors writes them; neighbors=False, CLI --no-neighbors, leaves adjacency "
                   "out without this warning)")
        frames = [frame for frame in found.values() if frame is not None]
        if not frames:
            return None
        return canonical_frame(pd.concat(frames, ignore_index=True), "adjacency")

    def _channels(self) -> tuple[list[str], list[str]]:
        names = self.panel.names if self.panel is not None else self.intensity_names
        channels = self.panel.channels if self.panel is not None else self.intensity_names
        return list(channels), [clean_marker(n, self.marker_map)[0] for n in names]

    def _parameters(self, adjacency) -> dict:
        return {
            "pixel_size": self.sizes, "pixel_size_y": {s: v for s, v in self.sizes_y.items() if v is not None} or None,
            "pixel_size_source": self.size_source, "sample_id": self.sample_id, "marker_map": dict(self.marker_map),
            "aggregation": self.aggregation, "panel": self.panel is not None, "images": list(self.stems),
            "centroids": list(CENTROIDS),
            "pixel_centre": "x = (centroid-1 + 0.5) * pixel_size (regionprops puts the centre of pixel i at i)",
            "neighbors": None if adjacency is None else {
                "method": self.neighbor_method, "pairs": int(len(adjacency)),
                "shared_boundary": "0: steinbock does not measure the shared boundary"},
        }


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
    return read_export(adapter, folder)


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


def _check_same_columns(folder: Path, first: tuple[Header, Header], other: tuple[Header, Header]) -> None:
    for kind, a, b in zip(("intensities", "regionprops"), first, other, strict=True):
        if a.names != b.names:
            diff = sorted(set(a.names) ^ set(b.names)) or ["(same columns, another order)"]
            raise InputError(f"{folder.name}/{kind}/{b.path.name}: line 1: columns differ from {kind}/{a.path.name} "
                             f"({', '.join(map(str, diff[:6]))}); every image must have the same columns")
