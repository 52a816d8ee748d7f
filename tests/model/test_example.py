"""The simulated example looks like tissue: squidpy finds the nests, markers follow the cell types, the region
layer follows the nests, contacts and outlines come from the cells' geometry, and all of it is reproducible."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import shapely

import cellspec_sc as cs
from cellspec_sc.io import image_outlines

CLASSES = ("Tumor", "T cell", "Treg", "Stroma")


@pytest.fixture(scope="module")
def tissue():
    return cs.example(n_cells=3000, adjacency=True, region_layers=("tumor",))


def marker_mean(x, marker: str) -> np.ndarray:
    return x.measurements[:, x.feature_ids.index(f"cell:{marker}:mean")]


def squidpy_anndata(x):
    """The bridge's AnnData with squidpy's own Delaunay graph built separately in each image."""
    import squidpy as sq

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adata = cs.to_anndata(x)
        sq.gr.spatial_neighbors(adata, library_key="image_id", coord_type="generic", delaunay=True,
                                key_added="per_image")
    return adata


# -- what squidpy sees ------------------------------------------------------------------------------
def test_nhood_enrichment_sees_tumour_nests(tissue):
    import squidpy as sq

    adata = squidpy_anndata(tissue)
    rows, cols = adata.obsp["per_image_connectivities"].nonzero()
    assert (adata.obs["image_id"].to_numpy()[rows] == adata.obs["image_id"].to_numpy()[cols]).all()
    sq.gr.nhood_enrichment(adata, cluster_key="classification", connectivity_key="per_image", n_perms=200, seed=0,
                           show_progress_bar=False)
    z = adata.uns["classification_nhood_enrichment"]["zscore"]
    order = list(adata.obs["classification"].cat.categories)
    tumour, stroma = order.index("Tumor"), order.index("Stroma")
    assert z[tumour, tumour] > 10 and z[stroma, stroma] > 10
    assert z[tumour, stroma] < -10  # nests and stroma are apart


def test_morans_i_of_pan_cytokeratin_and_cd3e(tissue):
    import squidpy as sq

    adata = squidpy_anndata(tissue)
    genes = ["cell:Pan-Cytokeratin:mean", "cell:CD3e:mean", "other:detection_probability"]
    sq.gr.spatial_autocorr(adata, connectivity_key="per_image_connectivities", mode="moran", genes=genes,
                           n_perms=None, show_progress_bar=False)
    moran = adata.uns["moranI"]["I"]
    assert moran["cell:Pan-Cytokeratin:mean"] > 0.3
    assert moran["cell:CD3e:mean"] > 0.1
    assert abs(moran["other:detection_probability"]) < 0.05  # drawn independently of position


# -- cell types, markers, regions --------------------------------------------------------------------
def test_markers_follow_the_cell_types(tissue):
    kind = tissue.cells["classification"].to_numpy(dtype=object)
    panck, cd3, foxp3 = (marker_mean(tissue, m) for m in ("Pan-Cytokeratin", "CD3e", "FOXP3"))
    assert set(kind) == set(CLASSES)
    assert np.median(panck[kind == "Tumor"]) > 10 * np.median(panck[kind != "Tumor"])
    lymphocyte = np.isin(kind, ["T cell", "Treg"])
    assert np.median(cd3[lymphocyte]) > 10 * np.median(cd3[~lymphocyte])
    assert np.median(foxp3[kind == "Treg"]) > 10 * np.median(foxp3[kind != "Treg"])


def test_region_layer_follows_the_nests_and_lymphocytes_line_their_margins(tissue):
    cells = tissue.cells
    kind = cells["classification"].to_numpy(dtype=object)
    region = cells["region__tumor"].to_numpy(dtype=object)
    distance = cells["boundary_distance__tumor"].to_numpy()
    assert set(region) == {"tumor", "stroma"}
    assert ((distance < 0) == (region == "tumor")).all()  # negative inside, as the spec says
    assert (region[kind == "Tumor"] == "tumor").mean() > 0.9
    assert (region[kind == "Stroma"] == "stroma").mean() > 0.9
    band = (distance > 0) & (distance < 25)  # the first two rows of cells outside a nest
    t_cells = kind == "T cell"
    assert t_cells[band].mean() > 2.5 * t_cells[distance >= 25].mean()
    assert t_cells[band].mean() > 2.5 * t_cells[distance <= 0].mean()


def test_cells_are_packed_like_tissue_and_the_frame_holds_them(tissue):
    images = tissue.images.set_index("image_id")
    for image_id, group in tissue.cells.groupby("image_id"):
        width = images.loc[image_id, "width_px"] * images.loc[image_id, "pixel_size"]
        height = images.loc[image_id, "height_px"] * images.loc[image_id, "pixel_size"]
        assert group["x"].between(0, width).all() and group["y"].between(0, height).all()
        um2_per_cell = width * height / len(group)
        assert 100 < um2_per_cell < 300  # a packed section, not confetti
        assert 20 < group["area"].min() and group["area"].max() < 300


# -- geometry: outlines and contacts ------------------------------------------------------------------
@pytest.fixture(scope="module")
def with_outlines(tmp_path_factory):
    folder = tmp_path_factory.mktemp("outlines")
    return cs.example(n_cells=600, adjacency=True, outlines=True, outline_dir=folder)


def outline_polygons(x):
    found = image_outlines(x)
    assert set(found) == set(x.images["image_id"])
    return {image_id: o.geometry for image_id, o in found.items()}


def test_outlines_have_the_cells_area_and_centroid_and_never_overlap(with_outlines):
    x = with_outlines
    for image_id, geometry in outline_polygons(x).items():
        cells = x.cells[x.cells["image_id"] == image_id]
        assert list(geometry.index) == list(cells["cell_id"])
        polygons = geometry.to_numpy()
        np.testing.assert_allclose(shapely.area(polygons), cells["area"].to_numpy(), rtol=1e-3)
        centroids = shapely.get_coordinates(shapely.centroid(polygons))
        np.testing.assert_allclose(centroids, cells[["x", "y"]].to_numpy(), atol=1e-3)
        tree = shapely.STRtree(polygons)
        a, b = tree.query(polygons, predicate="intersects")
        pairs = a < b
        overlap = shapely.area(shapely.intersection(polygons[a[pairs]], polygons[b[pairs]]))
        assert overlap.max(initial=0.0) < 1e-3


def test_contacts_are_the_outlines_that_come_within_the_gap(with_outlines):
    x = with_outlines
    gap = 4.0  # um: outlines closer than this share a boundary (the simulator's documented contact gap)
    # The simulator decides on the circles around the 16-gons, which reach at most 2% of a radius
    # (~0.15 um) beyond them: pairs clearly nearer than the gap are contacts, no contact is clearly farther.
    slack = 0.35
    for image_id, geometry in outline_polygons(x).items():
        polygons = geometry.to_numpy()
        ids = np.asarray(geometry.index, dtype=object)
        a, b = shapely.STRtree(polygons).query(polygons, predicate="dwithin", distance=gap + slack)
        keep = a < b
        a, b = a[keep], b[keep]
        distance = shapely.distance(polygons[a], polygons[b])
        pairs = [tuple(sorted((ids[i], ids[j]), key=str.encode)) for i, j in zip(a, b, strict=True)]
        contacts = x.adjacency[x.adjacency["image_id"] == image_id]
        listed = set(zip(contacts["cell_id_a"], contacts["cell_id_b"], strict=True))
        assert listed <= set(pairs)
        assert {p for p, d in zip(pairs, distance, strict=True) if d < gap - slack} <= listed
        assert len(listed) > 1.2 * len(polygons)  # packed: most cells touch two or more others
    assert set(x.adjacency["method"]) == {"polygon_intersection"}
    assert (x.adjacency["shared_boundary"] > 0).all() and (x.adjacency["shared_boundary"] < 30).all()


def test_outlines_round_trip_through_disk(with_outlines, tmp_path):
    x = with_outlines
    assert sorted(x.images["geometry_ref"]) == ["outlines/img1.geojson", "outlines/img2.geojson"]
    path = cs.write(x, tmp_path / "slide")
    y = cs.read(path)
    assert y.equals(x)
    for ref in x.images["geometry_ref"]:
        assert (path / ref).read_bytes() == (x.source_dir / ref).read_bytes()
        assert ref in (path / "MANIFEST.sha256").read_text()
    before, after = outline_polygons(x), outline_polygons(y)
    for image_id in before:
        assert all(p.equals_exact(q, 0.0) for p, q in zip(before[image_id], after[image_id], strict=True))
    features = json.loads((path / "outlines" / "img1.geojson").read_text())["features"]
    assert features[0]["properties"]["cell_id"] == x.cells["cell_id"].iloc[0]


def test_outlines_by_default_go_to_a_temporary_folder():
    x = cs.example(n_cells=20, outlines=True)
    assert x.source_dir is not None and (x.source_dir / "outlines" / "img1.geojson").is_file()
    assert cs.validate(x).ok


# -- reproducible, valid, same shape ---------------------------------------------------------------------
def test_same_seed_same_object_other_seed_other_tissue(tmp_path):
    options = {"n_cells": 500, "adjacency": True, "region_layers": ("tumor",)}
    x = cs.example(seed=7, **options)
    assert x.equals(cs.example(seed=7, **options))
    other = cs.example(seed=8, **options)
    assert not other.equals(x)
    assert not np.array_equal(other.cells["classification"], x.cells["classification"])
    first = cs.example(seed=7, outlines=True, outline_dir=tmp_path / "a", **options)
    second = cs.example(seed=7, outlines=True, outline_dir=tmp_path / "b", **options)
    assert first.equals(second)
    assert (tmp_path / "a" / "outlines" / "img2.geojson").read_bytes() == \
        (tmp_path / "b" / "outlines" / "img2.geojson").read_bytes()


def test_options_do_not_move_the_cells():
    plain = cs.example(n_cells=400, seed=2)
    full = cs.example(n_cells=400, seed=2, adjacency=True, region_layers=("a", "b"), outlines=True)
    for column in ("x", "y", "area", "classification"):
        assert plain.cells[column].equals(full.cells[column])
    np.testing.assert_array_equal(plain.measurements, full.measurements)


@pytest.mark.parametrize("n_cells,n_images", [(0, 2), (1, 1), (3, 2), (80, 2), (1000, 5), (20_000, 2)])
def test_valid_at_every_size(n_cells, n_images):
    x = cs.example(n_cells=n_cells, n_images=n_images, adjacency=True, region_layers=("tissue", "core"),
                   outlines=n_cells <= 1000)
    report = cs.validate(x)
    assert report.ok, report.format(only_problems=True)
    if n_cells >= 2 * n_images:  # an image of one cell has no variation to support its features
        assert not report.warnings, report.format(only_problems=True)
    assert x.n_cells == n_cells
    if n_cells >= 1000:
        assert x.cells["classification"].value_counts(normalize=True)["Tumor"] > 0.25


def test_the_spec_example_keeps_its_shape():
    x = cs.example()
    assert x.n_cells == 80 and x.images["image_id"].tolist() == ["img1", "img2"]
    assert x.images["sample_id"].nunique() == 2 and x.measurements.shape == (80, 19)
    assert x.dictionary["marker"].dropna().unique().tolist() == ["DAPI", "CD3e", "Pan-Cytokeratin", "FOXP3"]
    assert "geometry_ref" not in x.images.columns and x.source_dir is None
