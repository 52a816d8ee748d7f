"""The Luxar bridge: scenes compiled by the real luxar compiler, read back with luxar.LuxarScene and zarr."""

from __future__ import annotations

import contextlib
import math

import anndata as ad
import luxar
import numpy as np
import pandas as pd
import pytest
import zarr
from hypothesis import given, settings
from luxar.encoding import ArrayDecoder
from strategies import cellspecs

import cellspec_sc as cs
from cellspec_sc.bridges.luxar import cell_radii, parse_layer
from cellspec_sc.bridges.luxar_colour import NA_COLOUR, colormap_rgb, linear_lut, linear_rgb, stored_scalars
from cellspec_sc.bridges.luxar_scene import DISC_SCALE, SHARPNESS
from luxar_scenes import FEATURE, cells_object, ramp, ramp_object
from cellspec_sc.cli.main import main
from cellspec_sc.display._colors import category_rgb

DECODER = ArrayDecoder()


# -- reading a compiled scene back -----------------------------------------------------------------

def csr_strings(group: zarr.Group, offsets: str, data: str) -> list[str]:
    """Decode one of luxar's CSR string channels (labels or keys) in stored order."""
    off = np.asarray(group[offsets][:], dtype=np.int64)
    raw = np.asarray(group[data][:], dtype=np.uint8).tobytes()
    return [raw[off[i]:off[i + 1]].decode("utf-8") for i in range(off.size - 1)]


def points_node(path, name: str) -> dict:
    root = zarr.open_group(str(path), mode="r")
    group = root[name]
    out = {"attrs": dict(group.attrs), "group": group}
    for array in ("positions", "colors", "radii", "scalars"):
        out[array] = DECODER.decode(group[array], root) if array in group else None
    out["labels"] = csr_strings(group, "label_offsets", "label_bytes")
    out["keys"] = csr_strings(group, "key_offsets", "key_bytes")
    return out


def quantum(array: zarr.Array) -> float:
    """Half a step of luxar's bounded-scalar quantisation (the largest possible decode error)."""
    enc = dict(array.attrs)["encoding"]
    if enc["name"] == "broadcasted":
        return 1e-6
    return (enc["max"] - enc["min"]) / (2 ** enc["bits"] - 1) / 2 + 1e-6


def cells_of(x: cs.CellSpec, image_id: str) -> pd.DataFrame:
    frame = x.cells[(x.cells["image_id"] == image_id).to_numpy(dtype=bool)]
    return frame.set_index(frame["cell_id"].astype(object))


def points_total(path) -> int:
    scene = luxar.LuxarScene.load(path)
    return sum(n["n_points"] for n in scene.nodes if n["type"] == "points")


# -- layer strings ---------------------------------------------------------------------------------

def test_layer_strings_parse_like_the_cli():
    assert parse_layer("feature:nucleus:FOXP3:mean").argument == "nucleus:FOXP3:mean"
    assert parse_layer("category:region__tissue").kind == "category"
    assert parse_layer(" adjacency ").kind == "adjacency"
    for bad in ("feature:", "colour:red", "cells:x", ""):
        with pytest.raises(cs.InputError, match="unknown layer"):
            parse_layer(bad)


# -- the default scene -----------------------------------------------------------------------------

def test_default_scene_has_one_cells_node_per_image(tmp_path, x):
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr")
    scene = luxar.LuxarScene.load(path)
    points = sorted(n["name"] for n in scene.nodes if n["type"] == "points")
    assert points == ["img1/img1.cells", "img2/img2.cells"]
    counts = x.cells["image_id"].value_counts()
    for image in ("img1", "img2"):
        assert points_node(path, f"{image}/{image}.cells")["attrs"]["n_points"] == counts[image]
        assert scene.get_group(image)["layer"] is True  # each image is a toggle in the Layers panel
        assert scene.has_node(f"{image}/frame") and scene.has_node(f"{image}/name")
    assert points_total(path) == x.n_cells


def test_scene_attributes_units_title_citation_and_y_down_camera(tmp_path, x):
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", title="My slide")
    scene = luxar.LuxarScene.load(path)
    attrs = scene.root_attrs
    assert attrs["units"] == "um" and attrs["title"] == "My slide"
    dims = attrs["scene_dimensions"]["dimensions"]
    assert [d["name"] for d in dims] == ["x", "y", "go to"] and dims[2]["categories"] == ["all images", "img1", "img2"]
    assert attrs["citation"]["short"] == "Cells measured by simulate 2.0.0 (cellspec_sc simulator 2.0.0)"
    camera = scene.viewer_config.camera
    assert camera.view_axis == "xy" and camera.up == (0.0, -1.0, 0.0)  # y grows downward, nothing mirrored
    assert attrs["cellspec"]["layers"] == [{"layer": "cells"}]
    waypoints = attrs["viewer_config"]["waypoints"]
    assert [w["when"] for w in waypoints] == [{"go to": 0}, {"go to": 1}, {"go to": 2}]
    centre_x = [w["camera"]["target"][0] for w in waypoints]
    assert centre_x[1] < centre_x[0] < centre_x[2]  # img1 left of the middle, img2 right of it


def test_citation_names_input_files(tmp_path, x):
    prov = dict(x.provenance, inputs=[{"path_basename": "measurements.csv", "bytes": 10, "sha256": "0" * 64}])
    path = cs.to_luxar(x.replace(provenance=prov), tmp_path / "s.luxar.zarr")
    assert luxar.LuxarScene.load(path).root_attrs["citation"]["short"].endswith("; source: measurements.csv")


def test_hover_labels_keys_positions_and_radii_follow_stored_order(tmp_path, x):
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr")
    for image in ("img1", "img2"):
        node = points_node(path, f"{image}/{image}.cells")
        expected = cells_of(x, image)
        assert sorted(node["keys"]) == sorted(expected.index)
        assert node["keys"] != list(expected.index)  # the compiler reordered the points spatially
        rows = expected.loc[node["keys"]]
        want = [f"{c} · {image} · {k} · classification: {k}" for c, k in zip(rows["cell_id"], rows["classification"])]
        assert node["labels"] == want
        pos_tol = (rows[["x", "y"]].max() - rows[["x", "y"]].min()).max() / 65535
        np.testing.assert_allclose(node["positions"][:, :2], rows[["x", "y"]].to_numpy(), atol=pos_tol, rtol=0)
        radius = np.sqrt(rows["area"].to_numpy() / math.pi) * DISC_SCALE
        np.testing.assert_allclose(node["radii"], radius, atol=quantum(node["group"]["radii"]), rtol=0)


def test_side_by_side_offsets_follow_image_widths(tmp_path, x):
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr")
    scene = luxar.LuxarScene.load(path)
    width = float(x.images["width_px"][0] * x.images["pixel_size"][0])  # both example images have this width
    assert scene.get_group("img1")["transform"][0, 3] == 0.0
    assert scene.get_group("img2")["transform"][0, 3] == pytest.approx(width + 0.08 * width)


def test_stack_layout_puts_images_on_a_categorical_dimension(tmp_path, x):
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", layout="stack")
    dims = luxar.LuxarScene.load(path).root_attrs["scene_dimensions"]["dimensions"]
    assert [d["name"] for d in dims] == ["x", "y", "image"]
    assert dims[2]["categories"] == ["img1", "img2"] and dims[2]["display"] is False
    for k, image in enumerate(("img1", "img2")):
        node = points_node(path, f"{image}/{image}.cells")
        assert node["positions"].shape[1] == 3
        assert np.all(node["positions"][:, 2] == k)


def test_stack_by_sample_puts_each_samples_cells_on_its_own_entry(tmp_path):
    """Three images of two samples: the stacking dimension is ``sample`` (in order of first appearance), each
    sample's node holds exactly the cells of its images at their own x, y, on that sample's index."""
    x = cs.example(n_images=3, n_cells=60)
    sample_of = {"img1": "patient-B", "img2": "patient-B", "img3": "patient-A"}
    x = x.replace(cells=x.cells.assign(sample_id=x.cells["image_id"].map(sample_of).astype("string")),
                  images=x.images.assign(sample_id=x.images["image_id"].map(sample_of).astype("string")))
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", layout="stack", stack_by="sample_id")
    scene = luxar.LuxarScene.load(path)
    dims = scene.root_attrs["scene_dimensions"]["dimensions"]
    assert [d["name"] for d in dims] == ["x", "y", "sample"]
    assert dims[2]["categories"] == ["patient-B", "patient-A"] and dims[2]["display"] is False
    assert sorted(n["name"] for n in scene.nodes if n["type"] == "points") == [
        "patient-A/patient-A.cells", "patient-B/patient-B.cells"]
    cells = x.cells.set_index([x.cells["image_id"].astype(str), x.cells["cell_id"].astype(str)])
    for k, sample in enumerate(dims[2]["categories"]):
        node = points_node(path, f"{sample}/{sample}.cells")
        images = [label.split(" · ")[1] for label in node["labels"]]
        expected = cells[cells["sample_id"] == sample]
        assert sorted(zip(images, node["keys"])) == sorted(expected.index)  # every cell of the sample, no other
        assert {sample_of[i] for i in images} == {sample}
        assert np.all(node["positions"][:, 2] == k)
        xy = expected.loc[list(zip(images, node["keys"])), ["x", "y"]].to_numpy()
        tolerance = (xy.max(axis=0) - xy.min(axis=0)).max() / 65535
        np.testing.assert_allclose(node["positions"][:, :2], xy, atol=tolerance, rtol=0)
    waypoints = scene.root_attrs["viewer_config"]["waypoints"]
    assert [w["when"] for w in waypoints] == [{"sample": 0}, {"sample": 1}]


def test_stack_by_sample_keeps_the_link_where_a_sample_has_one_image_and_warns_where_it_cannot(tmp_path):
    x = cs.example(n_images=3, n_cells=60)
    sample_of = {"img1": "B", "img2": "B", "img3": "A"}
    x = x.replace(cells=x.cells.assign(sample_id=x.cells["image_id"].map(sample_of).astype("string")),
                  images=x.images.assign(sample_id=x.images["image_id"].map(sample_of).astype("string")))
    with pytest.warns(UserWarning, match=r"link: samples \['B'\] hold cells of several images") as caught:
        path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", layout="stack", stack_by="sample_id",
                           link="https://images.example/{image_id}/{cell_id}")
    assert {w.filename for w in caught if "link:" in str(w.message)} == {__file__}  # the caller's line
    root = zarr.open_group(str(path), mode="r")
    assert root["A/A.cells"].attrs["link"] == "https://images.example/img3/{hover_key}"
    assert "link" not in root["B/B.cells"].attrs and root["B/B.cells"].attrs["copy"] == "{hover_key}"


# -- feature and marker layers ---------------------------------------------------------------------

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
    assert all(label.endswith(f"= {v:.6g}") for label, v in zip(node["labels"], want))
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
    assert hover["hover"] is True and hover["position"][1] > 0.9  # bottom, clear of the legend at the top


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


def test_copy_and_link_actions(tmp_path):
    x = ramp_object([1.0, 2.0], image="slide 1")
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", link="https://omero.example/{image_id}/{cell_id}")
    node = points_node(path, "slide_1/slide_1.cells")
    assert node["attrs"]["copy"] == "{hover_key}"
    assert node["attrs"]["link"] == "https://omero.example/slide%201/{hover_key}"
    for bad in ("ftp://x/{cell_id}", "https://x/{cell}", "/relative/{cell_id}", "https://u@evil.example/"):
        with pytest.raises(cs.InputError, match="link must be an absolute http"):
            cs.to_luxar(x, tmp_path / "t.luxar.zarr", link=bad)


def test_image_names_are_drawn_as_glyphs_above_each_image(tmp_path, x):
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr")
    mesh = luxar.LuxarScene.load(path).get_mesh("img2/name")
    assert mesh.vertices[:, 1].max() < 0  # above the image (y grows downward)
    assert 0 <= mesh.vertices[:, 0].min() and mesh.vertices[:, 0].max() < 1000


# -- category layers -------------------------------------------------------------------------------

def test_category_colours_are_linearised_for_the_viewer(tmp_path):
    x = cs.example(region_layers=("tissue",))
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", layers=["category:region__tissue"])
    palette = dict(zip(["stroma", "tumor"], category_rgb(["stroma", "tumor"])))  # sorted byte order
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


# -- adjacency -------------------------------------------------------------------------------------

def test_adjacency_lines_join_the_contacting_cells(tmp_path):
    x = cs.example(n_cells=120, adjacency=True)
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", layers=["cells", "adjacency"])
    scene = luxar.LuxarScene.load(path)
    root = zarr.open_group(str(path), mode="r")
    for image in ("img1", "img2"):
        lines = scene.get_lines(f"adjacency/{image}/contacts")
        keys = csr_strings(root[f"adjacency/{image}/contacts"], "key_offsets", "key_bytes")
        got = {tuple(sorted((keys[a], keys[b]))) for a, b in lines.segments}
        adj = x.adjacency[(x.adjacency["image_id"] == image).to_numpy(dtype=bool)]
        assert got == {tuple(sorted(p)) for p in zip(adj["cell_id_a"], adj["cell_id_b"])}
        expected = cells_of(x, image).loc[keys, ["x", "y"]].to_numpy()
        np.testing.assert_allclose(lines.vertices[:, :2], expected, atol=1.0 / 65535 * 1000)
        labels = csr_strings(root[f"adjacency/{image}/contacts"], "label_offsets", "label_bytes")
        degree = pd.concat([adj["cell_id_a"], adj["cell_id_b"]]).value_counts()
        assert all(label.endswith(f" · {degree.get(k, 0)} contacts") for k, label in zip(keys, labels))
    assert luxar.LuxarScene.load(path).get_group("adjacency")["layer_order"] == 0


def test_outlines_are_closed_rings_in_micrometres_keyed_by_cell(tmp_path):
    import json

    x = cs.example()
    cells = cells_of(x, "img1").iloc[:10]
    features, rings = [], {}
    for cell_id, cx, cy in zip(cells["cell_id"], cells["x"], cells["y"]):
        ring = [[cx / 0.5 + dx, cy / 0.5 + dy] for dx, dy in ((0, 0), (6, 0), (6, 4), (0, 4), (0, 0))]  # pixels
        features.append({"type": "Feature", "id": cell_id, "geometry": {"type": "Polygon", "coordinates": [ring]}})
        rings[cell_id] = np.array(ring[:-1]) * 0.5
    features.append({"type": "Feature", "id": "not-a-cell", "geometry": features[0]["geometry"]})
    (tmp_path / "img1.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    images = x.images.copy()
    images["geometry_ref"] = pd.array(["img1.geojson", None], dtype="string")
    path = cs.to_luxar(x.replace(images=images, source_dir=tmp_path), tmp_path / "s.luxar.zarr",
                       layers=["cells", "outlines"])
    lines = luxar.LuxarScene.load(path).get_lines("outlines/img1/outlines.cells")
    outline = zarr.open_group(str(path), mode="r")["outlines/img1/outlines.cells"]
    keys = csr_strings(outline, "key_offsets", "key_bytes")
    labels = csr_strings(outline, "label_offsets", "label_bytes")
    classes = cells.set_index("cell_id")["classification"]
    assert all(label == f"{k} · img1 · {classes[k]} · classification: {classes[k]}" for k, label in zip(keys, labels))
    assert len(lines.segments) == 4 * len(rings)  # four edges per square, the unknown id left out
    for cell_id, ring in rings.items():
        mine = [i for i, k in enumerate(keys) if k == cell_id]
        distance = np.linalg.norm(lines.vertices[mine][:, None, :2] - ring[None, :, :], axis=2)
        tol = 1000 / 65535  # luxar's 16-bit positions over the extent of the vertices
        assert (distance.min(axis=1) < tol).all() and (distance.min(axis=0) < tol).all()
        edges = [s for s in lines.segments if keys[s[0]] == cell_id]
        assert len(edges) == 4 and all(keys[b] == cell_id for _, b in edges)
    assert not luxar.LuxarScene.load(path).has_node("outlines/img2")  # img2 has no geometry_ref


def test_outlines_need_a_geometry_ref(tmp_path, x):
    with pytest.raises(cs.InputError, match="no image has a geometry_ref"):
        cs.to_luxar(x, tmp_path / "s.luxar.zarr", layers=["outlines"])


# -- AnnData after a real scanpy run ---------------------------------------------------------------

@pytest.fixture(scope="module")
def scanpy_adata():
    """The example through to_anndata after scanpy's PCA, neighbours and UMAP, with k-means clusters (leiden
    needs igraph, which is not a dependency) and scanpy's own plot colours in uns."""
    import matplotlib

    matplotlib.use("Agg")
    import scanpy as sc
    from sklearn.cluster import KMeans

    x = cs.example(n_cells=300, adjacency=True)
    adata = cs.to_anndata(x)
    sc.pp.pca(adata, n_comps=5)
    sc.pp.neighbors(adata, n_neighbors=10)
    sc.tl.umap(adata, random_state=0)
    labels = KMeans(n_clusters=4, n_init=3, random_state=0).fit_predict(adata.obsm["X_pca"])
    adata.obs["cluster"] = pd.Categorical(labels.astype(str))
    sc.pl.umap(adata, color="cluster", show=False)  # stores uns['cluster_colors']
    return x, adata


def test_anndata_cluster_and_embedding_layers(tmp_path, scanpy_adata):
    x, adata = scanpy_adata
    path = cs.to_luxar(adata, tmp_path / "s.luxar.zarr", layers=["category:cluster", "embedding:X_umap"])
    palette = dict(zip(adata.obs["cluster"].cat.categories, adata.uns["cluster_colors"]))
    umap = pd.DataFrame(adata.obsm["X_umap"], index=(adata.obs["image_id"].astype(str) + "/"
                                                        + adata.obs["cell_id"].astype(str)).to_numpy())
    cluster = pd.Series(adata.obs["cluster"].to_numpy(), index=umap.index)
    lo, hi = umap.min(), umap.max()
    size = float((x.images["height_px"] * x.images["pixel_size"]).max())  # the tallest image in micrometres
    span = (hi - lo).max()
    for image in ("img1", "img2"):
        slide = points_node(path, f"{image}/{image}.category_cluster")
        ids = [f"{image}/{k}" for k in slide["keys"]]
        from matplotlib.colors import to_rgb
        np.testing.assert_allclose(slide["colors"], linear_rgb([to_rgb(palette[c]) for c in cluster[ids]]),
                                   atol=2 / 255)
        view = points_node(path, f"embedding_X_umap/{image}.category_cluster")
        ids = [f"{image}/{k}" for k in view["keys"]]
        assert len(ids) == 2 * (adata.obs["image_id"] == image).sum()  # at 'all' and at its own cluster
        want = np.column_stack([(umap.loc[ids, 0] - lo[0]) / span * size, (hi[1] - umap.loc[ids, 1]) / span * size])
        np.testing.assert_allclose(view["positions"][:, :2], want, atol=size / 65535 * 2)
        np.testing.assert_allclose(view["colors"], linear_rgb([to_rgb(palette[c]) for c in cluster[ids]]), atol=2 / 255)
    assert points_total(path) == 4 * adata.n_obs


def test_anndata_features_markers_and_contacts(tmp_path, scanpy_adata):
    x, adata = scanpy_adata
    path = cs.to_luxar(adata, tmp_path / "s.luxar.zarr", layers=["marker:CD3e", "adjacency"])
    node = points_node(path, "img2/img2.marker_CD3e/cells")
    all_values = x.measurement_frame(["cell:CD3e:mean"])["cell:CD3e:mean"].to_numpy()
    want = all_values[cells_of(x, "img2").index.get_indexer(node["keys"]) + (x.cells["image_id"] == "img1").sum()]
    lo, hi = np.percentile(all_values, [1, 99])
    np.testing.assert_allclose(node["scalars"], np.clip(want, lo, hi), atol=quantum(node["group"]["scalars"]))
    scene = luxar.LuxarScene.load(path)
    n_segments = sum(len(scene.get_lines(f"adjacency/{im}/contacts").segments) for im in ("img1", "img2"))
    assert n_segments == len(x.adjacency)  # from obsp['spatial_connectivities']
    assert scene.root_attrs["citation"]["short"].startswith("Cells measured by simulate 2.0.0")


def test_anndata_without_cellspec_record_uses_cell_extents(tmp_path, x):
    obs = x.cells.astype(object).set_axis([f"c{i}" for i in range(x.n_cells)])
    adata = ad.AnnData(X=x.measurements.copy(), obs=obs, var=x.dictionary.set_index("feature_id"))
    adata.obsm["spatial"] = x.cells[["x", "y"]].to_numpy()
    path = cs.to_luxar(adata, tmp_path / "s.luxar.zarr")
    scene = luxar.LuxarScene.load(path)
    img1_width = x.cells.loc[(x.cells["image_id"] == "img1").to_numpy(dtype=bool), "x"].max()
    assert scene.get_group("img2")["transform"][0, 3] == pytest.approx(img1_width * 1.08)
    assert "citation" not in scene.root_attrs
    with pytest.raises(cs.InputError, match="obs has no 'cell_id'"):
        cs.to_luxar(adata[:, :].copy().obs.drop(columns="cell_id").pipe(lambda o: ad.AnnData(obs=o)), tmp_path / "t")


# -- radii -----------------------------------------------------------------------------------------

def test_radius_fallbacks_for_missing_area():
    assert cell_radii(pd.DataFrame({"area": [math.pi * 9, None, math.pi]})).tolist() == [3.0, 2.0, 1.0]
    assert cell_radii(pd.DataFrame({"area": [None, None]})).tolist() == [5.0, 5.0]
    assert cell_radii(pd.DataFrame({"x": [1.0]})).tolist() == [5.0]


# -- refusals --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("layers", "message"), [
    (["feature:cell:NOPE:mean"], "unknown feature_id 'cell:NOPE:mean'"),
    (["marker:NOPE"], "no intensity feature for marker 'NOPE'"),
    (["category:leiden"], "no cells column 'leiden'"),
    (["embedding:X_umap"], "a CellSpec has no embeddings"),
    (["adjacency"], "has no adjacency"),
    ([], "no layer selected"),
])
def test_refusals_name_the_problem_and_write_nothing(tmp_path, x, layers, message):
    out = tmp_path / "s.luxar.zarr"
    with pytest.raises(cs.InputError, match=message):
        cs.to_luxar(x, out, layers=layers)
    assert not out.exists()


def test_refuses_other_objects_and_layouts(tmp_path, x):
    with pytest.raises(cs.InputError, match="CellSpec or an AnnData"):
        cs.to_luxar(x.cells, tmp_path / "s.luxar.zarr")
    with pytest.raises(cs.InputError, match="layout must be one of side, stack"):
        cs.to_luxar(x, tmp_path / "s.luxar.zarr", layout="grid")


def test_a_failed_compile_keeps_the_previous_scene(tmp_path, x):
    out = cs.to_luxar(x, tmp_path / "s.luxar.zarr")
    cells = x.cells.copy()
    cells.loc[0, "image_id"] = "ghost"
    with pytest.raises(cs.InputError, match="image_id 'ghost' is not in images"):
        cs.to_luxar(x.replace(cells=cells), out)
    assert points_total(out) == x.n_cells


# -- command line ----------------------------------------------------------------------------------

def test_cli_compiles_a_directory_source_and_refuses_bad_layers(tmp_path, capsys):
    out = tmp_path / "cli.luxar.zarr"
    assert main(["luxar", "example", str(out), "--layer", "cells", "--layer", "marker:CD3e"]) == 0
    assert f"open it with: cellspec view {out}" in capsys.readouterr().out
    assert points_total(out) == 160
    assert main(["luxar", "example", str(out), "--layer", "colour:red"]) == 2
    assert "unknown layer 'colour:red'" in capsys.readouterr().err
    assert main(["luxar", str(tmp_path / "missing.h5ad"), str(out)]) == 2


def test_cli_refuses_an_h5ad_anndata_cannot_read_naming_it(tmp_path, capsys):
    # valid HDF5 that anndata refuses with its IORegistryError, which escaped as a traceback
    import h5py

    odd = tmp_path / "odd.h5ad"
    with h5py.File(odd, "w") as f:
        f.attrs["encoding-type"], f.attrs["encoding-version"] = "anndata", "0.1.0"
        f.create_group("X").attrs["encoding-type"] = "csr_matrix"
    assert main(["luxar", str(odd), str(tmp_path / "odd.luxar.zarr")]) == 2
    assert f"{odd}: cannot be read as AnnData (IORegistryError: No read method registered" in capsys.readouterr().err
    assert not (tmp_path / "odd.luxar.zarr").exists()


def test_cli_compiles_a_cellspec_directory_with_outlines(tmp_path):
    import json

    x = cs.example()
    cells = cells_of(x, "img2").iloc[:5]
    square = [[0, 0], [4, 0], [4, 4], [0, 4], [0, 0]]
    features = [{"type": "Feature", "id": c, "geometry": {"type": "Polygon", "coordinates": [
        [[cx / 0.5 + dx, cy / 0.5 + dy] for dx, dy in square]]}} for c, cx, cy in zip(cells["cell_id"], cells["x"], cells["y"])]
    (tmp_path / "img2.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    images = x.images.copy()
    images["geometry_ref"] = pd.array([None, "img2.geojson"], dtype="string")
    directory = cs.write(x.replace(images=images, source_dir=tmp_path), tmp_path / "slide.cellspec")
    out = tmp_path / "slide.luxar.zarr"
    assert main(["luxar", str(directory), str(out), "--layer", "cells", "--layer", "outlines"]) == 0
    lines = luxar.LuxarScene.load(out).get_lines("outlines/img2/outlines.cells")
    assert len(lines.segments) == 4 * 5


def test_cli_reads_h5ad_with_its_embedding(tmp_path, scanpy_adata):
    _, adata = scanpy_adata
    h5ad = tmp_path / "cells.h5ad"
    adata.write_h5ad(h5ad)
    out = tmp_path / "cli.luxar.zarr"
    assert main(["luxar", str(h5ad), str(out), "--layer", "category:cluster", "--layer", "embedding:X_umap",
                 "--layout", "stack"]) == 0
    assert points_total(out) == 4 * adata.n_obs  # the category layer twice (at 'all' and at its cluster)


# -- generated objects -----------------------------------------------------------------------------

def small_coordinates(x: cs.CellSpec) -> bool:
    return bool(np.abs(x.cells[["x", "y"]].to_numpy(dtype=np.float64)).max(initial=0.0) < 1e36)


@settings(max_examples=8, deadline=None)
@given(x=cellspecs(max_cells=6, max_images=3).filter(small_coordinates))
def test_generated_objects_compile_with_every_cell_once_per_layer(tmp_path_factory, x):
    layers = ["cells"] + [f"feature:{f}" for f in x.feature_ids[:1]] \
        + (["adjacency"] if x.adjacency is not None and len(x.adjacency) else [])
    path = cs.to_luxar(x, tmp_path_factory.mktemp("g") / "g.luxar.zarr", layers=layers)
    scene = luxar.LuxarScene.load(path)
    assert points_total(path) == sum(layer != "adjacency" for layer in layers) * x.n_cells
    record = scene.root_attrs["cellspec"]
    for image, image_node in zip(record["images"], record["image_nodes"]):
        in_image = (x.cells["image_id"] == image).to_numpy(dtype=bool)
        want = sorted(str(c) for c in x.cells["cell_id"][in_image])
        leaves = [n["name"] for n in scene.nodes if n["type"] == "points" and n["name"].startswith(f"{image_node}/")]
        # the cells layer is a leaf of the image group; a feature layer's leaves sit in its gain group or are NA
        cells_leaf = [n for n in leaves if n.count("/") == 1 and not n.endswith(".NA")]
        feature_leaves = [n for n in leaves if n not in cells_leaf]
        has_feature = len(layers) > 1 and layers[1].startswith("feature:")
        for group in [cells_leaf] + ([feature_leaves] if has_feature else []):
            got = []
            for leaf in group:
                node = points_node(path, leaf)
                got += node["keys"]
                assert all(label.startswith(f"{key} · {image}") for key, label in zip(node["keys"], node["labels"]))
            assert sorted(got) == (want if in_image.any() else []), (leaves, record)


def test_coordinates_beyond_float32_are_refused(tmp_path, x):
    cells = x.cells.copy()
    cells.loc[3, "y"] = 1e300
    with pytest.raises(cs.InputError, match=r"cells row 3: y = 1e\+300 um cannot be placed"):
        cs.to_luxar(x.replace(cells=cells), tmp_path / "s.luxar.zarr")


def test_extreme_feature_values_and_areas_still_compile(tmp_path, x):
    m = x.measurements.copy()
    m[:, 0] = 5e-324
    m[0, 1], m[1, 1] = 1.7976931348623157e308, -1.7976931348623157e308
    cells = x.cells.copy()
    cells.loc[0, "area"], cells.loc[1, "area"] = 1.7976931348623157e308, 5e-324
    y = x.replace(measurements=m, cells=cells)
    path = cs.to_luxar(y, tmp_path / "s.luxar.zarr", layers=[f"feature:{x.feature_ids[0]}", f"feature:{x.feature_ids[1]}"])
    assert points_total(path) == 2 * x.n_cells
    node = points_node(path, f"img1/img1.{parse_layer('feature:' + x.feature_ids[1]).text.replace(':', '_')}/cells")
    assert np.isfinite(node["scalars"]).all()
    assert any(label.endswith("= 1.79769e+308") for label in node["labels"])


# -- serving ---------------------------------------------------------------------------------------

def _served_scene(args: list[str], timeout: float = 180.0) -> tuple[dict, str]:
    """Run ``cellspec ARGS`` (which serves a scene) until it says it is serving, return the zarr.json its
    data server answers and what it printed, then stop it."""
    import json
    import os
    import select
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

    from cellspec_sc.bridges.luxar_viewer import free_port

    data_port = free_port()
    cmd = [sys.executable, "-m", "cellspec_sc.cli.main", *args, "--no-browser", "--port", str(free_port()),
           "--data-port", str(data_port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    printed = ""
    try:
        deadline = time.monotonic() + timeout
        while "serving" not in printed:
            assert time.monotonic() < deadline and proc.poll() is None, f"never served: {printed}"
            if select.select([proc.stdout], [], [], 1.0)[0]:
                printed += proc.stdout.readline().decode()
        with urllib.request.urlopen(f"http://127.0.0.1:{data_port}/zarr.json", timeout=10) as r:
            served = json.loads(r.read())
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        printed += proc.communicate(timeout=30)[0].decode()
    return served, printed


def test_cellspec_view_serves_an_existing_scene_without_compiling(tmp_path):
    path = cs.to_luxar(ramp_object([1.0, 2.0]), tmp_path / "s.luxar.zarr")
    before = {p: p.stat().st_mtime_ns for p in path.rglob("*")}
    served, out = _served_scene(["view", str(path)])
    assert served["attributes"]["content_hash"] == luxar.LuxarScene.load(path).root_attrs["content_hash"]
    assert {p: p.stat().st_mtime_ns for p in path.rglob("*")} == before  # nothing rewritten
    assert f"serving {path} at http://127.0.0.1:" in out


def test_cellspec_luxar_open_serves_the_scene_it_just_wrote(tmp_path):
    out_path = tmp_path / "cli.luxar.zarr"
    served, out = _served_scene(["luxar", "example", str(out_path), "--layer", "marker:CD3e", "--open"])
    assert f"wrote {out_path}" in out and f"serving {out_path}" in out
    assert served["attributes"]["content_hash"] == luxar.LuxarScene.load(out_path).root_attrs["content_hash"]


def _children(pid: int) -> list[int]:
    """The direct children of ``pid`` (Linux /proc)."""
    import pathlib

    tasks = pathlib.Path(f"/proc/{pid}/task")
    return [int(c) for t in tasks.glob("*") for c in (t / "children").read_text().split()] if tasks.exists() else []


def _session_alive(group: int) -> bool:
    import os

    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def test_cellspec_view_stops_its_viewer_when_signalled_while_it_prints_the_address(tmp_path, monkeypatch):
    """A SIGTERM that lands after the viewer answered but before serve() waits on it (the test above sends it as
    soon as "serving" is printed) stops the viewer too; before the fix its session kept serving."""
    import os
    import signal
    import socket

    from cellspec_sc.bridges.luxar_viewer import free_port
    from cellspec_sc.cli import view

    path = cs.to_luxar(ramp_object([1.0, 2.0]), tmp_path / "s.luxar.zarr")
    started: list[int] = []

    def print_then_get_terminated(*args, **kwargs):
        started.extend(_children(os.getpid()))
        os.kill(os.getpid(), signal.SIGTERM)  # the handler serve() installed raises at the next bytecode

    monkeypatch.setattr(view, "print", print_then_get_terminated, raising=False)
    data_port = free_port()
    try:
        with pytest.raises(KeyboardInterrupt):
            view.serve(path, data_port=data_port, open_browser=False)
        assert started, "the viewer process was running when the address was printed"
        assert not [pid for pid in started if _session_alive(pid)], "the viewer outlived serve()"
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", data_port)) != 0, "the data server still answers"
    finally:
        for group in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_cellspec_view_stops_its_viewer_when_signalled_during_start_up(tmp_path, signame):
    """A signal that lands while the viewer is still starting (before "serving ...") leaves no viewer process
    and no open port behind (before the fix the viewer, in its own session, kept serving)."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time

    from cellspec_sc.bridges.luxar_viewer import free_port

    path = cs.to_luxar(ramp_object([1.0, 2.0]), tmp_path / "s.luxar.zarr")
    port, data_port = free_port(), free_port()
    cmd = [sys.executable, "-m", "cellspec_sc.cli.main", "view", str(path), "--no-browser", "--port", str(port),
           "--data-port", str(data_port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    viewers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while not (viewers := _children(proc.pid)):  # the luxar viewer has been started, but cannot answer yet
            assert time.monotonic() < deadline and proc.poll() is None, "the viewer never started"
            time.sleep(0.01)
        proc.send_signal(getattr(signal, signame))
        out = proc.communicate(timeout=60)[0].decode()
        leaked = [v for v in viewers if _session_alive(v)]
    finally:
        for group in [proc.pid, *viewers]:  # whatever the outcome, nothing of this test keeps running
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
    assert "serving" not in out and proc.returncode == 2 and "cellspec: error: interrupted" in out, out
    assert viewers and not leaked, f"viewer sessions still running: {leaked}"  # its data server included
    for p in (port, data_port):
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", p)) != 0, f"port {p} still answers"
