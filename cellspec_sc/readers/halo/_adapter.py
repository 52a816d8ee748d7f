"""Read HALO object data tables: the adapter that executes a HALO plan.

Coordinates: ``XMin``, ``XMax``, ``YMin``, ``YMax`` are the object's bounding box in full-resolution pixels, and
the centroid is the box's centre, ``x_px = (XMin + XMax) / 2`` (the table has no centroid of the mask), in the
spec's frame as it is; ``x = x_px * pixel_size``. See ``docs/readers.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from cellspec_sc.readers._cells import (
    checked_cell_ids,
    flag_column,
    image_pixel_sizes,
    image_rows,
    images_frame,
    pixel_cells,
)
from cellspec_sc.readers._features import (
    channels_frame,
    dictionary_columns,
    feature_positions,
    intensity_channels,
)
from cellspec_sc.readers._pipeline import Tables, ToolAdapter
from cellspec_sc.readers._table import SEPARATORS, Parsed, check_finite_centroids, positive_area, string_column
from cellspec_sc.readers.halo._plan import ADAPTER, ADAPTER_VERSION, BOX, ID_COLUMN, TOOL, HaloPlan, plan_export


class HaloAdapter(ToolAdapter):
    """HALO's reader: images from ``Image Location``, bounding-box centres as centroids, the pixel size from the
    argument, phenotype calls and text columns kept as cells columns."""

    name, version, tool, producer = ADAPTER, ADAPTER_VERSION, TOOL, "HALO (Indica Labs)"
    reads_gzip = True  # large exports are often kept compressed
    reads_table_folders = True  # a batch export: one table per image or field

    def __init__(self, *, pixel_size=None, image_id=None, sample_id=None, marker_map=None,
                 encoding: str | None = None) -> None:
        super().__init__(marker_map, encoding)
        self.pixel_size, self.image_id, self.sample_id = pixel_size, image_id, sample_id

    def plan(self, path: Path) -> HaloPlan:
        """The plan of the table at ``path`` (see :func:`~cellspec_sc.readers.halo._plan.plan_export`)."""
        return plan_export(path, pixel_size=self.pixel_size, encoding=self.encoding)

    def tables(self, plan: HaloPlan, parsed: Parsed, dictionary: pd.DataFrame, applied: Mapping[str, str]
               ) -> Tables:
        """Cells of every image (ids checked), images with their pixel sizes, channels and parameters."""
        header = plan.header
        rows = image_rows(header, parsed, plan.image_column, self.image_id, basename=True)
        ids, codes = checked_cell_ids(header, parsed, header.find(ID_COLUMN), rows)
        sizes = image_pixel_sizes(header, rows.order, self.pixel_size, "pass pixel_size=")
        box = {header.find(c): parsed.number(header.find(c)) for c in BOX}
        for column, values in box.items():  # a refusal names the edge that is missing (the centre comes from two)
            check_finite_centroids(header.path, values, column, parsed.rows)
        x_min, x_max, y_min, y_max = box.values()
        cells = pixel_cells(header, rows, ids, (x_min + x_max) / 2, (y_min + y_max) / 2, tuple(box)[::2], sizes,
                            self.sample_id, parsed.rows)
        area = feature_positions(dictionary, kind="shape", statistic="area", compartment="cell")
        if area:
            j = area[0]
            per_row = np.array([sizes[i] for i in rows.order], dtype=np.float64)[rows.index]
            scale = 1.0 if dictionary_columns(dictionary, "unit")[0][j] == "um2" else per_row * per_row
            cells["area"] = positive_area(parsed.matrix[:, j] * scale)
        cells.update({target: string_column(parsed.arrow(name)) for name, target in plan.text_targets.items()})
        cells.update({target: flag_column(parsed.number(name)) for name, target in plan.flags.items()})
        channel_names, markers = intensity_channels(dictionary, applied)
        parameters = {
            "pixel_size": dict(sizes), "pixel_size_source": "argument", "image_id": self.image_id,
            "sample_id": self.sample_id, "marker_map": dict(self.marker_map),
            "delimiter": SEPARATORS[header.delimiter], "image_column": plan.image_column,
            "centroids": list(BOX),
            "pixel_centre": "x_px = (XMin + XMax) / 2, the centre of the bounding box (the table has no centroid)",
            "text_columns": dict(plan.text_targets), "classification_columns": dict(plan.flags),
        }
        return Tables(cells=cells, images=images_frame(rows, sizes, self.sample_id),
                      channels=channels_frame(rows.order, channel_names, markers), parameters=parameters,
                      cell_codes=codes, image_codes=(rows.index, rows.order))
