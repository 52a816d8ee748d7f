"""What the preview reads from an object, with the per-image caches that keep redraws fast.

:class:`PreviewData` wraps a :class:`~cellspec_sc.CellSpec` (an AnnData from the
AnnData bridge is converted first) and computes every figure's data through
:mod:`cellspec_sc.widgets._compute`. Row indices per image, the raster bin of
every cell and the category codes are computed once and cached, so switching
the feature only costs one column read, one ``np.bincount`` and a histogram.

>>> from cellspec_sc import example
>>> d = PreviewData(example())
>>> d.image_ids, d.rows("img1").size
(['img1', 'img2'], 40)
"""

from __future__ import annotations

import math
from collections import OrderedDict
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from cellspec_sc.bridges.anndata import from_anndata
from cellspec_sc.display import CategoryStyle, category_style, robust_window, stored_style
from cellspec_sc.errors import InputError
from cellspec_sc.model import CellSpec
from cellspec_sc.validation import ValidationReport, validate
from cellspec_sc.widgets import _compute as compute

ID_COLUMNS = ("cell_id", "image_id", "sample_id")
_FEATURE_CACHE = 4
FEATURE = "__feature__"  # colour_by value of the Space panel: the selected feature
DENSITY = "__density__"  # colour_by value of the Space panel: cells per bin


def as_cellspec(obj: Any) -> CellSpec:
    """A CellSpec as is; an AnnData through ``cellspec_sc.bridges.anndata.from_anndata``.

    ``allow_modified=True``: a preview shows an AnnData as it is, also after ``sc.pp.log1p`` changed X in place.
    """
    if isinstance(obj, CellSpec):
        return obj
    if type(obj).__name__ == "AnnData":
        return from_anndata(obj, allow_modified=True)
    raise InputError(f"preview() takes a CellSpec or an AnnData from to_anndata, not a {type(obj).__name__}")


class PreviewData:
    """Cached access to one object's cells, features, channels and validation for the preview."""

    def __init__(self, x: CellSpec):
        self.x = x
        self.levels = compute.dictionary_levels(x.dictionary)
        self._features: OrderedDict[str, np.ndarray] = OrderedDict()
        self._bins: dict[str, tuple[compute.Grid, np.ndarray]] = {}
        self._codes: dict[str, tuple[np.ndarray, list[str]]] = {}
        self._report: ValidationReport | None = None

    # -- images and cells --------------------------------------------------------------------------
    @cached_property
    def _image_rows(self) -> dict[str, np.ndarray]:
        codes, uniques = pd.factorize(self.x.cells["image_id"].astype(object), use_na_sentinel=True)
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
        return {str(u): order[bounds[i]:bounds[i + 1]] for i, u in enumerate(uniques)}

    @cached_property
    def image_ids(self) -> list[str]:
        """Images of the images table (in its order), then any image only named by cells."""
        listed = [str(i) for i in self.x.images["image_id"].dropna()]
        return list(dict.fromkeys(listed + list(self._image_rows)))

    def rows(self, image_id: str) -> np.ndarray:
        """Row positions of the cells of one image (cached)."""
        return self._image_rows.get(image_id, np.zeros(0, dtype=np.int64))

    def extent(self, image_id: str) -> tuple[float, float]:
        """Image width and height in micrometres: from width_px/height_px and the pixel size where known,
        otherwise the largest centroid."""
        images = self.x.images
        row = images[images["image_id"] == image_id]
        rows = self.rows(image_id)
        data_w = _positive(np.nanmax(self._xy[0][rows])) if rows.size else 1.0
        data_h = _positive(np.nanmax(self._xy[1][rows])) if rows.size else 1.0
        if not len(row):
            return _usable(data_w, 1.0), _usable(data_h, 1.0)
        ps = _number(row, "pixel_size")
        ps_y = _number(row, "pixel_size_y")
        ps_y = ps if math.isnan(ps_y) else ps_y
        width = _number(row, "width_px") * ps
        height = _number(row, "height_px") * ps_y
        return _usable(width, data_w), _usable(height, data_h)

    @cached_property
    def _xy(self) -> tuple[np.ndarray, np.ndarray]:
        cells = self.x.cells
        return (cells["x"].to_numpy(dtype=np.float64, na_value=np.nan),
                cells["y"].to_numpy(dtype=np.float64, na_value=np.nan))

    def bins(self, image_id: str) -> tuple[compute.Grid, np.ndarray]:
        """The raster grid of an image and the bin of each of its cells (cached)."""
        if image_id not in self._bins:
            rows = self.rows(image_id)
            grid = compute.grid_for(*self.extent(image_id), rows.size)
            x, y = self._xy
            self._bins[image_id] = grid, compute.bin_index(np.nan_to_num(x[rows]), np.nan_to_num(y[rows]), grid)
        return self._bins[image_id]

    @cached_property
    def categorical_columns(self) -> list[str]:
        """cells columns that can colour the map: character, categorical or logical, identifiers excluded."""
        out = []
        for name, dtype in self.x.cells.dtypes.items():
            if name in ID_COLUMNS or name in ("x", "y"):
                continue
            if isinstance(dtype, (pd.StringDtype, pd.CategoricalDtype, pd.BooleanDtype)) or dtype in (object, bool):
                out.append(str(name))
        return out

    def codes(self, column: str) -> tuple[np.ndarray, list[str]]:
        """Category codes of every cell and the legend labels of a categorical column (cached)."""
        if column not in self._codes:
            if column not in self.categorical_columns:
                raise InputError(f"cells has no categorical column {column!r}; choose from {self.categorical_columns}")
            self._codes[column] = compute.category_codes(self.x.cells[column], self.style(column).categories)
        return self._codes[column]

    def style(self, column: str) -> CategoryStyle:
        """The category order and colours of ``column`` (stored in provenance, else the defaults): the same
        every view (Luxar, the AnnData's ``uns``, spatialdata-plot) uses."""
        return category_style(self.x.cells[column], stored_style(self.x.provenance, column))

    def label_colours(self, column: str, labels: list[str]) -> list[str]:
        """The colour of each legend label of ``column``: from the column's style, as in Luxar."""
        return compute.category_colours(labels, self.style(column).colour_map())

    # -- features ------------------------------------------------------------------------------
    def values(self, feature_id: str) -> np.ndarray:
        """One measurement column as a contiguous float64 array (a few are cached)."""
        if feature_id in self._features:
            self._features.move_to_end(feature_id)
            return self._features[feature_id]
        position = self.x.feature_position(feature_id)
        column = np.ascontiguousarray(np.asarray(self.x.measurements[:, position], dtype=np.float64))
        self._features[feature_id] = column
        if len(self._features) > _FEATURE_CACHE:
            self._features.popitem(last=False)
        return column

    def unit(self, feature_id: str | None) -> str:
        """The dictionary unit of a feature ("" for none or no feature)."""
        if feature_id is None:
            return ""
        unit = self.x.dictionary["unit"].iloc[self.x.feature_position(feature_id)]
        return "" if pd.isna(unit) else str(unit)

    def per_image(self, feature_id: str) -> dict[str, np.ndarray]:
        """The values of a feature split by image (images without cells left out)."""
        v = self.values(feature_id)
        return {i: v[self.rows(i)] for i in self.image_ids if self.rows(i).size}

    def histogram(self, feature_id: str, *, scale: str = "linear", bins: int | None = None) -> compute.Histogram:
        return compute.histogram(self.per_image(feature_id), bins=bins, scale=scale)

    def summary(self, feature_id: str) -> pd.DataFrame:
        return compute.summary_table(self.per_image(feature_id))

    def value_map(self, feature_id: str,
                  image_id: str) -> tuple[compute.Grid, compute.ValueRaster, tuple[float, float]]:
        """Raster of one feature over one image and its robust colour range."""
        grid, index = self.bins(image_id)
        values = self.values(feature_id)[self.rows(image_id)]
        return grid, compute.value_raster(index, values, grid), robust_window(values)

    def category_map(self, column: str, image_id: str) -> tuple[compute.Grid, compute.CategoryRaster,
                                                                  list[compute.LegendEntry]]:
        """Raster of a categorical column over one image, with its legend (counts within the image)."""
        grid, index = self.bins(image_id)
        codes, labels = self.codes(column)
        raster = compute.category_raster(index, codes[self.rows(image_id)], labels, grid)
        present = raster.counts > 0
        entries = compute.legend_entries(labels, raster.counts, self.label_colours(column, labels))
        return grid, raster, [e for e, keep in zip(entries, present, strict=True) if keep]

    # -- channels and validation ------------------------------------------------------------------
    def channels(self, image_id: str) -> pd.DataFrame:
        """The channel table of one image with marker_source, the number of features and a measured flag."""
        ch = self.x.channels
        table = ch[ch["image_id"] == image_id].sort_values("channel_index", kind="stable")
        d = self.x.dictionary
        intensity = d[(d["kind"] == "intensity").fillna(False).to_numpy(dtype=bool)]
        n_features = intensity.groupby(intensity["marker"].astype(object), sort=False).size()
        sources = _marker_sources(intensity)
        out = pd.DataFrame({
            "channel_index": table["channel_index"].to_numpy(),
            "channel_name": table["channel_name"].astype(object).to_numpy(),
            "marker": table["marker"].astype(object).to_numpy(),
        })
        out["marker_source"] = [sources.get(m, "") for m in out["marker"]]
        out["features"] = [int(n_features.get(m, 0)) for m in out["marker"]]
        out["measured"] = out["features"] > 0
        return out

    def unmatched_markers(self, image_id: str) -> list[str]:
        """Intensity markers of the dictionary that no channel of this image carries."""
        d = self.x.dictionary
        markers = d.loc[(d["kind"] == "intensity").fillna(False).to_numpy(dtype=bool), "marker"].dropna()
        ch = self.x.channels
        present = set(ch.loc[ch["image_id"] == image_id, "marker"].dropna().astype(object))
        return [m for m in dict.fromkeys(markers.astype(object)) if m not in present]

    def report(self) -> ValidationReport:
        """The validation report (computed once, on first use)."""
        if self._report is None:
            self._report = validate(self.x)
        return self._report


_MAX_EXTENT = 1e300  # keeps bin edges and axis limits finite


def _usable(extent: float, fallback: float) -> float:
    """A finite positive extent no larger than 1e300 um (else the fallback)."""
    value = extent if math.isfinite(extent) and extent > 0 else fallback
    return min(value, _MAX_EXTENT)


def _positive(value: float) -> float:
    return float(value) if np.isfinite(value) and value > 0 else 1.0


def _number(row: pd.DataFrame, column: str) -> float:
    if column not in row.columns:
        return math.nan
    value = row[column].iloc[0]
    return math.nan if pd.isna(value) else float(value)


def _marker_sources(intensity: pd.DataFrame) -> dict[str, str]:
    if "marker_source" not in intensity.columns:
        return {}
    pairs = intensity[["marker", "marker_source"]].dropna().astype(object).drop_duplicates()
    return {m: ", ".join(g["marker_source"]) for m, g in pairs.groupby("marker", sort=False)}
