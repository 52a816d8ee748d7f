"""Generated CellSpec objects and extreme values compile, every cell once per layer."""

from __future__ import annotations

import luxar
import numpy as np
from hypothesis import given, settings

import cellspec_sc as cs
from cellspec_sc.bridges.luxar import parse_layer
from cellspec_sc.bridges.luxar._record import read_scene_record
from luxar_scenes import points_node, points_total
from strategies import cellspecs


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
    record = read_scene_record(path)  # what the scene says it holds, read back through its codec
    assert list(record.layers) == layers and record.images == tuple(x.images["image_id"].astype(str))
    for image, image_node in zip(record.images, record.image_nodes, strict=True):
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
                assert all(label.startswith(f"{key} · {image}")
                           for key, label in zip(node["keys"], node["labels"], strict=True))
            assert sorted(got) == (want if in_image.any() else []), (leaves, record)


def test_extreme_feature_values_and_areas_still_compile(tmp_path, x):
    m = x.measurements.copy()
    m[:, 0] = 5e-324
    m[0, 1], m[1, 1] = 1.7976931348623157e308, -1.7976931348623157e308
    cells = x.cells.copy()
    cells.loc[0, "area"], cells.loc[1, "area"] = 1.7976931348623157e308, 5e-324
    y = x.replace(measurements=m, cells=cells)
    path = cs.to_luxar(y, tmp_path / "s.luxar.zarr",
                       layers=[f"feature:{x.feature_ids[0]}", f"feature:{x.feature_ids[1]}"])
    assert points_total(path) == 2 * x.n_cells
    node = points_node(path, f"img1/img1.{parse_layer('feature:' + x.feature_ids[1]).text.replace(':', '_')}/cells")
    assert np.isfinite(node["scalars"]).all()
    assert any(label.endswith("= 1.79769e+308") for label in node["labels"])
