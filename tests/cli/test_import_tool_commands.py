"""``cellspec import halo|inform|cellprofiler`` and the new options of ``cellspec import steinbock``: what the
command writes is what the reader reads with the same options; refusals exit with status 2 naming the rule."""

from __future__ import annotations

import pandas as pd

import cellspec_sc as cs
from cellspec_sc.cli.main import main
from tool_layouts import INFORM_HEAD, INFORM_ROWS, tsv, write_cellprofiler, write_halo, write_inform, write_steinbock


def test_import_halo_writes_what_read_halo_reads(tmp_path, capsys):
    path = write_halo(tmp_path)
    assert main(["import", "halo", str(path), str(tmp_path / "out"), "--pixel-size", "0.25", "--sample-id", "S1"]) == 0
    back, x = cs.read(tmp_path / "out"), cs.read_halo(path, pixel_size=0.25, sample_id="S1")
    assert back.cells["x"].tolist() == x.cells["x"].tolist() and set(back.cells["sample_id"]) == {"S1"}
    assert "3 cells" in capsys.readouterr().out


def test_import_halo_without_a_pixel_size_exits_2(tmp_path, capsys):
    assert main(["import", "halo", str(write_halo(tmp_path)), str(tmp_path / "out")]) == 2
    assert "carry no pixel size" in capsys.readouterr().err


def test_import_inform_takes_the_position_unit(tmp_path):
    head = [h for h in INFORM_HEAD if "(" not in h or "Normalized" in h]
    rows = [[v for h, v in zip(INFORM_HEAD, r, strict=True) if "(" not in h or "Normalized" in h] for r in INFORM_ROWS]
    path = tmp_path / "cell_seg_data.txt"
    path.write_text(tsv(head, rows))
    assert main(["import", "inform", str(path), str(tmp_path / "a"), "--pixel-size", "0.5"]) == 2
    assert main(["import", "inform", str(path), str(tmp_path / "b"), "--pixel-size", "0.5",
                 "--position-unit", "microns"]) == 0
    frame = pd.read_csv(path, sep="\t")
    assert cs.read(tmp_path / "b").cells["x"].tolist() == frame["Cell X Position"].astype(float).tolist()


def test_import_inform_reads_the_merged_table(tmp_path):
    path = write_inform(tmp_path)
    assert main(["import", "inform", str(path), str(tmp_path / "out"), "--pixel-size", "0.5"]) == 0
    assert cs.read(tmp_path / "out").images["image_id"].tolist() == list(dict.fromkeys(r[1] for r in INFORM_ROWS))


def test_import_cellprofiler_chooses_objects_and_keeps_touching_neighbours(tmp_path):
    folder = write_cellprofiler(tmp_path)
    (folder / "MyExpt_Nuclei.csv").write_text((folder / "MyExpt_Cells.csv").read_text())
    assert main(["import", "cellprofiler", str(folder), str(tmp_path / "a"), "--pixel-size", "0.5"]) == 2
    assert main(["import", "cellprofiler", str(folder), str(tmp_path / "b"), "--pixel-size", "0.5",
                 "--objects", "Cells"]) == 0
    back = cs.read(tmp_path / "b")
    assert back.adjacency[["cell_id_a", "cell_id_b"]].values.tolist() == [["1", "2"]]


def test_import_steinbock_takes_segmentation_aggregation_and_neighbour_method(tmp_path):
    root = write_steinbock(tmp_path)
    segmented = tmp_path / "run"
    (segmented / "deepcell").mkdir(parents=True)
    for part in ("intensities", "regionprops", "neighbors"):
        (root / part).rename(segmented / "deepcell" / part)
    (segmented / "cellpose").mkdir()
    (segmented / "cellpose" / "intensities").mkdir()
    (root / "panel.csv").rename(segmented / "panel.csv")
    (root / "images.csv").rename(segmented / "images.csv")
    assert main(["import", "steinbock", str(segmented), str(tmp_path / "a")]) == 2
    assert main(["import", "steinbock", str(segmented), str(tmp_path / "b"), "--segmentation", "deepcell",
                 "--aggregation", "median", "--neighbors-method", "expansion"]) == 0
    back = cs.read(tmp_path / "b")
    assert back.feature_ids[:2] == ["cell:DNA1:median", "cell:CD3:median"] and back.adjacency is None


def test_option_values_are_the_readers_own_words():
    # the CLI spells the tools' words without importing every reader; each must be what the reader takes
    from cellspec_sc.cli import _imports as cli
    from cellspec_sc.readers.inform._plan import POSITION_UNITS
    from cellspec_sc.readers.steinbock._plan import AGGREGATIONS, NEIGHBOR_TYPES

    assert list(cli.STEINBOCK_AGGREGATIONS) == list(AGGREGATIONS)
    assert set(cli.STEINBOCK_NEIGHBOR_TYPES) == set(NEIGHBOR_TYPES)
    assert cli.INFORM_POSITION_UNITS == POSITION_UNITS


def test_a_neighbour_method_outside_the_spec_and_steinbock_is_refused_listing_both(tmp_path, capsys):
    code = main(["import", "cellprofiler", str(write_cellprofiler(tmp_path)), str(tmp_path / "out"),
                 "--pixel-size", "0.5", "--neighbors-method", "voronoi"])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "out").exists()
    assert ("argument --neighbors-method: invalid choice: 'voronoi' (choose from 'mask_touching', "
            "'polygon_intersection', 'delaunay', 'borders', 'expansion', 'centroids')") in err
