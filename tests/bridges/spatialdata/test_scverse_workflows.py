"""spatialdata, spatialdata-plot and spatialdata-io with the SpatialData bridge: plots with y downward, aggregation,
queries and concatenation give valid cellspecs with the right values; spatialdata-io's readers on folders built here
are read with presets."""

from __future__ import annotations

import anndata as ad
import geopandas as gpd
import matplotlib
import numpy as np
import pandas as pd
import pytest
import shapely
import spatialdata as sd
import spatialdata_io
import spatialdata_plot  # noqa: F401 - registers sdata.pl
import tifffile
from skimage.measure import regionprops_table
from spatialdata.models import ShapesModel
from spatialdata.transformations import Identity

import cellspec_sc as cs
from scverse_cells import layout_cellspec, red_pixels_in_top_left, write_mcquant_csv

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def layout():
    return layout_cellspec()


def cd3_sum(x, mask):
    return float(x.measurement_frame(["cell:CD3:mean"]).to_numpy().ravel()[mask].sum())


def test_render_shapes_draws_y_downward(layout):
    import matplotlib.pyplot as plt

    sdata = cs.to_spatialdata(layout)
    sdata.tables["table"].uns["marked_colors"] = ["#d3d3d3", "#ff0000"]  # categories no, yes
    fig, ax = plt.subplots(figsize=(4, 4), dpi=80)
    sdata.pl.render_shapes("left", color="marked").pl.show(coordinate_systems="left", ax=ax, legend_loc=None)
    count, col, row = red_pixels_in_top_left(fig, ax)
    plt.close(fig)
    assert count > 20 and col < 0.1 and row < 0.1  # the cell at the smallest x and y is top-left


def test_aggregate_sums_the_cells_inside_a_polygon(layout):
    sdata = cs.to_spatialdata(layout)
    box = ShapesModel.parse(gpd.GeoDataFrame(geometry=[shapely.box(0, 0, 100, 100)]),
                            transformations={"left": Identity()})
    out = sd.aggregate(values="left", values_sdata=sdata, by=box, value_key="cell:CD3:mean", agg_func="sum",
                       target_coordinate_system="left", table_name="table")
    cells = layout.cells
    inside = ((cells["image_id"] == "left") & (cells["x"] < 100) & (cells["y"] < 100)).to_numpy()
    assert inside.sum() == 100
    assert out.tables["table"].X.toarray()[0, 0] == pytest.approx(cd3_sum(layout, inside), rel=1e-12)


def test_bounding_box_query_gives_the_cells_inside(layout):
    sdata = cs.to_spatialdata(layout)
    q = sd.bounding_box_query(sdata, axes=("x", "y"), min_coordinate=[0, 0], max_coordinate=[100, 60],
                              target_coordinate_system="left")
    part = cs.from_spatialdata(q)
    assert part.validate().ok
    cells = layout.cells
    inside = (cells["image_id"] == "left") & (cells["x"] < 100) & (cells["y"] < 60)
    assert sorted(part.cells["cell_id"]) == sorted(cells.loc[inside, "cell_id"])
    assert part.adjacency["cell_id_a"].isin(part.cells["cell_id"]).all()


def test_concatenated_objects_become_one_valid_complete_cellspec(layout):
    other = layout_cellspec(seed=1)
    c = sd.concatenate({"a": cs.to_spatialdata(layout), "b": cs.to_spatialdata(other)})
    y = cs.from_spatialdata(c)
    assert y.validate().ok
    assert y.images["image_id"].tolist() == ["left-a", "top-a", "left-b", "top-b"]  # as spatialdata named elements
    assert y.n_cells == 2 * layout.n_cells and y.feature_ids == layout.feature_ids
    assert len(y.channels) == 2 * len(layout.channels) and len(y.adjacency) == 2 * len(layout.adjacency)
    assert y.measurements[layout.n_cells:].tobytes() == other.measurements.tobytes()
    back = y.subset(cells=(y.cells["image_id"].isin(["left-b", "top-b"])).to_numpy())
    assert back.cells["cell_id"].tolist() == other.cells["cell_id"].tolist()
    assert [t["table"] for t in y.provenance["history"][-1]["details"]["tables"]] == ["table-a", "table-b"]


def test_concatenated_tables_lost_their_records_and_are_refused(layout):
    c = sd.concatenate({"a": cs.to_spatialdata(layout), "b": cs.to_spatialdata(layout)}, concatenate_tables=True)
    with pytest.raises(cs.CellspecError, match="concatenate_tables=True"):
        cs.from_spatialdata(c, sample_key="sample_id", pixel_size=0.5, coordinate_unit="um")


# -- spatialdata-io ---------------------------------------------------------------------------------------------
def label_mask(height=60, width=80):
    """Rectangular cells of different sizes, labels 1..n."""
    mask = np.zeros((height, width), dtype=np.uint16)
    label = 0
    for top in range(2, height - 10, 14):
        for left in range(3, width - 10, 17):
            label += 1
            mask[top:top + 6 + label % 5, left:left + 8 + label % 7] = label
    return mask


def write_steinbock_folder(root, pixel_channels=("CD3", "CD20")):
    """The steinbock layout spatialdata_io.steinbock reads: ome/<img>.ome.tiff, masks_deepcell/<img>.tiff and
    cells.h5ad (steinbock's `export anndata`: mean intensities in X, scikit-image regionprops in obs). steinbock
    0.16's own export passes dtype= to AnnData (removed in anndata 0.13), so the table is written here."""
    rng = np.random.default_rng(5)
    (root / "ome").mkdir(parents=True)
    (root / "masks_deepcell").mkdir()
    mask = label_mask()
    pixels = rng.uniform(0, 50, (len(pixel_channels), *mask.shape)).astype(np.float32)
    tifffile.imwrite(root / "ome" / "img1.ome.tiff", pixels)
    tifffile.imwrite(root / "masks_deepcell" / "img1.tiff", mask)
    props = pd.DataFrame(regionprops_table(mask, intensity_image=np.moveaxis(pixels, 0, -1), properties=(
        "label", "area", "centroid", "axis_major_length", "axis_minor_length", "eccentricity", "intensity_mean")))
    x = props[[f"intensity_mean-{i}" for i in range(len(pixel_channels))]].to_numpy(dtype=np.float32)
    obs = props[["area", "centroid-0", "centroid-1", "axis_major_length", "axis_minor_length", "eccentricity"]].copy()
    obs.index = [f"img1 {label}" for label in props["label"]]
    obs["Image"] = obs["image"] = "img1.tiff"
    adata = ad.AnnData(X=x, obs=obs, var=pd.DataFrame({"channel": list(pixel_channels)}, index=list(pixel_channels)))
    adata.write_h5ad(root / "cells.h5ad")
    return props


def test_preset_spatialdata_io_steinbock(tmp_path):
    props = write_steinbock_folder(tmp_path / "steinbock")
    sdata = spatialdata_io.steinbock(tmp_path / "steinbock")
    table = sdata.tables["table"]
    assert np.array_equal(table.obsm["spatial"][:, 0], props["centroid-0"])  # spatialdata-io keeps (y, x)
    x = cs.from_spatialdata(sdata, preset="spatialdata-io:steinbock", pixel_size=1.5)
    assert x.validate().ok
    assert x.cells["x"].to_numpy().tobytes() == ((props["centroid-1"].to_numpy() + 0.5) * 1.5).tobytes()
    assert x.cells["y"].to_numpy().tobytes() == ((props["centroid-0"].to_numpy() + 0.5) * 1.5).tobytes()
    assert x.cells["area"].tolist() == (props["area"] * (1.5 * 1.5)).tolist()  # um2
    assert x.cells["cell_id"].tolist() == [str(v) for v in props["label"]]
    assert x.feature_ids == ["cell:CD3:mean", "cell:CD20:mean", "cell:area", "cell:major_axis_length",
                             "cell:minor_axis_length", "cell:eccentricity"]
    np.testing.assert_array_equal(x.measurements[:, 0], props["intensity_mean-0"].to_numpy(dtype=np.float32))
    assert x.images["image_id"].tolist() == ["img1.tiff"]
    assert "centroid_0" not in x.cells and "area_2" not in x.cells


def write_mcmicro_folder(root):
    (root / "qc").mkdir(parents=True)
    (root / "qc" / "params.yml").write_text("workflow:\n  tma: false\n")
    (root / "registration").mkdir()
    (root / "segmentation" / "unmicst-exemplar-001").mkdir(parents=True)
    (root / "quantification").mkdir()
    pd.DataFrame({"channel_number": [1, 2, 3, 4], "cycle": [1, 1, 2, 2],
                  "marker_name": ["DNA_1", "CD3D", "CD20", "KI67"]}).to_csv(root / "markers.csv", index=False)
    tifffile.imwrite(root / "registration" / "exemplar-001.ome.tif", np.zeros((4, 60, 80), dtype=np.uint16))
    tifffile.imwrite(root / "segmentation" / "unmicst-exemplar-001" / "cell.ome.tif", label_mask())
    return write_mcquant_csv(root / "quantification" / "exemplar-001--unmicst_cell.csv")


def test_preset_spatialdata_io_mcmicro(tmp_path):
    csv = write_mcmicro_folder(tmp_path / "mcmicro")
    try:
        sdata = spatialdata_io.mcmicro(tmp_path / "mcmicro")
    except TypeError as err:
        if "dtype" not in str(err):
            raise
        pytest.skip(f"spatialdata-io {spatialdata_io.__version__}'s mcmicro reader passes dtype= to AnnData, which "
                    f"anndata {ad.__version__} refuses (removed in 0.13); it works with anndata < 0.13 ({err})")
    table = next(iter(sdata.tables.values()))
    x = cs.from_spatialdata(sdata, preset="spatialdata-io:mcmicro", pixel_size=0.65)
    direct = cs.read_mcmicro(tmp_path / "mcmicro" / "quantification" / "exemplar-001--unmicst_cell.csv",
                             pixel_size=0.65)
    assert table.n_obs == len(csv)
    for column in ("x", "y", "area"):
        assert x.cells[column].to_numpy().tobytes() == direct.cells[column].to_numpy().tobytes()
    assert x.measurements.tobytes() == direct.measurements.tobytes()


def test_preset_spatialdata_io_mcmicro_on_the_table_its_reader_builds(tmp_path):
    """The AnnData of spatialdata_io.readers.mcmicro._create_anndata (0.7.1), built as it does but without the
    dtype= argument that anndata 0.13 refuses: markers in X, regionprops in obs, (X_centroid, Y_centroid) in
    obsm["spatial"], region <image>_<mask>."""
    path = tmp_path / "exemplar-001--unmicst_cell.csv"
    csv = write_mcquant_csv(path)
    markers = ["DNA_1", "CD3D", "CD20", "KI67"]
    table = pd.read_csv(path)
    adata = ad.AnnData(table[markers].to_numpy(), obs=table.drop(columns=markers + ["X_centroid", "Y_centroid"]),
                       var=pd.DataFrame({"marker_name": markers}, index=markers),
                       obsm={"spatial": table[["X_centroid", "Y_centroid"]].to_numpy()})
    adata.obs["region"] = pd.Categorical(["exemplar-001_cell"] * len(adata))
    x = cs.from_anndata(adata, preset="spatialdata-io:mcmicro", pixel_size=0.65)
    direct = cs.read_mcmicro(path, pixel_size=0.65)
    assert x.validate().ok and x.feature_ids == direct.feature_ids
    assert x.measurements.tobytes() == direct.measurements.tobytes()
    np.testing.assert_array_equal(x.measurements[:, 1], csv["CD3D"].to_numpy())
    for column in ("x", "y", "x_px", "y_px", "area"):
        assert x.cells[column].to_numpy().tobytes() == direct.cells[column].to_numpy().tobytes(), column
