"""Line layers: adjacency contacts between cells and outline rings from the geometry files."""

from __future__ import annotations

import luxar
import numpy as np
import pandas as pd
import pytest
import zarr

import cellspec_sc as cs
from luxar_scenes import cells_of, csr_strings


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
        assert got == {tuple(sorted(p)) for p in zip(adj["cell_id_a"], adj["cell_id_b"], strict=True)}
        expected = cells_of(x, image).loc[keys, ["x", "y"]].to_numpy()
        np.testing.assert_allclose(lines.vertices[:, :2], expected, atol=1.0 / 65535 * 1000)
        labels = csr_strings(root[f"adjacency/{image}/contacts"], "label_offsets", "label_bytes")
        degree = pd.concat([adj["cell_id_a"], adj["cell_id_b"]]).value_counts()
        assert all(label.endswith(f" · {degree.get(k, 0)} contacts") for k, label in zip(keys, labels, strict=True))
    assert luxar.LuxarScene.load(path).get_group("adjacency")["layer_order"] == 0


def test_outlines_are_closed_rings_in_micrometres_keyed_by_cell(tmp_path):
    import json

    x = cs.example()
    cells = cells_of(x, "img1").iloc[:10]
    features, rings = [], {}
    for cell_id, cx, cy in zip(cells["cell_id"], cells["x"], cells["y"], strict=True):
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
    assert all(label == f"{k} · img1 · {classes[k]} · classification: {classes[k]}"
               for k, label in zip(keys, labels, strict=True))
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
