"""steinbock output folders as pipelines leave them: tables under a segmentation's sub-folder with images.csv
under img/, a panel written with pandas' index column, the early layout (cell_intensities/, cell_regionprops/,
cell_graphs/ with Object1/Object2), a choice between segmentations, and no silent labels for the aggregation and
the neighbour method."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cellspec_sc as cs
from cellspec_sc.readers import ReaderWarning

INTENSITIES = pd.DataFrame({"DNA1": [5.0, 4.0, 1.5], "CD3": [0.5, 3.5, np.nan]},
                           index=pd.Index([1, 2, 5], name="Object"))
REGIONPROPS = pd.DataFrame({"area": [12, 20, 7], "centroid-0": [10.0, 12.0, 3.25], "centroid-1": [4.0, 7.0, 8.5]},
                           index=pd.Index([1, 2, 5], name="Object"))
PAIRS = [(1, 2), (2, 1), (2, 5), (5, 2)]


def write(root: Path, *, tables: str = "", early: bool = False, images_place: str = "img/images.csv") -> Path:
    """A steinbock folder written with pandas as steinbock writes it; panel.csv with pandas' index column."""
    base = root / tables if tables else root
    names = ("cell_intensities", "cell_regionprops", "cell_graphs") if early else \
        ("intensities", "regionprops", "neighbors")
    for name in names:
        (base / name).mkdir(parents=True, exist_ok=True)
    INTENSITIES.to_csv(base / names[0] / "P1_001.csv")
    REGIONPROPS.to_csv(base / names[1] / "P1_001.csv")
    graph = pd.DataFrame(PAIRS, columns=["Object1", "Object2"] if early else ["Object", "Neighbor"])
    graph["Distance"] = 1.0
    graph.to_csv(base / names[2] / "P1_001.csv", index=False)
    pd.DataFrame({"channel": ["Ir191", "Yb176"], "name": ["DNA1", "CD3"], "keep": [1, 1]}).to_csv(root / "panel.csv")
    (root / images_place).parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"image": ["P1_001.tiff"], "width_px": [100], "height_px": [80], "acquisition_width_um": [50.0],
                  "acquisition_height_um": [40.0]}).to_csv(root / images_place, index=False)
    return root


def read(folder: Path, **options) -> cs.CellSpec:
    return cs.read_steinbock(folder, aggregation="mean", neighbors_method="mask_touching", **options)


def test_a_segmentation_subfolder_with_images_csv_under_img_and_an_indexed_panel_reads(tmp_path):
    x = read(write(tmp_path / "run", tables="deepcell"))
    assert (tmp_path / "run" / "panel.csv").read_text().startswith(",channel,name")
    assert x.cells["cell_id"].tolist() == ["1", "2", "5"]
    assert x.cells["x"].tolist() == [(c + 0.5) * 0.5 for c in REGIONPROPS["centroid-1"]]  # 50 um over 100 px
    assert np.array_equal(x.measurements[:, :2], INTENSITIES.to_numpy(), equal_nan=True)
    assert x.channels["channel_name"].tolist() == ["Ir191", "Yb176"]
    assert x.adjacency[["cell_id_a", "cell_id_b"]].values.tolist() == [["1", "2"], ["2", "5"]]
    parameters = x.provenance["parameters"]
    assert (parameters["tables"], parameters["images_csv"], parameters["layout"]) == \
        ("deepcell", "img/images.csv", "steinbock")
    assert [i["path_basename"] for i in x.provenance["inputs"]] == [
        "panel.csv", "img/images.csv", "deepcell/intensities/P1_001.csv", "deepcell/regionprops/P1_001.csv",
        "deepcell/neighbors/P1_001.csv"]


def test_the_early_layout_reads_as_the_current_one(tmp_path):
    early = read(write(tmp_path / "early", early=True, images_place="images.csv"))
    current = read(write(tmp_path / "current", images_place="images.csv"))
    assert early.cells.equals(current.cells)
    assert np.array_equal(early.measurements, current.measurements, equal_nan=True)
    assert early.adjacency.equals(current.adjacency)
    assert early.provenance["parameters"]["layout"] == "early steinbock"


def test_several_segmentations_are_refused_naming_them_and_segmentation_chooses(tmp_path):
    root = write(tmp_path / "run", tables="deepcell")
    write(root, tables="cellpose")
    with pytest.raises(cs.InputError, match=r"2 folders of per-image tables \(cellpose/intensities/, "
                                            r"deepcell/intensities/\); choose one with segmentation="):
        read(root)
    x = read(root, segmentation="cellpose")
    assert x.provenance["parameters"]["tables"] == "cellpose"
    with pytest.raises(cs.InputError, match="segmentation='ilastik': no sub-folder of that name"):
        read(root, segmentation="ilastik")


def test_read_export_recognises_a_segmentation_subfolder_layout(tmp_path):
    x = cs.read_export(write(tmp_path / "run", tables="deepcell"), aggregation="median")
    assert x.provenance["parameters"]["recognised_as"].startswith("steinbock: read_steinbock")
    assert x.feature_ids[:2] == ["cell:DNA1:median", "cell:CD3:median"]


def test_without_aggregation_the_mean_is_assumed_aloud_and_recorded(tmp_path):
    folder = write(tmp_path / "run")
    with pytest.warns(ReaderWarning, match="do not say which --aggr measured them; read as the mean"):
        x = cs.read_steinbock(folder, neighbors_method="mask_touching")
    assert x.feature_ids[:2] == ["cell:DNA1:mean", "cell:CD3:mean"]
    assert x.provenance["parameters"]["aggregation_source"].startswith("assumed")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReaderWarning)
        y = cs.read_steinbock(folder, aggregation="median", neighbors_method="mask_touching")
    assert y.feature_ids[:2] == ["cell:DNA1:median", "cell:CD3:median"]
    assert y.provenance["parameters"]["aggregation_source"] == "argument"


def test_without_neighbors_method_touching_is_assumed_aloud_and_recorded(tmp_path):
    folder = write(tmp_path / "run")
    with pytest.warns(ReaderWarning, match="do not say how steinbock measured them; read as mask_touching"):
        x = cs.read_steinbock(folder, aggregation="mean")
    assert x.provenance["parameters"]["neighbors"]["method_source"].startswith("assumed")
    assert set(x.adjacency["method"]) == {"mask_touching"}


@pytest.mark.parametrize("kind", ["borders", "expansion", "centroids"])
def test_distance_limited_or_expanded_neighbours_are_left_out_with_the_reason(tmp_path, kind):
    with pytest.warns(ReaderWarning, match=f"--type {kind} .* are not contacts of any adjacency method of the spec"):
        x = cs.read_steinbock(write(tmp_path / "run"), aggregation="mean", neighbors_method=kind)
    assert x.adjacency is None
    assert x.provenance["parameters"]["neighbors"] == {"left_out": f"--type {kind}"}


def test_tables_longer_than_their_start_suggests_read_whole(tmp_path):
    # rows with long values first, then short ones: the rows estimated from the start of each file fall short
    root = write(tmp_path / "run")
    n = 40_000
    ids = np.arange(1, n + 1)
    values = np.where(ids <= 4_000, 123456.789012345, 1.0)
    for stem in ("P1_001", "P1_002"):
        pd.DataFrame({"DNA1": values, "CD3": values}, index=pd.Index(ids, name="Object")).to_csv(
            root / "intensities" / f"{stem}.csv")
        pd.DataFrame({"area": 5, "centroid-0": 1.0, "centroid-1": 2.0}, index=pd.Index(ids, name="Object")).to_csv(
            root / "regionprops" / f"{stem}.csv")
    (root / "neighbors" / "P1_001.csv").unlink()
    x = cs.read_steinbock(root, pixel_size=1.0, aggregation="mean", neighbors=False)
    assert x.n_cells == 2 * n
    expected = np.concatenate([pd.read_csv(root / "intensities" / f"{s}.csv").to_numpy()[:, 1:]
                               for s in ("P1_001", "P1_002")])
    assert np.array_equal(x.measurements[:, :2], expected)
