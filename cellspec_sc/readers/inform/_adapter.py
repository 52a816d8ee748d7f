"""Read inForm ``cell_seg_data.txt`` tables: the adapter that executes an inForm plan.

Coordinates: ``Cell X Position`` and ``Cell Y Position`` are the cell's position in the field's image, in pixels
or in microns as the export's units say (the headers' bracketed units, or ``position_unit=``), taken in the spec's
frame as they are. Pixel positions give ``x = position * pixel_size``; micron positions are kept as written and
give ``x_px = position / pixel_size``. See ``docs/readers.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from cellspec_sc.readers._cells import checked_cell_ids, image_pixel_sizes, image_rows, images_frame, pixel_cells
from cellspec_sc.readers._features import (
    channels_frame,
    dictionary_columns,
    feature_positions,
    intensity_channels,
)
from cellspec_sc.readers._pipeline import Tables, ToolAdapter
from cellspec_sc.readers._table import SEPARATORS, Parsed, positive_area, string_column
from cellspec_sc.readers.inform._plan import (
    ADAPTER,
    ADAPTER_VERSION,
    CENTROIDS,
    ID_COLUMN,
    NULLS,
    TOOL,
    InformPlan,
    percent_value,
    plan_export,
)


class InformAdapter(ToolAdapter):
    """inForm's reader: images from ``Sample Name``, positions in pixels or microns, ``#N/A`` as missing,
    percentages written as text read as numbers, phenotypes and tissue categories kept as cells columns."""

    name, version, tool, producer = ADAPTER, ADAPTER_VERSION, TOOL, "inForm (Akoya Biosciences)"
    reads_gzip = True  # large exports are often kept compressed
    reads_table_folders = True  # a batch export: one table per image or field

    def __init__(self, *, pixel_size=None, position_unit: str | None = None, image_id=None, sample_id=None,
                 marker_map=None, encoding: str | None = None) -> None:
        super().__init__(marker_map, encoding)
        self.pixel_size, self.position_unit = pixel_size, position_unit
        self.image_id, self.sample_id = image_id, sample_id

    def plan(self, path: Path) -> InformPlan:
        """The plan of the table at ``path`` (see :func:`~cellspec_sc.readers.inform._plan.plan_export`)."""
        return plan_export(path, pixel_size=self.pixel_size, position_unit=self.position_unit,
                           encoding=self.encoding)

    def tables(self, plan: InformPlan, parsed: Parsed, dictionary: pd.DataFrame, applied: Mapping[str, str]
               ) -> Tables:
        """Cells of every field (ids checked), images with their pixel sizes, channels and parameters."""
        header = plan.header
        rows = image_rows(header, parsed, plan.image_column, self.image_id)
        ids, codes = checked_cell_ids(header, parsed, header.find(ID_COLUMN), rows)
        sizes = image_pixel_sizes(header, rows.order, self.pixel_size, "pass pixel_size=")
        per_row = np.array([sizes[i] for i in rows.order], dtype=np.float64)[rows.index]
        columns = tuple(header.find(c) for c in CENTROIDS)
        x, y = (parsed.number(c) for c in columns)
        microns = plan.position_unit == "microns"
        cells = pixel_cells(header, rows, ids, x / per_row if microns else x, y / per_row if microns else y,
                            columns, sizes, self.sample_id, parsed.rows)
        if microns:  # the positions as written
            cells["x"], cells["y"] = x, y
        area = feature_positions(dictionary, kind="shape", statistic="area", compartment="cell")
        if area:
            j = area[0]
            scale = 1.0 if dictionary_columns(dictionary, "unit")[0][j] == "um2" else per_row * per_row
            cells["area"] = positive_area(parsed.matrix[:, j] * scale)
        cells.update({target: string_column(parsed.arrow(name)) for name, target in plan.text_targets.items()})
        cells.update({target: percent_value(parsed.arrow(name), (header.path.name, name))
                      for name, target in plan.percents.items()})
        channel_names, markers = intensity_channels(dictionary, applied)
        parameters = {
            "pixel_size": dict(sizes), "pixel_size_source": "argument", "position_unit": plan.position_unit,
            "position_unit_source": plan.unit_source, "image_id": self.image_id, "sample_id": self.sample_id,
            "marker_map": dict(self.marker_map), "delimiter": SEPARATORS[header.delimiter],
            "image_column": plan.image_column, "centroids": list(columns), "missing_values": list(NULLS),
            "pixel_centre": "the positions as written (no shift)",
            "text_columns": dict(plan.text_targets), "percent_columns": dict(plan.percents),
        }
        return Tables(cells=cells, images=images_frame(rows, sizes, self.sample_id),
                      channels=channels_frame(rows.order, channel_names, markers), parameters=parameters,
                      cell_codes=codes, image_codes=(rows.index, rows.order))
