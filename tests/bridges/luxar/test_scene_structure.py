"""A compiled scene read back: one Layers-panel group per image with its frame and name, root attributes
(units, title, citation, camera), hover labels, keys and radii in stored order, right-click actions."""

from __future__ import annotations

import math

import luxar
import numpy as np
import pandas as pd
import pytest

import cellspec_sc as cs
from cellspec_sc.bridges.luxar import cell_radii
from cellspec_sc.bridges.luxar._scene import DISC_SCALE
from luxar_scenes import cells_of, points_node, points_total, quantum, ramp_object


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
        want = [f"{c} · {image} · {k} · classification: {k}"
                for c, k in zip(rows["cell_id"], rows["classification"], strict=True)]
        assert node["labels"] == want
        pos_tol = (rows[["x", "y"]].max() - rows[["x", "y"]].min()).max() / 65535
        np.testing.assert_allclose(node["positions"][:, :2], rows[["x", "y"]].to_numpy(), atol=pos_tol, rtol=0)
        radius = np.sqrt(rows["area"].to_numpy() / math.pi) * DISC_SCALE
        np.testing.assert_allclose(node["radii"], radius, atol=quantum(node["group"]["radii"]), rtol=0)


def test_image_names_are_drawn_as_glyphs_above_each_image(tmp_path, x):
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr")
    mesh = luxar.LuxarScene.load(path).get_mesh("img2/name")
    assert mesh.vertices[:, 1].max() < 0  # above the image (y grows downward)
    assert 0 <= mesh.vertices[:, 0].min() and mesh.vertices[:, 0].max() < 1000


def test_copy_and_link_actions(tmp_path):
    x = ramp_object([1.0, 2.0], image="slide 1")
    path = cs.to_luxar(x, tmp_path / "s.luxar.zarr", link="https://omero.example/{image_id}/{cell_id}")
    node = points_node(path, "slide_1/slide_1.cells")
    assert node["attrs"]["copy"] == "{hover_key}"
    assert node["attrs"]["link"] == "https://omero.example/slide%201/{hover_key}"
    for bad in ("ftp://x/{cell_id}", "https://x/{cell}", "/relative/{cell_id}", "https://u@evil.example/"):
        with pytest.raises(cs.InputError, match="link must be an absolute http"):
            cs.to_luxar(x, tmp_path / "t.luxar.zarr", link=bad)


def test_radius_fallbacks_for_missing_area():
    assert cell_radii(pd.DataFrame({"area": [math.pi * 9, None, math.pi]})).tolist() == [3.0, 2.0, 1.0]
    assert cell_radii(pd.DataFrame({"area": [None, None]})).tolist() == [5.0, 5.0]
    assert cell_radii(pd.DataFrame({"x": [1.0]})).tolist() == [5.0]
