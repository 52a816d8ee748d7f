"""How the preview writes numbers and names: whole numbers with thousands separators, an NA swatch only
when there is NA, long image names kept inside the figure."""

from __future__ import annotations

import io

import numpy as np
from matplotlib import image as mpimg
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

import cellspec_sc as cs
from cellspec_sc.display import NA_GREY, table_html
from cellspec_sc.widgets import _figures as figures
from cellspec_sc.widgets import preview


def test_the_summary_shows_a_cell_count_with_thousands_separators():
    x = cs.example(n_cells=11_200, n_images=1)
    html = table_html(preview(x).summary_data())  # what the Features tab shows
    assert "11,200" in html and "e+04" not in html
    assert "11,200 in 1 images" in repr(x)


def na_grey_pixels(png: bytes) -> int:
    image = np.round(mpimg.imread(io.BytesIO(png), format="png")[:, :, :3] * 255)
    return int(np.all(image == np.round(np.array(to_rgb(NA_GREY)) * 255), axis=-1).sum())


def test_the_map_has_an_na_swatch_only_when_a_bin_holds_only_na():
    x = cs.example(n_cells=400, n_images=1)
    feature = x.feature_ids[1]
    w = preview(x)
    clean = w.space_data(colour_by="__feature__", feature=feature)
    assert na_grey_pixels(figures.space_png(**clean.drawing())) < 5  # a few antialiased pixels, no swatch
    m = x.measurements.copy()
    m[:, 1] = np.nan  # every bin NA
    with_na = preview(x.replace(measurements=m)).space_data(colour_by="__feature__", feature=feature)
    assert na_grey_pixels(figures.space_png(**with_na.drawing())) > 50


def test_a_long_image_name_stays_inside_the_figure():
    x = cs.example(n_cells=200, n_images=2)
    long = "slide_2024-03-11_patient-017_region-04_scan-2_" + "x" * 60
    images, cells, channels = x.images.copy(), x.cells.copy(), x.channels.copy()
    for table in (images, cells, channels):
        table["image_id"] = table["image_id"].replace({"img1": long})
    w = preview(x.replace(images=images, cells=cells, channels=channels), image=long)
    fig = Figure(figsize=figures.VIEW_SIZE)
    FigureCanvasAgg(fig)
    left, right, bar = figures.VIEW_AXES
    view = w.space_data()
    figures.draw_histogram(fig.add_axes(left), w.histogram_data(), title=w.feature, unit="a.u.")
    figures.draw_space(fig, fig.add_axes(right), colourbar_rect=bar, **view.drawing())
    fig.canvas.draw()
    width = fig.bbox.width
    texts = [t for ax in fig.axes for t in (ax.title, *(ax.get_legend().get_texts() if ax.get_legend() else []))]
    assert any("…" in t.get_text() for t in texts)  # the name was shortened in the legend
    for t in texts:
        box = t.get_window_extent()
        assert box.x0 >= 0 and box.x1 <= width, (t.get_text(), box)
    histogram_right = fig.axes[0].get_window_extent().x1
    legend = fig.axes[0].get_legend().get_window_extent()
    assert legend.x1 <= histogram_right  # the histogram's legend stays inside its axes
