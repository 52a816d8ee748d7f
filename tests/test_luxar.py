"""The Luxar bridge: scenes compiled by the real luxar compiler, read back with luxar.LuxarScene and zarr."""

from __future__ import annotations

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
from cellspec_sc.cli.main import main
from cellspec_sc.display.colors import category_rgb

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
    assert points == ["cells/img1/cells", "cells/img2/cells"]
    counts = x.cells["image_id"].value_counts()
    for image in ("img1", "img2"):
        assert points_node(path, f"cells/{image}/cells")["attrs"]["n_points"] == counts[image]
    assert points_total(path) == x.n_cells


def test_scene_attributes_units_title_citation_and_y_down_camera(tmp_path, x):
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", title="My slide")
    scene = luxar.LuxarScene.load(path)
    attrs = scene.root_attrs
    assert attrs["units"] == "um" and attrs["title"] == "My slide"
    assert [d["unit"] for d in attrs["scene_dimensions"]["dimensions"]] == ["um", "um"]
    assert attrs["citation"]["short"] == "Cells measured by simulate 1.0.0 (cellspec_sc simulator 1.0.0)"
    camera = scene.viewer_config.camera
    assert camera.view_axis == "xy" and camera.up == (0.0, -1.0, 0.0)  # y grows downward, nothing mirrored
    assert attrs["cellspec"]["layers"] == [{"layer": "cells", "node": "cells"}]


def test_citation_names_input_files(tmp_path, x):
    prov = dict(x.provenance, inputs=[{"path_basename": "measurements.csv", "bytes": 10, "sha256": "0" * 64}])
    path = cs.to_luxar(x.replace(provenance=prov), tmp_path / "s.luxar.zarr")
    assert luxar.LuxarScene.load(path).root_attrs["citation"]["short"].endswith("; source: measurements.csv")


def test_hover_labels_keys_positions_and_radii_follow_stored_order(tmp_path, x):
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr")
    for image in ("img1", "img2"):
        node = points_node(path, f"cells/{image}/cells")
        expected = cells_of(x, image)
        assert sorted(node["keys"]) == sorted(expected.index)
        assert node["keys"] != list(expected.index)  # the compiler reordered the points spatially
        rows = expected.loc[node["keys"]]
        want = [f"{c} · {image} · classification: {k}" for c, k in zip(rows["cell_id"], rows["classification"])]
        assert node["labels"] == want
        pos_tol = (rows[["x", "y"]].max() - rows[["x", "y"]].min()).max() / 65535
        np.testing.assert_allclose(node["positions"], rows[["x", "y"]].to_numpy(), atol=pos_tol, rtol=0)
        radius = np.sqrt(rows["area"].to_numpy() / math.pi)
        np.testing.assert_allclose(node["radii"], radius, atol=quantum(node["group"]["radii"]), rtol=0)


def test_side_by_side_offsets_follow_image_widths(tmp_path, x):
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr")
    scene = luxar.LuxarScene.load(path)
    width = 2000 * 0.5  # width_px x pixel_size of the example images
    assert scene.get_group("cells/img1")["transform"][0, 3] == 0.0
    assert scene.get_group("cells/img2")["transform"][0, 3] == pytest.approx(width + 0.05 * width)


def test_stack_layout_puts_images_on_a_categorical_dimension(tmp_path, x):
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", layout="stack")
    dims = luxar.LuxarScene.load(path).root_attrs["scene_dimensions"]["dimensions"]
    assert [d["name"] for d in dims] == ["x", "y", "image"]
    assert dims[2]["categories"] == ["img1", "img2"] and dims[2]["display"] is False
    for k, image in enumerate(("img1", "img2")):
        node = points_node(path, f"cells/{image}/cells")
        assert node["positions"].shape[1] == 3
        assert np.all(node["positions"][:, 2] == k)


# -- feature and marker layers ---------------------------------------------------------------------

def test_feature_scalars_match_values_within_quantisation_and_na_is_grey(tmp_path, x):
    feature = "nucleus:CD3e:mean"
    j = x.feature_ids.index(feature)
    m = x.measurements.copy()
    m[[0, 5, 41], j] = np.nan  # two NA cells in img1, one in img2
    y = x.replace(measurements=m)
    path = cs.to_luxar(y, tmp_path / "s.luxar.zarr", layers=[f"feature:{feature}"])
    values = pd.Series(m[:, j], index=(y.cells["image_id"] + "/" + y.cells["cell_id"]).astype(object))
    finite = m[:, j][np.isfinite(m[:, j])]
    lo, hi = np.percentile(finite, [1, 99])
    for image, n_na in (("img1", 2), ("img2", 1)):
        node = points_node(path, f"feature_nucleus_CD3e_mean/{image}/cells")
        want = values.loc[[f"{image}/{k}" for k in node["keys"]]].to_numpy()
        assert np.isfinite(want).all()
        np.testing.assert_allclose(node["scalars"], want, atol=quantum(node["group"]["scalars"]), rtol=0)
        attrs = node["attrs"]
        assert attrs["colormap"] == "viridis"
        # the display window is stored as intensity/offset: window = [-offset/intensity, (1-offset)/intensity]
        assert -attrs["offset"] / attrs["intensity"] == pytest.approx(lo)
        assert (1 - attrs["offset"]) / attrs["intensity"] == pytest.approx(hi)
        assert all(label.endswith(f"{feature}: {v:.6g}") for label, v in zip(node["labels"], want))
        na = points_node(path, f"feature_nucleus_CD3e_mean/{image}/NA")
        assert len(na["keys"]) == n_na and all(label.endswith(": NA") for label in na["labels"])
        np.testing.assert_allclose(na["colors"], [[0.45, 0.45, 0.45]] * n_na, atol=1 / 255)


def test_window_narrower_than_luxar_intensity_allows_is_stored_rescaled(tmp_path, x):
    """luxar accepts intensities up to 100: a window of 0.001 is stored as values rescaled to it."""
    feature = "nucleus:CD3e:mean"
    j = x.feature_ids.index(feature)
    m = x.measurements.copy()
    m[:, j] = 1.0 + np.linspace(0.0, 0.001, len(m))
    path = cs.to_luxar(x.replace(measurements=m), tmp_path / "s.luxar.zarr", layers=[f"feature:{feature}"])
    lo, hi = np.percentile(m[:, j], [1, 99])
    node = points_node(path, "feature_nucleus_CD3e_mean/img1/cells")
    want = (m[cells_of(x, "img1").index.get_indexer(node["keys"]), j] - lo) / (hi - lo)
    np.testing.assert_allclose(node["scalars"], want, atol=quantum(node["group"]["scalars"]), rtol=0)
    assert node["attrs"]["intensity"] == 1.0 and node["attrs"]["offset"] == 0.0
    assert all(label.endswith(f"{feature}: {v:.6g}") for label, v in
               zip(node["labels"], m[cells_of(x, "img1").index.get_indexer(node["keys"]), j]))


def test_marker_layer_picks_the_cell_mean_feature(tmp_path, x):
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", layers=["marker:FOXP3"])
    node = points_node(path, "marker_FOXP3/img1/cells")
    want = x.measurement_frame(["cell:FOXP3:mean"])["cell:FOXP3:mean"][cells_of(x, "img1").index.get_indexer(
        node["keys"])].to_numpy()
    np.testing.assert_allclose(node["scalars"], want, atol=quantum(node["group"]["scalars"]), rtol=0)


def test_first_colour_layer_is_visible_and_later_ones_start_hidden(tmp_path, x):
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", layers=["marker:CD3e", "cells"])
    scene = luxar.LuxarScene.load(path)
    assert scene.get_group("marker_CD3e")["visible"] is True
    assert scene.get_group("cells")["visible"] is False
    assert scene.get_group("cells")["layer"] is True


# -- category layers -------------------------------------------------------------------------------

def test_category_colours_and_legend(tmp_path):
    x = cs.example(region_layers=("tissue",))
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", layers=["category:region__tissue"])
    palette = dict(zip(["stroma", "tumor"], category_rgb(["stroma", "tumor"])))  # sorted byte order
    assert np.allclose(palette["stroma"], (0.12156863, 0.46666667, 0.70588235))  # tab10 blue, first category
    for image in ("img1", "img2"):
        node = points_node(path, f"category_region__tissue/{image}/cells")
        region = cells_of(x, image).loc[node["keys"], "region__tissue"]
        np.testing.assert_allclose(node["colors"], np.array([palette[r] for r in region]), atol=1e-6)
    legend = zarr.open_group(str(path), mode="r")["overlays/legend"].attrs["html"]
    counts = x.cells["region__tissue"].value_counts()
    assert f"stroma ({counts['stroma']:,})" in legend and f"tumor ({counts['tumor']:,})" in legend


def test_categories_with_na_are_grey_and_more_than_twenty_get_distinct_colours():
    colours = category_rgb([f"c{i}" for i in range(30)])
    assert len({tuple(c) for c in colours.round(4)}) == 30


def test_missing_classification_is_shown_as_na(tmp_path, x):
    cells = x.cells.copy()
    cells.loc[[0, 1], "classification"] = pd.NA
    path = cs.to_luxar(x.replace(cells=cells), tmp_path / "s.luxar.zarr")
    node = points_node(path, "cells/img1/cells")
    na = [i for i, k in enumerate(node["keys"]) if k in ("1", "2")]
    assert [node["labels"][i].endswith("classification: NA") for i in na] == [True, True]
    np.testing.assert_allclose(node["colors"][na], [[0.45, 0.45, 0.45]] * 2, atol=1 / 255)


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
        np.testing.assert_allclose(lines.vertices, expected, atol=1.0 / 65535 * 1000)
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
    lines = luxar.LuxarScene.load(path).get_lines("outlines/img1/outlines")
    keys = csr_strings(zarr.open_group(str(path), mode="r")["outlines/img1/outlines"], "key_offsets", "key_bytes")
    assert len(lines.segments) == 4 * len(rings)  # four edges per square, the unknown id left out
    for cell_id, ring in rings.items():
        mine = [i for i, k in enumerate(keys) if k == cell_id]
        distance = np.linalg.norm(lines.vertices[mine][:, None, :] - ring[None, :, :], axis=2)
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
    size = 1500 * 0.5  # the tallest image in micrometres, from the images table kept by to_anndata
    span = (hi - lo).max()
    for image in ("img1", "img2"):
        slide = points_node(path, f"category_cluster/{image}/cells")
        ids = [f"{image}/{k}" for k in slide["keys"]]
        from matplotlib.colors import to_rgb
        np.testing.assert_allclose(slide["colors"], [to_rgb(palette[c]) for c in cluster[ids]], atol=1e-6)
        view = points_node(path, f"embedding_X_umap/{image}/cells")
        ids = [f"{image}/{k}" for k in view["keys"]]
        assert len(ids) == (adata.obs["image_id"] == image).sum()
        want = np.column_stack([(umap.loc[ids, 0] - lo[0]) / span * size, (hi[1] - umap.loc[ids, 1]) / span * size])
        np.testing.assert_allclose(view["positions"], want, atol=size / 65535 * 2)
        np.testing.assert_allclose(view["colors"], [to_rgb(palette[c]) for c in cluster[ids]], atol=1e-6)
    assert points_total(path) == 2 * adata.n_obs


def test_anndata_features_markers_and_contacts(tmp_path, scanpy_adata):
    x, adata = scanpy_adata
    path = cs.to_luxar(adata, tmp_path / "s.luxar.zarr", layers=["marker:CD3e", "adjacency"])
    node = points_node(path, "marker_CD3e/img2/cells")
    want = x.measurement_frame(["cell:CD3e:mean"])["cell:CD3e:mean"].to_numpy()[
        cells_of(x, "img2").index.get_indexer(node["keys"]) + (x.cells["image_id"] == "img1").sum()]
    np.testing.assert_allclose(node["scalars"], want, atol=quantum(node["group"]["scalars"]), rtol=0)
    scene = luxar.LuxarScene.load(path)
    n_segments = sum(len(scene.get_lines(f"adjacency/{im}/contacts").segments) for im in ("img1", "img2"))
    assert n_segments == len(x.adjacency)  # from obsp['spatial_connectivities']
    assert scene.root_attrs["citation"]["short"].startswith("Cells measured by simulate 1.0.0")


def test_anndata_without_cellspec_record_uses_cell_extents(tmp_path, x):
    obs = x.cells.astype(object).set_axis([f"c{i}" for i in range(x.n_cells)])
    adata = ad.AnnData(X=x.measurements.copy(), obs=obs, var=x.dictionary.set_index("feature_id"))
    adata.obsm["spatial"] = x.cells[["x", "y"]].to_numpy()
    path = cs.to_luxar(adata, tmp_path / "s.luxar.zarr")
    scene = luxar.LuxarScene.load(path)
    img1_width = x.cells.loc[(x.cells["image_id"] == "img1").to_numpy(dtype=bool), "x"].max()
    assert scene.get_group("cells/img2")["transform"][0, 3] == pytest.approx(img1_width * 1.05)
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
    assert "open it with" in capsys.readouterr().out
    assert points_total(out) == 160
    assert main(["luxar", "example", str(out), "--layer", "colour:red"]) == 2
    assert "unknown layer 'colour:red'" in capsys.readouterr().err
    assert main(["luxar", str(tmp_path / "missing.h5ad"), str(out)]) == 2


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
    lines = luxar.LuxarScene.load(out).get_lines("outlines/img2/outlines")
    assert len(lines.segments) == 4 * 5


def test_cli_reads_h5ad_with_its_embedding(tmp_path, scanpy_adata):
    _, adata = scanpy_adata
    h5ad = tmp_path / "cells.h5ad"
    adata.write_h5ad(h5ad)
    out = tmp_path / "cli.luxar.zarr"
    assert main(["luxar", str(h5ad), str(out), "--layer", "category:cluster", "--layer", "embedding:X_umap",
                 "--layout", "stack"]) == 0
    assert points_total(out) == 2 * adata.n_obs


# -- generated objects -----------------------------------------------------------------------------

def small_coordinates(x: cs.CellSpec) -> bool:
    return bool(np.abs(x.cells[["x", "y"]].to_numpy(dtype=np.float64)).max(initial=0.0) < 1e36)


@settings(max_examples=8, deadline=None)
@given(x=cellspecs(max_cells=6, max_images=3).filter(small_coordinates))
def test_generated_objects_compile_with_every_cell_once_per_layer(tmp_path_factory, x):
    layers = ["cells"] + [f"feature:{f}" for f in x.feature_ids[:1]] \
        + [f"category:{c}" for c in x.cells.columns if c.startswith("region__")][:1] \
        + (["adjacency"] if x.adjacency is not None and len(x.adjacency) else [])
    path = cs.to_luxar(x, tmp_path_factory.mktemp("g") / "g.luxar.zarr", layers=layers)
    scene = luxar.LuxarScene.load(path)
    assert points_total(path) == sum(not layer.startswith("adjacency") for layer in layers) * x.n_cells
    record = scene.root_attrs["cellspec"]
    nodes = {m["layer"]: m["node"] for m in record["layers"]}
    point_layers = [layer for layer in layers if layer != "adjacency"]
    for layer in point_layers[:2]:  # cells and, when there is one, a feature (with an NA node)
        for image, image_node in zip(record["images"], record["image_nodes"]):
            in_image = (x.cells["image_id"] == image).to_numpy(dtype=bool)
            got = []
            for leaf in ("cells", "NA"):
                if scene.has_node(f"{nodes[layer]}/{image_node}/{leaf}"):
                    node = points_node(path, f"{nodes[layer]}/{image_node}/{leaf}")
                    got += node["keys"]
                    assert all(label.startswith(f"{key} · {image}") for key, label in zip(node["keys"], node["labels"]))
            assert sorted(got) == sorted(str(c) for c in x.cells["cell_id"][in_image])


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
    node = points_node(path, f"{parse_layer('feature:' + x.feature_ids[1]).text.replace(':', '_')}/img1/cells")
    assert np.isfinite(node["scalars"]).all() and node["scalars"].max() == pytest.approx(3.4028235e38, rel=1e-6)
    assert any(label.endswith(": 1.79769e+308") for label in node["labels"])
