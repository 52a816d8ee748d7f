"""The preview widget driven from Python: set the controls, check the data behind the figures."""

from __future__ import annotations

import base64
import io
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from matplotlib import image as mpimg

import cellspec_sc as cs
from cellspec_sc.errors import InputError
from cellspec_sc.spec import canonical_frame
from cellspec_sc.widgets import Preview, preview
from cellspec_sc.widgets import _compute as compute
from cellspec_sc.widgets._data import DENSITY, FEATURE
from strategies import cellspecs

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _with_column(x: cs.CellSpec, feature: str, values: np.ndarray) -> cs.CellSpec:
    m = x.measurements.copy()
    m[:, x.feature_ids.index(feature)] = values
    return x.replace(measurements=m)


def _feature_options(page: str) -> list[str]:
    select = re.search(r"<select id='feature'>(.*?)</select>", page, re.S).group(1)
    return re.findall(r"<option value='([^']*)'>", select)


def _png_pixels(png: bytes) -> np.ndarray:
    return mpimg.imread(io.BytesIO(png), format="png")


# -- feature selection through the dictionary ----------------------------------------------------
def test_level_controls_narrow_each_other(x):
    w = preview(x)
    assert [v for _, v in w.kind.options] == ["intensity", "shape", "other"]
    w.marker.value = "FOXP3"
    w.compartment.value = "nucleus"
    w.statistic.value = "median"
    assert w.feature == "nucleus:FOXP3:median"
    w.kind.value = "shape"
    assert [v for _, v in w.marker.options] == [""]
    assert [v for _, v in w.compartment.options] == ["cell", "nucleus"]
    assert w.feature in x.features(kind="shape")
    w.kind.value = "other"
    assert [v for _, v in w.statistic.options] == ["detection_probability"]
    assert w.feature == "other:detection_probability"


def test_statistic_options_follow_the_dictionary():
    x = cs.example()
    keep = ~((x.dictionary["marker"] == "CD3e") & (x.dictionary["statistic"] == "median")).fillna(False)
    x = x.subset(features=keep.to_numpy(dtype=bool))
    w = preview(x)
    w.marker.value = "CD3e"
    assert [v for _, v in w.statistic.options] == ["mean"]
    w.marker.value = "FOXP3"
    assert [v for _, v in w.statistic.options] == ["mean", "median"]


def test_feature_and_image_arguments(x):
    w = preview(x, image="img2", feature="nucleus:CD3e:median")
    assert (w.image_id, w.kind.value, w.marker.value, w.compartment.value, w.statistic.value) == \
        ("img2", "intensity", "CD3e", "nucleus", "median")
    with pytest.raises(InputError, match="unknown feature_id"):
        preview(x, feature="cell:CD3e")
    with pytest.raises(InputError, match="unknown image_id"):
        preview(x, image="img9")
    with pytest.raises(InputError, match="not a list"):
        preview([1, 2])


def test_cellspec_preview_shortcut_and_plain_display(x):
    assert isinstance(x.preview(feature="cell:area"), Preview)
    assert x.preview(feature="cell:area").feature == "cell:area"
    assert "<table>" in x._repr_html_()  # a bare CellSpec still shows its summary
    assert cs.preview is preview


# -- the data behind the figures -----------------------------------------------------------------
def test_histogram_and_summary_follow_the_selected_feature(x):
    values = np.arange(x.n_cells, dtype=float)
    values[[0, 1, 50]] = np.nan
    x = _with_column(x, "cell:FOXP3:mean", values)
    w = preview(x, feature="cell:FOXP3:mean").draw()
    hist = w.histogram_data()
    img1 = (x.cells["image_id"] == "img1").to_numpy()
    assert hist.counts["img1"].sum() == img1.sum() - 2 and hist.counts["img2"].sum() == (~img1).sum() - 1
    summary = w.summary_data()
    assert summary.loc["img1", "na"] == 2 and summary.loc["img2", "na"] == 1 and summary.loc["all", "na"] == 3
    assert summary.loc["all", "min"] == 2.0 and summary.loc["all", "max"] == x.n_cells - 1
    assert summary.loc["img1", "max"] == np.nanmax(values[img1])
    before = w.histogram_image.value
    w.statistic.value = "median"
    assert w.feature == "cell:FOXP3:median"
    assert w.histogram_image.value[:8] == PNG_MAGIC and w.histogram_image.value != before


def test_log_scale_counts_positive_values(x):
    values = np.where(np.arange(x.n_cells) % 4 == 0, 0.0, 10.0 ** (np.arange(x.n_cells) % 4))
    w = preview(_with_column(x, "cell:CD3e:mean", values), feature="cell:CD3e:mean")
    w.select(scale="log")
    hist = w.histogram_data()
    assert hist.scale == "log"
    assert sum(hist.excluded.values()) == int((values <= 0).sum())
    assert sum(c.sum() for c in hist.counts.values()) == int((values > 0).sum())


def test_space_raster_sums_and_positions():
    x = cs.example(n_cells=60, n_images=1)
    values = np.linspace(1.0, 60.0, 60)
    values[5] = np.nan
    width, height = (float(x.images[c][0] * x.images["pixel_size"][0]) for c in ("width_px", "height_px"))
    cells = x.cells.copy()
    cells.loc[0, ["x", "y"]] = [0.2, 0.2]  # top-left corner
    cells.loc[1, ["x", "y"]] = [width - 0.1, height - 0.1]  # bottom-right corner of the image
    x = _with_column(x.replace(cells=cells), "cell:DAPI:mean", values)
    w = preview(x, feature="cell:DAPI:mean").draw()
    w.select(panel="Space")
    view = w.space_data()
    assert view.raster.cells.sum() == 60 and view.raster.finite.sum() == 59
    assert view.raster.sum.sum() == pytest.approx(np.nansum(values))
    corner = int((height - 0.1) // view.grid.bin_um), int((width - 0.1) // view.grid.bin_um)  # its bin, by hand
    assert view.raster.cells[0, 0] >= 1 and view.raster.cells[corner] >= 1
    assert view.grid.width == width and view.grid.height == height
    lo, hi, cmap, label = view.colour_range
    assert (lo, hi) == tuple(np.nanpercentile(values, [1.0, 99.0]))
    assert label == "cell:DAPI:mean (a.u.)"
    assert view.rgba.shape == (view.grid.ny, view.grid.nx, 4)
    assert (view.rgba[view.raster.cells == 0] == 255).all()  # empty bins white
    pixels = _png_pixels(w.space_image.value)
    assert pixels.shape[0] > 200 and len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)) > 10


def test_space_categorical_legend_counts(x):
    x = cs.example(region_layers=("tissue",))
    w = preview(x, image="img2")
    w.select(colour_by="classification", panel="Space")
    legend = {e.label: e.cells for e in w.space_data().legend}
    expected = x.cells.loc[x.cells["image_id"] == "img2", "classification"].value_counts()
    assert legend == {str(k): int(v) for k, v in expected.items()}
    assert [e.label for e in w.space_data().legend] == sorted(legend)  # the category order, not by size
    w.select(colour_by="region__tissue")
    assert {e.label for e in w.space_data().legend} == {"tumor", "stroma"}
    w.select(colour_by="density")
    assert w.space_data().raster.mean.sum() == (x.cells["image_id"] == "img2").sum()
    with pytest.raises(InputError, match="colour_by"):
        w.select(colour_by="cell_id")


def test_space_redraws_when_feature_or_image_change(x):
    w = preview(x).draw()
    w.select(panel="Space")
    first = w.space_image.value
    w.marker.value = "CD3e"
    second = w.space_image.value
    w.image.value = "img2"
    third = w.space_image.value
    assert len({first, second, third}) == 3
    assert w.space_data().image_id == "img2" and "CD3e" in w.space_data().title


def test_panels_draw_on_display_and_when_opened(x):
    w = preview(x)
    assert w.histogram_image.value == b""  # nothing is drawn before the widget is displayed
    bundle = w._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert w.histogram_image.value[:8] == PNG_MAGIC
    assert w.space_image.value == b""  # not drawn until its tab opens
    w.select(panel="Space")
    assert w.space_image.value[:8] == PNG_MAGIC


def test_channels_mark_unmeasured_and_marker_source():
    x = cs.example()
    channels = x.channels.copy()
    extra = pd.DataFrame({"image_id": ["img1"], "channel_index": [5], "channel_name": ["Hoechst"],
                          "marker": ["Hoechst"]})
    channels = canonical_frame(pd.concat([channels, extra], ignore_index=True), "channels")
    dictionary = x.dictionary.copy()
    is_cd3e = (dictionary["marker"] == "CD3e").fillna(False).to_numpy(dtype=bool)
    dictionary["marker_source"] = pd.Series(np.where(is_cd3e, "CD3", dictionary["marker"].astype(object)),
                                            dtype="string")
    x = x.replace(channels=channels, dictionary=dictionary)
    w = preview(x).draw()
    table = w.channel_data()
    assert table["channel_name"].tolist() == ["DAPI", "CD3e", "Pan-Cytokeratin", "FOXP3", "Hoechst"]
    assert table["measured"].tolist() == [True, True, True, True, False]
    assert table["features"].tolist() == [4, 4, 4, 4, 0]
    assert table.loc[table["marker"] == "CD3e", "marker_source"].item() == "CD3"
    w.select(panel="Channels")
    assert "Hoechst" in w.channels_html.value and "without measurements" in w.channels_html.value
    w.image.value = "img2"
    assert "Hoechst" not in w.channels_html.value


def test_validation_rows_failures_first():
    x = cs.example()
    cells = x.cells.copy()
    cells.loc[1, "cell_id"] = cells.loc[0, "cell_id"]
    cells.loc[3, "area"] = -1.0
    w = preview(x.replace(cells=cells)).draw()
    rows = w.validation_data()
    failed = rows.loc[rows["status"] == "fail", "name"].tolist()
    assert set(failed) == {"cells_key_unique", "cells_area_positive"}
    assert rows["status"].tolist()[: len(failed)] == ["fail"] * len(failed)
    assert len(rows) == len(cs.vocabulary().checks) + 1  # and the portability note
    w.select(panel="Validation")
    text = w.validation_html.value
    assert "FAILED" in text and text.index("cells_key_unique") < text.index("object_class")


def test_object_without_features_and_image_without_cells():
    x = cs.example(n_cells=10, n_images=2).subset(features=[])
    images = pd.concat([x.images, x.images.iloc[[0]].assign(image_id="empty")], ignore_index=True)
    x = x.replace(images=canonical_frame(images, "images"))
    w = preview(x)
    assert w.feature is None and w.histogram_data() is None
    assert w.colour_by.value == DENSITY
    w.select(image="empty", panel="Space")
    assert w.space_data().raster.cells.sum() == 0
    w.render_all()


# -- exports --------------------------------------------------------------------------------------
def test_save_png_is_the_current_view(x, tmp_path):
    w = preview(x, feature="cell:CD3e:mean")
    a = w.save_png(tmp_path / "a.png").read_bytes()
    w.select(colour_by="classification")
    b = w.save_png(tmp_path / "b.png").read_bytes()
    assert a[:8] == PNG_MAGIC and a != b
    assert _png_pixels(a).shape[:2] == (480, 1240)


def test_save_html_is_standalone(x, tmp_path):
    x = cs.example(region_layers=("tissue",))
    w = preview(x, feature="nucleus:FOXP3:mean", image="img2")
    text = w.save_html(tmp_path / "r.html", max_features=5).read_text(encoding="utf-8")
    assert "http://" not in text and "https://" not in text and "//cdn" not in text
    assert not re.search(r"<(script|link|img)[^>]*\s(src|href)=['\"](?!data:)", text)
    options = _feature_options(text)
    assert options == ["nucleus:FOXP3:mean", "cell:DAPI:mean", "cell:DAPI:median", "cell:CD3e:mean",
                           "cell:CD3e:median"]
    state = re.search(r"<script type='application/json' id='cellspec-state'>(.*?)</script>", text, re.S).group(1)
    import json

    state = json.loads(state)
    assert list(state["features"]) == options and state["image"] == "img2"
    assert set(state["maps"]) == {DENSITY, "classification", "region__tissue"}
    for entry in state["features"].values():
        assert base64.b64decode(entry["histogram"].split(",", 1)[1])[:8] == PNG_MAGIC
    assert "14 more feature(s) not embedded" in text
    assert "cellspec validation: OK" in text and "Channels of img1" in text and "Channels of img2" in text


def test_save_html_features_all_and_unknown(x, tmp_path):
    x = x.subset(features=["cell:area", "cell:CD3e:mean", "other:detection_probability"])
    w = preview(x)
    text = w.save_html(tmp_path / "r.html", features="all").read_text()
    assert _feature_options(text) == x.feature_ids
    with pytest.raises(InputError, match="nope"):
        w.save_html(tmp_path / "s.html", features=["nope"])


def test_preview_from_anndata(x):
    from cellspec_sc.bridges.anndata import to_anndata

    adata = to_anndata(x)
    adata.obs["leiden"] = pd.Categorical(np.where(np.arange(x.n_cells) % 3 == 0, "0", "1"))
    adata.X = np.log1p(adata.X)  # in place, as sc.pp.log1p does: the preview shows what the AnnData holds
    w = preview(adata, feature="cell:CD3e:mean", image="img2")
    column = x.measurements[:, x.feature_ids.index("cell:CD3e:mean")]
    assert w.summary_data().loc["all", "max"] == pytest.approx(np.log1p(column.max()))
    assert w.histogram_data().counts["img1"].sum() == (x.cells["image_id"] == "img1").sum()
    w.select(colour_by="leiden")
    img2 = np.flatnonzero((x.cells["image_id"] == "img2").to_numpy())
    expected = {"0": int((img2 % 3 == 0).sum()), "1": int((img2 % 3 != 0).sum())}
    assert {e.label: e.cells for e in w.space_data().legend} == expected


# -- any valid object ------------------------------------------------------------------------------
@settings(max_examples=15, deadline=None)
@given(x=cellspecs(max_cells=8))
def test_any_valid_object_previews(x):
    w = Preview(x)
    for image in w.data.image_ids:
        rows = (x.cells["image_id"] == image).to_numpy()
        view = w.space_data(image=image)
        assert view.raster.cells.sum() == rows.sum()
        for column in w.data.categorical_columns:
            legend = w.space_data(colour_by=column, image=image).legend
            assert sum(e.cells for e in legend) == rows.sum()
    if w.feature is not None:
        values = x.measurements[:, x.feature_ids.index(w.feature)]
        assert sum(c.sum() for c in w.histogram_data().counts.values()) == np.isfinite(values).sum()
        assert w.summary_data()["na"].iloc[-1] == np.isnan(values).sum()
    assert len(w.validation_data()) == len(cs.vocabulary().checks) + 1  # and the portability note


@settings(max_examples=5, deadline=None)
@given(x=cellspecs(max_cells=5))
def test_any_valid_object_renders(x):
    w = Preview(x)
    w.render_all()
    assert w.histogram_image.value[:8] == PNG_MAGIC and w.space_image.value[:8] == PNG_MAGIC
    w.select(colour_by=w.data.categorical_columns[0] if w.data.categorical_columns else "density", panel="Space")
    assert w.space_image.value[:8] == PNG_MAGIC


def test_feature_colour_option_is_first(x):
    assert preview(x).colour_by.value == FEATURE


def test_space_of_a_degenerate_extent_draws(tmp_path):
    """Found by hypothesis: a subnormal pixel size made matplotlib's text transforms overflow (TypeError)."""
    from cellspec_sc.widgets import _figures as figures

    grid = compute.grid_for(7.4e-321, 0.0, 1)
    rgba = np.zeros((grid.ny, grid.nx, 4))
    rgba[0, 0] = (1.0, 0.0, 0.0, 1.0)
    png = figures.space_png(grid, rgba, title="degenerate")
    assert png[:8] == PNG_MAGIC and grid.width == grid.height == compute.MIN_SPAN_UM
