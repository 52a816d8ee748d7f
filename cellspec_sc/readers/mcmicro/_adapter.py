"""Read MCMICRO ``mcquant`` single-cell tables: the adapter that executes an mcquant plan.

Everything is in pixels of the full-resolution image. ``X_centroid`` is scikit-image's
``regionprops`` ``centroid[1]``, the mean column index of the label's pixels, so the centre of pixel
``i`` is at ``i``; in the spec's frame (section 8) that pixel's centre is at ``i + 0.5``, hence
``x = (X_centroid + 0.5) * pixel_size`` and ``x_px = X_centroid + 0.5``. See ``docs/readers.md``.
"""

from __future__ import annotations

import copy
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from cellspec_sc.errors import InputError
from cellspec_sc.model import input_record
from cellspec_sc.readers._features import channels_frame, clean_marker, feature_positions, intensity_channels
from cellspec_sc.readers._pipeline import Tables, ToolAdapter
from cellspec_sc.readers._table import (
    Header,
    Parsed,
    check_finite_centroids,
    check_image_ids,
    constant_strings,
    first_line_where,
    positive_area,
    string_column,
)
from cellspec_sc.readers.mcmicro._plan import (
    ADAPTER,
    ADAPTER_VERSION,
    CENTROID_LAYOUTS,
    CENTROIDS,
    ID_COLUMN,
    OLD_CENTROIDS,
    TOOL,
    McmicroPlan,
    OmePixels,
    plan_export,
)
from cellspec_sc.readers.mcmicro._project import MARKERS, compartment_groups, project_files


class McquantAdapter(ToolAdapter):
    """mcquant's reader: the image and mask from the file name, pixel centroids with scikit-image's pixel-centre
    convention, the pixel size from an argument or OME-XML, channels from ``markers.csv``."""

    name, version, tool, producer = ADAPTER, ADAPTER_VERSION, TOOL, "mcquant (MCMICRO)"
    reads_gzip = True  # cycif pipelines store tables as <image>--<segmentation>_<mask>.csv.gz
    reads_table_folders = True  # a TMA's cores: one table per core
    found: tuple[str, ...] = ()
    """The side files found in the MCMICRO project folder (relative paths), set by :meth:`located`."""

    def __init__(self, *, pixel_size=None, image_id=None, sample_id=None, marker_map=None,
                 markers_csv: str | os.PathLike | None = None, image: str | os.PathLike | None = None,
                 strict: bool = False, encoding: str | None = None) -> None:
        super().__init__(marker_map, encoding)
        self.pixel_size, self.image_id, self.sample_id = pixel_size, image_id, sample_id
        self.markers_csv, self.image, self.strict = markers_csv, image, strict

    def located(self, path: Path) -> tuple[McquantAdapter, Path]:
        """The table to read (a project folder's one table) and, when it is in an MCMICRO project folder, a copy
        of this adapter that takes the side files its options left out from the folder (see
        :mod:`~cellspec_sc.readers.mcmicro._project`)."""
        files = project_files(path, markers_csv=self.markers_csv, image=self.image, pixel_size=self.pixel_size)
        if not files.found:
            return self, files.table
        adapter = copy.copy(self)
        adapter.markers_csv, adapter.image, adapter.found = files.markers_csv, files.image, files.found
        return adapter, files.table

    def table_groups(self, tables: Sequence[Path]) -> list[list[Path]]:
        """The tables of a folder by the compartment of their mask (``cell`` first), when they are an mcquant run
        with several masks (see :func:`~cellspec_sc.readers.mcmicro._project.compartment_groups`): their objects
        are joined by cell id."""
        return compartment_groups(tables) or [list(tables)]

    def plan(self, path: Path) -> McmicroPlan:
        """The plan of the table at ``path`` (see :func:`~cellspec_sc.readers.mcmicro._plan.plan_export`)."""
        plan = plan_export(path, pixel_size=self.pixel_size, markers_csv=self.markers_csv, image=self.image,
                           strict=self.strict, encoding=self.encoding)
        found_image = [f for f in self.found if f != MARKERS]
        if plan.ome is not None and self.pixel_size is None and found_image:
            plan = replace(plan, pixel_size_source=f"OME-XML PhysicalSizeX of {found_image[0]} (found in the "
                                                   "project folder)")
        return plan

    def tables(self, plan: McmicroPlan, parsed: Parsed, dictionary: pd.DataFrame, applied: Mapping[str, str]
               ) -> Tables:
        """Cells of the one image (ids checked), the image with its pixel size, channels and parameters."""
        header = plan.header
        path, n = header.path, parsed.n
        ps, ps_y = plan.pixel_size, plan.pixel_size_y
        cell_ids = parsed.arrow(ID_COLUMN)
        image_name = self.image_id if self.image_id is not None else plan.file_image
        cell_codes = check_image_ids(path, cell_ids, ID_COLUMN, image_name)
        sample = self.sample_id if self.sample_id is not None else image_name
        x_raw, y_raw, centroid_cols = _raw_centroids(header, parsed)

        x_px, y_px = x_raw + 0.5, y_raw + 0.5  # regionprops: pixel i has its centre at i; the spec: at i + 0.5
        cells = {"cell_id": string_column(cell_ids), "image_id": string_column(constant_strings(image_name, n)),
                 "sample_id": string_column(constant_strings(sample, n)), "x": x_px * ps, "y": y_px * (ps_y or ps)}
        area = _cell_area(dictionary, parsed.matrix, plan.shape_compartment, ps * (ps_y or ps))
        if area is not None:
            cells["area"] = area
        cells.update({"x_px": x_px, "y_px": y_px})

        channel_names, markers = self._channels(plan, dictionary, applied)
        image_record = input_record(self.image) if self.image is not None else None
        images_table = _images_table(image_name, self.sample_id, ps, ps_y, plan.ome, image_record)
        parameters = {
            "pixel_size": ps, "pixel_size_y": ps_y, "pixel_size_source": plan.pixel_size_source,
            "image_id": self.image_id,
            "sample_id": self.sample_id, "marker_map": dict(self.marker_map),
            "markers_csv": None if self.markers_csv is None else Path(self.markers_csv).name,
            "markers_removed": list(plan.removed),
            "image": None if self.image is None else Path(self.image).name,
            "found_in_project": list(self.found),
            "image_pixel_size": None if plan.ome is None else plan.ome.pixel_size,
            "mask": plan.file_mask, "compartment": plan.compartment, "shape_compartment": plan.shape_compartment,
            "centroids": centroid_cols,
            "pixel_centre": f"x = ({centroid_cols[0]} + 0.5) * pixel_size (regionprops puts the centre of pixel i "
                            "at i)",
        }
        return Tables(cells=cells, images=images_table, channels=channels_frame([image_name], channel_names, markers),
                      parameters=parameters, cell_codes=cell_codes, image_codes=(np.zeros(n, np.int64), [image_name]),
                      extra_inputs=[p for p in (self.markers_csv, image_record) if p is not None])

    def _channels(self, plan: McmicroPlan, dictionary: pd.DataFrame, applied: Mapping[str, str]
                  ) -> tuple[list[str], list[str]]:
        if plan.channel_names is None:
            return intensity_channels(dictionary, applied)
        markers = [clean_marker(n, self.marker_map)[0] for n in plan.channel_names]
        repeated = sorted(m for m, count in Counter(markers).items() if count > 1)
        if repeated:
            raise InputError(f"{Path(self.markers_csv).name}: marker_map gives several channels the name(s) "
                             f"{', '.join(map(repr, repeated))}; markers must be unique per image")
        return list(plan.channel_names), markers



def _raw_centroids(header: Header, parsed: Parsed) -> tuple[np.ndarray, np.ndarray, list[str]]:
    path = header.path
    layouts = [list(layout) for layout in CENTROID_LAYOUTS if all(c in header.names for c in layout)]
    if not layouts:
        raise InputError(f"{path.name}: line 1: no complete pair of centroid columns; mcquant writes "
                         f"{' or '.join(' and '.join(map(repr, layout)) for layout in CENTROID_LAYOUTS)}")
    cols = layouts[0]
    x, y = (parsed.number(c) for c in cols)
    for values, column in ((x, cols[0]), (y, cols[1])):
        check_finite_centroids(path, values, column, None)
    if cols == list(CENTROIDS) and all(c in header.names for c in OLD_CENTROIDS):
        for new, old in zip(CENTROIDS, OLD_CENTROIDS, strict=True):
            a, b = parsed.number(new), parsed.number(old)
            bad = ~(np.abs(a - b) <= 0.5)
            if bad.any():
                raise InputError(f"{path.name}: line {first_line_where(bad)}: {new!r} and {old!r} disagree by more "
                                 "than half a pixel; the file mixes coordinate frames")
        cols += list(OLD_CENTROIDS)
    return x, y, cols


def _cell_area(dictionary, matrix: np.ndarray, shape_compartment: str, pixel_area: float) -> np.ndarray | None:
    if shape_compartment != "cell":
        return None  # a nucleus or ring mask's Area is not the whole-cell area
    hit = feature_positions(dictionary, kind="shape", statistic="area")
    if not hit:
        return None
    return positive_area(matrix[:, hit[0]] * pixel_area)


def _images_table(image_name: str, sample_id: str | None, ps: float, ps_y: float | None, ome: OmePixels | None,
                  record: dict | None) -> dict[str, list]:
    table: dict[str, list] = {"image_id": [image_name],
                              "sample_id": [sample_id if sample_id is not None else image_name],
                              "pixel_size": [ps]}
    if ps_y is not None:
        table["pixel_size_y"] = [ps_y]
    if ome is not None:
        table["width_px"] = [ome.width_px]
        table["height_px"] = [ome.height_px]
    if record is not None and not record["path_basename"].lower().endswith(".xml"):  # not a companion .ome.xml
        table["source_image"] = [record["path_basename"]]
        table["source_image_sha256"] = [record["sha256"]]
    return table
