"""SpatialData bridge: spatialdata queries, table filtering and removed elements give a valid cellspec of the
cells left, contacts trimmed and the change noted in history."""

from __future__ import annotations

import numpy as np
import pytest
import spatialdata as sd

import cellspec_sc as cs
from cellspec_sc.errors import CellspecError


def frame_um(x, image_id="img1"):
    """(width, height) of an image in micrometres, from its images row."""
    row = x.images.set_index("image_id").loc[image_id]
    return float(row["width_px"] * row["pixel_size"]), float(row["height_px"] * row["pixel_size"])


def box_um(x):
    """A box over part of img1: from 10% to 60% of its width, 7% to 67% of its height."""
    width, height = frame_um(x)
    return (0.1 * width, 0.07 * height, 0.6 * width, 0.67 * height)


def expected_cells(x, image_id, x0, y0, x1, y1):
    c = x.cells
    inside = (c["image_id"] == image_id) & c["x"].between(x0, x1) & c["y"].between(y0, y1)
    return {(image_id, cell_id) for cell_id in c.loc[inside, "cell_id"]}


def check_subset(y, x, wanted):
    """y is x restricted to the (image_id, cell_id) keys in wanted, contacts trimmed, history noted."""
    assert y.validate().ok
    keys = set(zip(y.cells["image_id"], y.cells["cell_id"], strict=True))
    assert keys == wanted
    pairs = set(zip(y.adjacency["image_id"], y.adjacency["cell_id_a"], y.adjacency["cell_id_b"], strict=True))
    all_pairs = set(zip(x.adjacency["image_id"], x.adjacency["cell_id_a"], x.adjacency["cell_id_b"], strict=True))
    assert pairs == {(i, a, b) for i, a, b in all_pairs if (i, a) in keys and (i, b) in keys}
    assert len(pairs) < len(all_pairs)
    rows = [k in wanted for k in zip(x.cells["image_id"], x.cells["cell_id"], strict=True)]
    assert y.equals(x.subset(cells=np.array(rows)).replace(provenance=y.provenance))
    assert y.provenance["history"][-1]["details"]["cells_after"] == len(wanted)


@pytest.mark.parametrize("filter_table", [True, False])
def test_bounding_box_query_gives_a_valid_cellspec_of_the_cells_left(xa, tmp_path, filter_table, through_zarr):
    sdata = through_zarr(cs.to_spatialdata(xa), tmp_path / "q.zarr")
    box = box_um(xa)
    q = sd.bounding_box_query(sdata, axes=("x", "y"), min_coordinate=list(box[:2]), max_coordinate=list(box[2:]),
                              target_coordinate_system="img1", filter_table=filter_table)
    wanted = expected_cells(xa, "img1", *box)
    assert 0 < len(wanted) < 40
    if filter_table:
        check_subset(cs.from_spatialdata(q), xa, wanted)
    else:  # the table still has the cells of img2, whose element the query removed
        with pytest.warns(UserWarning, match=r"left out: \{'img2': 40\}"):
            check_subset(cs.from_spatialdata(q), xa, wanted)


def test_bounding_box_query_in_pixels_matches_the_same_box_in_micrometres(xa):
    sdata = cs.to_spatialdata(xa)
    box = box_um(xa)
    in_pixels = [v / 0.5 for v in box]  # pixel size 0.5 um
    q = sd.bounding_box_query(sdata, axes=("x", "y"), min_coordinate=in_pixels[:2], max_coordinate=in_pixels[2:],
                              target_coordinate_system="img1_px")
    wanted = expected_cells(xa, "img1", *box)
    assert 0 < len(wanted) < 40
    check_subset(cs.from_spatialdata(q), xa, wanted)


def test_polygon_query_gives_a_valid_cellspec_of_the_cells_left(xa):
    from shapely.geometry import Polygon

    sdata = cs.to_spatialdata(xa)
    width, height = frame_um(xa)
    triangle = Polygon([(0, 0), (width, 0), (0, height)])  # the top-left half of img1
    q = sd.polygon_query(sdata, triangle, target_coordinate_system="img1")
    c = xa.cells
    in_img1 = c["image_id"] == "img1"
    # a circle is kept when it intersects the triangle: centre distance to the hypotenuse below its radius
    distance = (height * c["x"] + width * c["y"] - width * height) / np.hypot(width, height)
    radius = np.sqrt(c["area"] / np.pi)
    wanted = {("img1", cell_id) for cell_id in c.loc[in_img1 & (distance < radius), "cell_id"]}
    assert 0 < len(wanted) < 40
    check_subset(cs.from_spatialdata(q), xa, wanted)


def test_filtering_the_table_keeps_the_cells_of_the_rows_left(xa, tmp_path, through_zarr):
    import annsel as an

    sdata = cs.to_spatialdata(xa)
    tumour = set(zip(*xa.cells.loc[xa.cells["classification"] == "Tumor", ["image_id", "cell_id"]].T.to_numpy(),
                     strict=True))
    by_query = sdata.filter_by_table_query("table", obs_expr=an.col("classification") == "Tumor")
    check_subset(cs.from_spatialdata(by_query), xa, tumour)
    table = sdata.tables["table"]
    sdata.tables["table"] = table[(table.obs["classification"] == "Tumor").to_numpy()].copy()
    check_subset(cs.from_spatialdata(through_zarr(sdata, tmp_path / "f.zarr")), xa, tumour)


def test_rows_of_the_regions_interleaved_keep_every_cell_in_the_table_order(xa, monkeypatch):
    """Table rows shuffled (one left out: a reordered X of the same shape reads as changed in place), so each
    region's rows are scattered, not the slice to_spatialdata writes: every cell left stays, in the table's
    order, as from_anndata gives the same rows of to_anndata."""
    # both sides note a history step: one clock second for both, or they differ when a second turns between them
    monkeypatch.setattr("cellspec_sc.model._provenance.utc_now", lambda: "2026-12-04T08:15:48Z")
    sdata = cs.to_spatialdata(xa)
    order = np.random.default_rng(3).permutation(xa.n_cells)[1:]
    sdata.tables["table"] = sdata.tables["table"][order].copy()
    regions = sdata.tables["table"].obs["cs__region"].to_numpy()
    assert (regions[:-1] != regions[1:]).sum() > 2  # scattered
    back = cs.from_spatialdata(sdata)
    assert back.differences(cs.from_anndata(cs.to_anndata(xa)[order])) == []
    assert back.provenance["history"][-1]["time_utc"] == "2026-12-04T08:15:48Z"  # the pinned clock was used
    assert back.cells["cell_id"].tolist() == xa.cells["cell_id"].iloc[order].tolist()


def test_a_query_that_keeps_no_cell_is_reported(xa):
    q = sd.bounding_box_query(cs.to_spatialdata(xa), axes=("x", "y"), min_coordinate=[-50, -50],
                              max_coordinate=[-10, -10], target_coordinate_system="img1")
    with pytest.raises(CellspecError, match="keeps no cell"):
        cs.from_spatialdata(q)


def test_removing_an_element_drops_its_cells_unless_asked_not_to(xa):
    sdata = cs.to_spatialdata(xa)
    del sdata.shapes["img2"]
    with pytest.warns(UserWarning, match="not in the SpatialData are left out"):
        assert set(cs.from_spatialdata(sdata).cells["image_id"]) == {"img1"}
    assert cs.from_spatialdata(sdata, restrict_to_shapes=False).equals(xa)
