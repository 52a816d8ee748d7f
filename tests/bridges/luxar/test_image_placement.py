"""Where images go: side by side at offsets that follow their widths, or stacked on a categorical dimension
(by image or by sample)."""

from __future__ import annotations

import luxar
import numpy as np
import pytest
import zarr

import cellspec_sc as cs
from luxar_scenes import points_node


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
        # every cell of the sample, no other
        assert sorted(zip(images, node["keys"], strict=True)) == sorted(expected.index)
        assert {sample_of[i] for i in images} == {sample}
        assert np.all(node["positions"][:, 2] == k)
        xy = expected.loc[list(zip(images, node["keys"], strict=True)), ["x", "y"]].to_numpy()
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
