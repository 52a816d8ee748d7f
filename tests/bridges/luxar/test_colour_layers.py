"""Colour layers: feature and marker values through a window and a linear-light colormap, categories in
linear light, NA in grey, one 'colour by' dimension with a legend per layer."""

from __future__ import annotations

import re

import luxar
import numpy as np
import pandas as pd
import pytest
import zarr

import cellspec_sc as cs
from cellspec_sc.bridges.luxar._colour import NA_COLOUR, colormap_rgb, linear_lut, linear_rgb, stored_scalars
from cellspec_sc.bridges.luxar._scene import SHARPNESS
from cellspec_sc.display import category_rgb
from luxar_scenes import FEATURE, cells_object, cells_of, points_node, quantum, ramp, ramp_object


def test_feature_scalars_window_lut_and_na(tmp_path):
    frame, values = ramp([0.0, 100.0, 200.0, 300.0, 400.0], image="a")
    values[[0, 4]] = np.nan
    x = cells_object({"a": (500.0, 300.0)}, frame, values)
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", layers=[f"feature:{FEATURE}"], window=(50.0, 350.0))
    node = points_node(path, "a/a.feature_cell_CD3e_mean/cells")
    want = pd.Series(values, index=frame["cell_id"]).loc[node["keys"]].to_numpy()
    np.testing.assert_allclose(node["scalars"], np.clip(want, 50.0, 350.0), atol=quantum(node["group"]["scalars"]))
    group = luxar.LuxarScene.load(path).get_group("a/a.feature_cell_CD3e_mean")
    assert group["layer"] is True  # the Layers-panel entry carries the window as its gain
    assert -group["offset"] / group["intensity"] == pytest.approx(50.0)
    assert (1 - group["offset"]) / group["intensity"] == pytest.approx(350.0)
    lut = np.asarray(node["group"]["colormap_lut"][:])
    np.testing.assert_array_equal(lut, linear_lut("viridis"))
    assert node["attrs"]["colormap"] == "custom"
    assert node["group"]["sharpnesses"].attrs["encoding"]["value"] == [SHARPNESS]  # crisp discs
    assert all(label.endswith(f"= {v:.6g}") for label, v in zip(node["labels"], want, strict=True))
    na = points_node(path, "a/a.feature_cell_CD3e_mean.NA")
    assert sorted(na["keys"]) == ["a-0", "a-4"] and all(label.endswith(" = NA") for label in na["labels"])
    np.testing.assert_allclose(na["colors"], [linear_rgb(NA_COLOUR)] * 2, atol=1 / 255)


def test_stored_scalars_use_the_gain_or_window_units():
    scalars, intensity, offset = stored_scalars(np.array([-5.0, 2.0, 9.0]), (0.0, 4.0))
    assert scalars.tolist() == [0.0, 2.0, 4.0] and (intensity, offset) == (0.25, 0.0)
    scalars, intensity, offset = stored_scalars(np.array([1e6, 1e6 + 5.0]), (1e6, 1e6 + 10.0))  # |offset| > 10
    assert scalars.tolist() == [1.0, 1.5] and (intensity, offset) == (1.0, -1.0)


def test_viridis_lut_is_linear_light_and_unknown_colormaps_are_refused(tmp_path):
    srgb = colormap_rgb("viridis", np.array([0.0]))[0]
    assert np.allclose(linear_lut("viridis")[0] / 255, linear_rgb(srgb), atol=1 / 255)
    with pytest.raises(cs.InputError, match="unknown colormap 'nope'"):
        cs.to_luxar(ramp_object([1.0, 2.0]), tmp_path / "s.luxar.zarr", layers=["marker:CD3e"], colormap="nope")


def test_marker_layer_picks_the_cell_mean_feature(tmp_path, x):
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", layers=["marker:FOXP3"])
    node = points_node(path, "img1/img1.marker_FOXP3/cells")
    want = x.measurement_frame(["cell:FOXP3:mean"])["cell:FOXP3:mean"][cells_of(x, "img1").index.get_indexer(
        node["keys"])].to_numpy()
    lo, hi = np.percentile(x.measurement_frame(["cell:FOXP3:mean"]).to_numpy(), [1, 99])
    np.testing.assert_allclose(node["scalars"], np.clip(want, lo, hi), atol=quantum(node["group"]["scalars"]))


def test_colour_layers_are_values_of_one_dimension_each_with_its_legend(tmp_path):
    x = ramp_object([1.0, 2.0, 3.0])
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", layers=["cells", "marker:CD3e", "category:classification"])
    scene = luxar.LuxarScene.load(path)
    dims = {d["name"]: d for d in scene.root_attrs["scene_dimensions"]["dimensions"]}
    # 'cells' (coloured by classification) and category:classification are one layer
    assert dims["colour by"]["categories"] == ["classification", f"CD3e ({FEATURE})"]
    assert dims["classification"]["categories"] == ["all", "T cell", "Tumor"]
    root = zarr.open_group(str(path), mode="r")
    legends = {k: dict(root[f"overlays/{k}"].attrs) for k in ("legend_category_classification", "legend_marker_CD3e")}
    assert legends["legend_category_classification"]["visible_range"] == {"colour by": 0}
    assert legends["legend_marker_CD3e"]["visible_range"] == {"colour by": 1}
    assert "linear-gradient" in legends["legend_marker_CD3e"]["html"]
    assert "T cell (5)" in legends["legend_category_classification"]["html"]
    node = points_node(path, "ramp/ramp.category_classification")
    assert node["attrs"]["n_points"] == 2 * x.n_cells  # at 'all' and at its own category
    codes = {"T cell": 1, "Tumor": 2}
    per_cell = pd.DataFrame({"key": node["keys"], "category": node["positions"][:, 3]})
    for key, group in per_cell.groupby("key"):
        cls = x.cells.set_index("cell_id").loc[key, "classification"]
        assert sorted(group["category"]) == [0, codes[cls]]
    hover = dict(root["overlays/hover"].attrs)
    # top left under the title: clear of the legend (top right), the scale bar and the panel (bottom)
    assert hover["hover"] is True and hover["position"][0] < 0.2 and 0.1 < hover["position"][1] < 0.2


def test_colour_layers_of_the_same_cells_share_their_positions(tmp_path):
    """Colour layers sit at 'colour by' 0, moved to their index by a permutation, so luxar stores the
    positions once (an array_ref) and the viewer still shows each layer at its own index."""
    x = ramp_object([1.0, 2.0, 3.0])
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", layers=["cells", "marker:CD3e", f"feature:{FEATURE}"])
    root = zarr.open_group(str(path), mode="r")
    stored = {name: dict(root[f"ramp/{name}/positions"].attrs)["encoding"] for name in
              ("ramp.cells", "ramp.marker_CD3e/cells", "ramp.feature_cell_CD3e_mean/cells")}
    assert stored["ramp.cells"]["name"] != "array_ref"
    assert stored["ramp.marker_CD3e/cells"] == stored["ramp.feature_cell_CD3e_mean/cells"] \
        and stored["ramp.marker_CD3e/cells"]["name"] == "array_ref" \
        and stored["ramp.marker_CD3e/cells"]["target"] == "ramp/ramp.cells/positions"
    moved = {name: dict(root[f"ramp/{name}"].attrs).get("nd_transform") for name in
             ("ramp.cells", "ramp.marker_CD3e/cells", "ramp.feature_cell_CD3e_mean/cells")}
    assert moved == {"ramp.cells": None, "ramp.marker_CD3e/cells": {"colour by": {"permutation": [1, 0, 2]}},
                     "ramp.feature_cell_CD3e_mean/cells": {"colour by": {"permutation": [2, 1, 0]}}}


def test_category_colours_are_linearised_for_the_viewer(tmp_path):
    x = cs.example(region_layers=("tissue",))
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", layers=["category:region__tissue"])
    palette = dict(zip(["stroma", "tumor"], category_rgb(["stroma", "tumor"]), strict=True))  # sorted byte order
    assert np.allclose(palette["stroma"], (0.12156863, 0.46666667, 0.70588235))  # tab10 blue, first category
    for image in ("img1", "img2"):
        node = points_node(path, f"{image}/{image}.category_region__tissue")
        region = cells_of(x, image).loc[node["keys"], "region__tissue"]
        np.testing.assert_allclose(node["colors"], linear_rgb(np.array([palette[r] for r in region])), atol=2 / 255)


def test_categories_with_na_are_grey_and_more_than_twenty_get_distinct_colours():
    colours = category_rgb([f"c{i}" for i in range(30)])
    assert len({tuple(c) for c in colours.round(4)}) == 30


def test_missing_classification_is_shown_as_na(tmp_path, x):
    cells = x.cells.copy()
    cells.loc[[0, 1], "classification"] = pd.NA
    path = cs.to_luxar(x.replace(cells=cells), tmp_path / "s.luxar.zarr")
    node = points_node(path, "img1/img1.cells")
    na = [i for i, k in enumerate(node["keys"]) if k in (str(cells.loc[0, "cell_id"]), str(cells.loc[1, "cell_id"]))]
    assert [node["labels"][i].endswith("classification: NA") for i in na] == [True, True]
    np.testing.assert_allclose(node["colors"][na], [linear_rgb(NA_COLOUR)] * 2, atol=1 / 255)


def test_long_names_are_shortened_in_the_legend_and_title_with_the_whole_name_in_the_tooltip(tmp_path):
    long_class = "Tumour " + "x" * 100_000
    x = cs.example(n_cells=60, n_images=1)
    cells = x.cells.copy()
    cells["classification"] = ["T cell" if i % 2 else long_class for i in range(len(cells))]
    path = cs.to_luxar(x.replace(cells=cells), tmp_path / "s.luxar.zarr", layers=["category:classification"],
                       title="slide " + "y" * 5_000)
    root = zarr.open_group(str(path), mode="r")
    html = dict(root["overlays/legend_category_classification"].attrs)["html"]
    shown = re.sub(r"<[^>]*>", "\n", html)  # the text a reader sees, without the tags and their attributes
    assert max(len(line) for line in shown.splitlines()) <= 80 + len(" (30)")
    assert f'title="{long_class}"' in html  # the whole name, on hover
    assert "T cell (30)" in shown
    title = dict(root["overlays/title"].attrs)["text"]
    assert len(title) == 80 and title.startswith("slide yyy") and "\u2026" in title
