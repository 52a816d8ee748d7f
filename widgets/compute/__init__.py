"""The numbers behind the preview's figures and tables, free of any widget or plotting code.

Everything here is a plain function of arrays and frames, vectorised so that a
redraw at a million cells stays well under a second, and unit-tested on its own:
:mod:`.features` (choosing a feature through the dictionary), :mod:`.stats` (histograms and
summaries) and :mod:`.raster` (the Space map, its colours and legend).

>>> import numpy as np
>>> h = histogram({"img1": np.array([1.0, 2.0, np.nan, 4.0])}, bins=3)
>>> h.counts["img1"].tolist(), h.n_na["img1"]
([1, 1, 1], 1)
"""

from __future__ import annotations

from cellspec_sc.widgets.compute.features import (
    LEVELS, NONE, FeatureChoice, choose_feature, dictionary_levels, levels_of, marker_compartment_overview,
)
from cellspec_sc.widgets.compute.raster import (
    CATEGORY_FIXED, MAX_CATEGORIES, MIN_SPAN_UM, NA_LABEL, OTHER, CategoryRaster, Grid, LegendEntry, ValueRaster,
    bin_index, category_codes, category_colours, category_raster, category_rgba, grid_for, legend_entries,
    nice_length, value_raster, value_rgba,
)
from cellspec_sc.widgets.compute.stats import (
    QUANTILES, Histogram, display_factor, histogram, summary_row, summary_table,
)

__all__ = [
    "CATEGORY_FIXED", "LEVELS", "MAX_CATEGORIES", "MIN_SPAN_UM", "NA_LABEL", "NONE", "OTHER", "QUANTILES",
    "CategoryRaster", "FeatureChoice", "Grid", "Histogram", "LegendEntry", "ValueRaster", "bin_index",
    "category_codes", "category_colours", "category_raster", "category_rgba", "choose_feature", "dictionary_levels",
    "display_factor", "grid_for", "histogram", "legend_entries", "levels_of", "marker_compartment_overview",
    "nice_length", "summary_row", "summary_table", "value_raster", "value_rgba",
]
