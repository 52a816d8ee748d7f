"""A cluster has one colour and one place in the order everywhere, after a round trip through a cellspec
directory: scanpy's colours (``uns["leiden_colors"]`` and its plot's legend), the AnnData made again, the
preview's PNG legend, spatialdata-plot's rendered figure and luxar's viewer in headless Chromium.

Twelve leiden clusters (more than tab10 holds, so scanpy picks its 20-colour palette, not ours) fill twelve
columns of cells, cluster k in column k; the colours on screen are read at the cells' positions.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from matplotlib import image as mpimg
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex, to_rgb
from matplotlib.figure import Figure

import cellspec_sc as cs
from cellspec_sc.widgets import _figures as figures
from cellspec_sc.widgets import preview
from luxar_scenes import colours_at, viewer_page

N_CLUSTERS, ROWS = 12, 3
ORDER = [str(k) for k in range(N_CLUSTERS)]


def columns_object() -> cs.CellSpec:
    """The example's one image with its cells moved onto a grid: twelve columns of three cells."""
    x = cs.example(n_cells=N_CLUSTERS * ROWS, n_images=1, seed=0)
    width = float(x.images["width_px"].iloc[0] * x.images["pixel_size"].iloc[0])
    height = float(x.images["height_px"].iloc[0] * x.images["pixel_size"].iloc[0])
    cells = x.cells.copy()
    column, row = np.arange(len(cells)) // ROWS, np.arange(len(cells)) % ROWS
    cells["x"], cells["y"] = (column + 0.5) * width / N_CLUSTERS, (row + 0.5) * height / ROWS
    cells["area"] = 6.0
    return x.replace(cells=cells)


@pytest.fixture(scope="module")
def clustered():
    """(the AnnData scanpy coloured, the cellspec read back from a directory, scanpy's colour of each cluster)."""
    import scanpy as sc

    adata = cs.to_anndata(columns_object())
    adata.obs["leiden"] = pd.Categorical([str(k) for k in np.arange(adata.n_obs) // ROWS], categories=ORDER)
    fig = sc.pl.embedding(adata, basis="spatial", color="leiden", show=False, return_fig=True)
    legend = {t.get_text(): to_hex(h.get_facecolor()) for t, h in
              zip(fig.axes[0].get_legend().get_texts(), fig.axes[0].get_legend().legend_handles, strict=True)}
    scanpy = dict(zip(adata.obs["leiden"].cat.categories, adata.uns["leiden_colors"], strict=True))
    assert legend == scanpy  # what the plot shows is what uns holds
    return adata, scanpy


@pytest.fixture(scope="module")
def back(clustered, tmp_path_factory):
    adata, _ = clustered
    path = tmp_path_factory.mktemp("dir") / "clustered.cellspec"
    cs.from_anndata(adata).write(path)
    return cs.read(path)


def rgb255(colour: str) -> np.ndarray:
    return np.round(np.array(to_rgb(colour)) * 255)


def test_scanpy_palette_is_not_the_default(clustered):
    """Else the test could pass by every view falling back to the same default palette."""
    from cellspec_sc.display import default_colours

    _, scanpy = clustered
    assert list(scanpy.values()) != default_colours(ORDER)


def test_anndata_made_again_has_the_numeric_order_and_scanpys_colours(clustered, back):
    _, scanpy = clustered
    again = cs.to_anndata(back)
    assert list(again.obs["leiden"].cat.categories) == ORDER
    assert list(again.uns["leiden_colors"]) == [scanpy[k] for k in ORDER]
    assert back.provenance["categories"]["leiden"] == {"order": ORDER, "colours": [scanpy[k] for k in ORDER]}
    assert cs.from_anndata(again).equals(back)


def test_preview_png_legend_pixels_are_scanpys_colours_in_order(clustered, back):
    _, scanpy = clustered
    w = preview(back)
    w.select(colour_by="leiden", panel="Space")
    view = w.space_data()
    assert [e.label for e in view.legend] == ORDER  # category order, no NA entry (nothing is missing)
    png = figures.space_png(view.grid, view.rgba, title=view.title, legend=view.legend)
    image = np.round(mpimg.imread(io.BytesIO(png), format="png")[:, :, :3] * 255)
    legend_area = image[:, int(image.shape[1] * (figures.SPACE_AXES[0] + figures.SPACE_AXES[2])) + 2:]
    rows = []
    for k in ORDER:
        hits = np.all(legend_area == rgb255(scanpy[k]), axis=-1)
        assert hits.sum() >= 20, f"cluster {k}: no swatch of {scanpy[k]} in the legend"
        rows.append(np.nonzero(hits)[0].mean())
    assert np.all(np.diff(rows) > 0)  # swatches top to bottom in the category order


def test_spatialdata_plot_pixels_are_scanpys_colours(clustered, back):
    import spatialdata_plot  # noqa: F401  (registers .pl)

    _, scanpy = clustered
    sdata = cs.to_spatialdata(back)
    fig = Figure(figsize=(8, 3), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    sdata.pl.render_shapes("img1", color="leiden").pl.show(coordinate_systems="img1", ax=ax, legend_loc=None)
    fig.canvas.draw()
    rgba = np.asarray(fig.canvas.buffer_rgba())[:, :, :3].astype(float)
    centres = back.cells.groupby(back.cells["leiden"].astype(str))[["x", "y"]].first()  # micrometres: "img1"
    for k in ORDER:
        px, py = ax.transData.transform(centres.loc[k].to_numpy())
        seen = rgba[int(round(rgba.shape[0] - py)), int(round(px))]
        np.testing.assert_allclose(seen, rgb255(scanpy[k]), atol=3, err_msg=f"cluster {k}")


@pytest.mark.browser
def test_luxar_viewer_pixels_are_scanpys_colours_from_the_anndata_and_the_object(clustered, back, tmp_path):
    adata, scanpy = clustered
    centres = back.cells.groupby(back.cells["leiden"].astype(str))[["x", "y"]].first().loc[ORDER].to_numpy()
    want = np.array([to_rgb(scanpy[k]) for k in ORDER])
    for name, source in (("object", back), ("anndata", adata)):
        path = cs.to_luxar(source, tmp_path / f"{name}.luxar.zarr", layers=["category:leiden"])
        with viewer_page(path, tmp_path / f"profile-{name}") as (page, errors):
            seen = colours_at(page, "/img1", centres)
        assert errors == []
        assert np.abs(seen - want).max() < 12 / 255, (name, seen, want)
