"""Read CellProfiler ExportToSpreadsheet object tables: the adapter that executes a CellProfiler plan.

Coordinates: ``Location_Center_X`` is the mean column index of the object's pixels (the centre of pixel ``i`` is
at ``i``, as in scikit-image); in the spec's frame that pixel's centre is at ``i + 0.5``, hence
``x_px = Location_Center_X + 0.5`` and ``x = x_px * pixel_size``. Images: ``ImageNumber`` joined with the per-image
table's first ``FileName_*`` column (else the number itself). Contacts: the ``Neighbors`` rows of
``Object_relationships.csv`` between objects of the table, kept only when they are touching ones. See
``docs/readers.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from cellspec_sc.errors import InputError
from cellspec_sc.readers._cells import (
    ImageRows,
    checked_cell_ids,
    grouped_rows,
    image_pixel_sizes,
    images_frame,
    pixel_cells,
)
from cellspec_sc.readers._features import channels_frame, feature_positions, intensity_channels
from cellspec_sc.readers._pipeline import Tables, ToolAdapter
from cellspec_sc.readers._table import (
    Parsed,
    notice,
    positive_area,
    read_as_text,
    read_header,
    require_columns,
    string_column,
)
from cellspec_sc.readers.cellprofiler._plan import (
    ADAPTER,
    ADAPTER_VERSION,
    IMAGE_NUMBER,
    NEIGHBOUR_METHODS,
    OBJECT_NUMBER,
    RELATIONSHIP_COLUMNS,
    TOOL,
    CellProfilerPlan,
    plan_export,
)
from cellspec_sc.spec import canonical_frame, vocabulary


class CellProfilerAdapter(ToolAdapter):
    """CellProfiler's reader: one object table, images named from the per-image table, pixel centroids with the
    pixel-centre convention, touching neighbours as adjacency."""

    name, version, tool, producer = ADAPTER, ADAPTER_VERSION, TOOL, "CellProfiler"

    def __init__(self, *, pixel_size=None, objects: str | None = None, compartment: str | None = None,
                 image_table=None, relationships=None, neighbors: bool = True, neighbors_method: str | None = None,
                 sample_id=None, marker_map=None, encoding: str | None = None) -> None:
        super().__init__(marker_map, encoding)
        if compartment is not None and compartment not in vocabulary().compartments:
            raise InputError(f"compartment={compartment!r}: one of {', '.join(vocabulary().compartments)}")
        if neighbors_method is not None and neighbors_method not in vocabulary().adjacency_methods:
            raise InputError(f"neighbors_method={neighbors_method!r}: one of "
                             f"{', '.join(vocabulary().adjacency_methods)} (spec section 7)")
        self.pixel_size, self.objects, self.compartment = pixel_size, objects, compartment
        self.image_table, self.relationships = image_table, relationships
        self.neighbors, self.neighbors_method, self.sample_id = neighbors, neighbors_method, sample_id

    def plan(self, path: Path) -> CellProfilerPlan:
        """The plan of the object table at ``path`` (see :func:`~cellspec_sc.readers.cellprofiler._plan.plan_export`).
        """
        return plan_export(path, pixel_size=self.pixel_size, objects=self.objects, compartment=self.compartment,
                           image_table=self.image_table, relationships=self.relationships, encoding=self.encoding)

    def tables(self, plan: CellProfilerPlan, parsed: Parsed, dictionary: pd.DataFrame, applied: Mapping[str, str]
               ) -> Tables:
        """Cells of every image (ids checked), images with their pixel sizes, channels, adjacency, parameters."""
        header = plan.header
        index, distinct = grouped_rows(header, parsed, IMAGE_NUMBER)
        names, name_source = image_names(plan.image_table, distinct, self.encoding)
        order = [names[d] for d in distinct]
        rows = ImageRows(pa.array(order, type=pa.string()).take(pa.array(index)), order, index)
        ids, codes = checked_cell_ids(header, parsed, OBJECT_NUMBER, rows)
        sizes = image_pixel_sizes(header, order, self.pixel_size, "pass pixel_size=")
        per_row = np.array([sizes[i] for i in order], dtype=np.float64)[rows.index]
        x_raw, y_raw = (parsed.number(c) for c in plan.centroids)
        cells = pixel_cells(header, rows, ids, x_raw + 0.5, y_raw + 0.5, plan.centroids, sizes, self.sample_id,
                            parsed.rows)
        if plan.compartment == "cell":
            area = feature_positions(dictionary, kind="shape", statistic="area")
            if area:
                cells["area"] = positive_area(parsed.matrix[:, area[0]] * per_row * per_row)
        cells.update({target: string_column(parsed.arrow(name)) for name, target in plan.metadata.items()})
        adjacency, neighbours = self._adjacency(plan, names, rows, ids) if self.neighbors else (None, None)
        channel_names, markers = intensity_channels(dictionary, applied)
        parameters = {
            "pixel_size": dict(sizes), "pixel_size_source": "argument", "objects": plan.object_name,
            "compartment": plan.compartment, "compartment_source": plan.compartment_source,
            "image_table": None if plan.image_table is None else plan.image_table.name,
            "image_id_source": name_source, "sample_id": self.sample_id, "marker_map": dict(self.marker_map),
            "centroids": list(plan.centroids),
            "pixel_centre": f"x = ({plan.centroids[0]} + 0.5) * pixel_size (CellProfiler puts the centre of pixel i "
                            "at i)",
            "metadata_columns": dict(plan.metadata), "neighbors": neighbours,
        }
        inputs = [p for p in (plan.image_table, plan.relationships if adjacency is not None else None)
                  if p is not None]
        return Tables(cells=cells, images=images_frame(rows, sizes, self.sample_id),
                      channels=channels_frame(order, channel_names, markers), parameters=parameters,
                      extra_inputs=inputs, adjacency=adjacency, cell_codes=codes, image_codes=(rows.index, order))

    def _adjacency(self, plan: CellProfilerPlan, names: Mapping[str, str], rows: ImageRows, ids: pa.Array
                   ) -> tuple[pd.DataFrame | None, dict | None]:
        """The touching neighbours of the table's objects (``rows``: their images, ``ids``: their ids), and what was
        done (provenance); other neighbours are left out with a warning that says why."""
        if plan.relationships is None:
            return None, None
        name = plan.header.path.name
        methods = set(plan.neighbour_methods)
        if methods and not methods <= set(NEIGHBOUR_METHODS):
            other = sorted(methods - set(NEIGHBOUR_METHODS))
            notice(f"{name}: the neighbours were measured as {', '.join(map(repr, other))} (MeasureObjectNeighbors: "
                   "'Expanded' joins objects expanded until they touch, a number is a distance limit in pixels), "
                   "which no adjacency method of the spec (mask_touching, polygon_intersection, delaunay) describes; "
                   "the contacts are left out")
            return None, {"left_out": other}
        if methods:
            method, source = NEIGHBOUR_METHODS[methods.pop()], "Neighbors_*_Adjacent columns"
        elif self.neighbors_method is not None:
            method, source = self.neighbors_method, "argument"
        else:
            notice(f"{name}: the table has no Neighbors_*_<method> column, so nothing says how the neighbours of "
                   f"{plan.relationships.name} were measured; they are left out: pass neighbors_method= (e.g. "
                   "'mask_touching' for MeasureObjectNeighbors' Adjacent) to keep them")
            return None, {"left_out": "method unknown"}
        known = pd.MultiIndex.from_arrays([rows.ids.to_numpy(zero_copy_only=False), ids.to_numpy(zero_copy_only=False)])
        frame = neighbour_pairs(plan.relationships, plan.object_name, names, method, self.encoding, known)
        if frame is None:
            return None, None
        return frame, {"method": method, "method_source": source, "pairs": int(len(frame)),
                       "shared_boundary": "0: CellProfiler does not measure the shared boundary"}


def image_names(table: Path | None, numbers: list[str], encoding: str | None) -> tuple[dict[str, str], str]:
    """ImageNumber -> image id: the per-image table's first ``FileName_*`` column (when every image has one row there
    and a distinct name), else the number itself (said in a warning when the table is there)."""
    fallback = ({n: n for n in numbers}, "ImageNumber")
    if table is None:
        return fallback
    header = read_header(table, ",", f"{TOOL} per-image", encoding)
    require_columns(header, f"{TOOL} per-image", ((IMAGE_NUMBER,),))
    files = [n for n in header.names if n.startswith("FileName_")]
    if not files:
        return fallback
    frame = read_as_text(header, [IMAGE_NUMBER, files[0]]).to_pandas()
    repeated = frame[IMAGE_NUMBER][frame[IMAGE_NUMBER].duplicated()]
    if len(repeated):  # e.g. the per-image tables of two batches joined: which row names the image?
        number = repeated.iloc[0]
        rows = [i + 2 for i in np.flatnonzero((frame[IMAGE_NUMBER] == number).to_numpy())]
        notice(f"{table.name}: ImageNumber {number!r} has {len(rows)} rows (lines {', '.join(map(str, rows[:5]))}); "
               "images are named by ImageNumber")
        return fallback
    found = dict(zip(frame[IMAGE_NUMBER].astype(str), frame[files[0]], strict=True))
    names = {n: found.get(n) for n in numbers}
    values = list(names.values())
    if any(v is None or v != v or not str(v).strip() for v in values) or len(set(values)) < len(values):
        notice(f"{table.name}: column {files[0]!r} does not name every image once; images are named by ImageNumber")
        return fallback
    return {n: str(v) for n, v in names.items()}, f"{table.name} column {files[0]!r}"


def neighbour_pairs(path: Path, objects: str, names: Mapping[str, str], method: str, encoding: str | None,
                    known: pd.MultiIndex) -> pd.DataFrame | None:
    """The ``Neighbors`` rows of ``path`` between two objects of ``objects`` in one image, as adjacency rows (each
    unordered pair once, in byte order; ``shared_boundary`` 0). An object that is not among the cells (``known``:
    their (image, id) pairs) is refused naming the line."""
    header = read_header(path, ",", f"{TOOL} relationships", encoding)
    require_columns(header, f"{TOOL} relationships", [(c,) for c in RELATIONSHIP_COLUMNS])
    frame = read_as_text(header, list(RELATIONSHIP_COLUMNS)).to_pandas()
    keep = ((frame["Relationship"] == "Neighbors") & (frame["First Object Name"] == objects)
            & (frame["Second Object Name"] == objects) & (frame["First Image Number"] == frame["Second Image Number"])
            & (frame["First Object Number"] != frame["Second Object Number"]))
    frame = frame[keep]
    if frame.empty:
        return None
    first, second = (frame[c].to_numpy(dtype=object) for c in ("First Object Number", "Second Object Number"))
    low = np.where(first.astype(str) < second.astype(str), first, second)
    high = np.where(first.astype(str) < second.astype(str), second, first)
    images = frame["First Image Number"].map(lambda n: names.get(n, n)).to_numpy(dtype=object)
    for column, values in (("First Object Number", first), ("Second Object Number", second)):
        missing = ~pd.MultiIndex.from_arrays([images, values]).isin(known)
        if missing.any():
            at = int(np.flatnonzero(missing)[0])
            raise InputError(f"{path.name}: line {int(frame.index[at]) + 2}, column {column!r}: object "
                             f"{values[at]!r} of image {images[at]!r} is not in the {objects} table")
    pairs = pd.DataFrame({"image_id": images, "cell_id_a": low, "cell_id_b": high}).drop_duplicates()
    pairs["shared_boundary"] = 0.0
    pairs["method"] = method
    return canonical_frame(pairs.reset_index(drop=True), "adjacency")
