"""A class has one colour everywhere: the preview widget's Space legend and map use the colours the Luxar
scene gives the same category layer, whatever the counts per image."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import to_hex

import cellspec_sc as cs
from cellspec_sc.bridges.luxar._colour import category_colouring
from cellspec_sc.bridges.luxar._input import scene_input
from cellspec_sc.widgets._data import PreviewData


def luxar_colours(x, column: str) -> dict[str, str]:
    """The colour of each category in a Luxar scene's category layer, as the bridge computes it."""
    style, codes = scene_input(x).category_column(column)
    colouring = category_colouring(column, style, codes)
    return {c: to_hex(rgb) for c, rgb in zip(colouring.categories, colouring.palette, strict=True)}


def test_widget_legend_colours_equal_the_luxar_scene_in_every_image():
    x = cs.example(n_cells=3000, n_images=2, seed=3)
    expected = luxar_colours(x, "classification")
    data = PreviewData(x)
    for image in x.images["image_id"]:
        _, _, legend = data.category_map("classification", image)
        assert len(legend) >= 3
        assert {e.label: e.colour for e in legend} == {e.label: expected[e.label] for e in legend}


def test_most_frequent_class_does_not_take_the_first_colour():
    """Counts differ per image; a colour that followed the count order would change between images."""
    x = cs.example(n_cells=80, seed=0)
    cells = x.cells.copy()
    cells["group"] = np.where(np.arange(len(cells)) < 60, "zeta", "alpha")  # zeta most frequent
    x = cs.CellSpec(cells=cells, measurements=x.measurements, dictionary=x.dictionary, images=x.images,
                    channels=x.channels, provenance=x.provenance)
    data = PreviewData(x)
    colours = dict(zip(["alpha", "zeta"], data.label_colours("group", ["alpha", "zeta"]), strict=True))
    assert colours == luxar_colours(x, "group")
    assert colours["alpha"] == "#1f77b4"  # first in byte order, whatever its count
