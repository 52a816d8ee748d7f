"""read_mcmicro on hand-written mcquant tables (tests/data/mcmicro) and real OME-TIFF files."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import tifffile

import cellspec_sc as cs
from cellspec_sc.errors import CellspecError, InputError
from cellspec_sc.readers import ReaderWarning
from cellspec_sc.readers.mcmicro._plan import ADAPTER_VERSION
from exports import DATA as DATA_ROOT

DATA = DATA_ROOT / "mcmicro"
CELL = DATA / "exemplar-001--unmicst_cell.csv"
X_RAW = [12.5, 40.0, 7.333333333333333, 60.25]
Y_RAW = [3.0, 8.75, 21.666666666666668, 30.5]


def column(x, feature_id):
    return x.measurements[:, x.feature_ids.index(feature_id)]


def test_current_layout_ids_features_units_and_values():
    x = cs.read_mcmicro(CELL, pixel_size=0.65)
    assert cs.validate(x).ok
    assert x.cells["cell_id"].tolist() == ["1", "2", "3", "7"]
    assert x.images["image_id"].tolist() == ["exemplar-001"]  # the part of the file name before "--"
    assert x.feature_ids == [
        "cell:DNA_1:mean", "cell:AF488:mean", "cell:CD3:mean", "cell:CD8a:mean", "cell:DNA_1:median",
        "cell:CD3:median", "cell:CD8a:median", "cell:CD3:sum", "other:cd3_gini_index", "cell:area",
        "cell:major_axis_length", "cell:minor_axis_length", "cell:eccentricity", "cell:solidity", "cell:extent",
        "cell:orientation"]
    units = dict(zip(x.dictionary["feature_id"], x.dictionary["unit"], strict=True))
    assert (units["cell:area"], units["cell:major_axis_length"], units["cell:orientation"],
            units["cell:eccentricity"], units["cell:CD3:mean"]) == ("px2", "px", "rad", "1", "a.u.")
    assert column(x, "cell:CD3:sum").tolist()[:2] == [46575.0, 1250580.0]
    assert column(x, "cell:orientation").tolist() == [-1.2071, 0.3142, 1.5708, 0.0]  # radians, raw
    assert column(x, "cell:area").tolist() == [150.0, 240.0, 103.0, 188.0]  # pixels, raw
    assert x.channels["marker"].tolist() == ["DNA_1", "AF488", "CD3", "CD8a"]
    assert x.provenance["counts"] == {"rows_read": 4, "rows_kept": 4, "na_converted": 4, "nonfinite_converted": 0,
                                      "missing_in_source": 0}
    assert np.isnan(column(x, "cell:CD3:mean")[3])


def test_centroids_follow_the_regionprops_pixel_centre():
    x = cs.read_mcmicro(CELL, pixel_size=0.65)
    # regionprops puts the centre of pixel i at i; the spec at i + 0.5
    assert x.cells["x_px"].tolist() == [v + 0.5 for v in X_RAW]
    assert x.cells["y_px"].tolist() == [v + 0.5 for v in Y_RAW]
    assert x.cells["x"].tolist() == [(v + 0.5) * 0.65 for v in X_RAW]
    assert x.cells["x"].iloc[0] == pytest.approx(8.45)
    assert x.cells["y"].iloc[1] == pytest.approx(9.25 * 0.65)
    assert x.cells["area"].tolist() == pytest.approx([63.375, 101.4, 43.5175, 79.43], rel=1e-14)


def test_provenance_of_the_mcmicro_reader():
    x = cs.read_mcmicro(CELL, pixel_size=0.65, markers_csv=DATA / "markers.csv")
    prov = x.provenance
    assert prov["reader"]["adapter"] == "mcmicro" and prov["reader"]["adapter_version"] == ADAPTER_VERSION
    assert [i["path_basename"] for i in prov["inputs"]] == [CELL.name, "markers.csv"]
    assert prov["inputs"][1]["sha256"] == hashlib.sha256((DATA / "markers.csv").read_bytes()).hexdigest()
    assert prov["parameters"]["pixel_size_source"] == "argument"
    assert prov["parameters"]["compartment"] == "cell"


def test_without_a_pixel_size_the_reader_says_how_to_pass_it():
    with pytest.raises(InputError, match=r"pixel_size=.*image="):
        cs.read_mcmicro(CELL)


def test_pixel_size_from_an_ome_tiff(tmp_path):
    image = tmp_path / "exemplar-001.ome.tif"
    data = np.zeros((4, 40, 64), dtype=np.uint16)
    tifffile.imwrite(image, data, ome=True, metadata={
        "axes": "CYX", "PhysicalSizeX": 0.325, "PhysicalSizeXUnit": "µm", "PhysicalSizeY": 0.325,
        "PhysicalSizeYUnit": "µm", "Channel": {"Name": ["DNA_1", "AF488", "CD3", "CD8a"]}})
    x = cs.read_mcmicro(CELL, image=image)
    assert cs.validate(x).ok
    assert x.images["pixel_size"].tolist() == [0.325]
    assert x.images["width_px"].tolist() == [64] and x.images["height_px"].tolist() == [40]
    assert x.images["source_image"].tolist() == ["exemplar-001.ome.tif"]
    assert x.images["source_image_sha256"].tolist() == [hashlib.sha256(image.read_bytes()).hexdigest()]
    assert x.cells["x"].tolist() == [(v + 0.5) * 0.325 for v in X_RAW]
    assert x.provenance["parameters"]["pixel_size_source"] == "OME-XML PhysicalSizeX of image="
    assert [i["path_basename"] for i in x.provenance["inputs"]] == [CELL.name, image.name]


def test_a_tiff_without_ome_metadata_is_refused(tmp_path):
    image = tmp_path / "plain.tif"
    tifffile.imwrite(image, np.zeros((8, 8), dtype=np.uint8))
    with pytest.raises(InputError, match="no OME-XML"):
        cs.read_mcmicro(CELL, image=image)


def test_pixel_size_from_a_companion_ome_xml_in_nanometres():
    x = cs.read_mcmicro(CELL, image=DATA / "exemplar-001.ome.xml")
    assert x.images["pixel_size"].iloc[0] == pytest.approx(0.65, rel=1e-15)
    assert x.images["width_px"].tolist() == [64] and x.images["height_px"].tolist() == [40]
    assert "source_image" not in x.images  # an .ome.xml is metadata, not the image


def test_markers_csv_sets_channel_order_and_marker_map_renames(tmp_path):
    markers = tmp_path / "markers.csv"
    markers.write_text("channel_number,cycle_number,marker_name\n3,1,CD3\n1,1,DNA_1\n4,1,CD8a\n2,1,AF488\n"
                       "5,2,Ki67\n", encoding="utf-8")
    with pytest.warns(ReaderWarning, match=r"names 1 channel\(s\) with no column in the table \('Ki67'\)"):
        x = cs.read_mcmicro(CELL, pixel_size=0.65, markers_csv=markers, marker_map={"CD8a": "CD8"})
    assert cs.validate(x).ok
    assert x.channels["channel_name"].tolist() == ["DNA_1", "AF488", "CD3", "CD8a", "Ki67"]
    assert x.channels["marker"].tolist() == ["DNA_1", "AF488", "CD3", "CD8", "Ki67"]
    assert "cell:CD8:median" in x.feature_ids
    assert x.dictionary.set_index("feature_id").at["cell:CD8:mean", "marker_source"] == "CD8a"


def test_markers_csv_duplicates_are_named_as_mcquant_names_them(tmp_path):
    markers = tmp_path / "markers.csv"
    markers.write_text("channel_number,cycle_number,marker_name\n1,1,DNA\n2,1,CD3\n3,2,DNA\n", encoding="utf-8")
    table = tmp_path / "s--mesmer_cell.csv"
    table.write_text("CellID,DNA_1,CD3,DNA_2,X_centroid,Y_centroid,Area\n1,100,5,90,1,2,30\n", encoding="utf-8")
    x = cs.read_mcmicro(table, pixel_size=1.0, markers_csv=markers)
    assert x.feature_ids == ["cell:DNA_1:mean", "cell:CD3:mean", "cell:DNA_2:mean", "cell:area"]
    assert x.channels["marker"].tolist() == ["DNA_1", "CD3", "DNA_2"]


def test_old_layout_with_mask_suffixes_and_column_centroids():
    x = cs.read_mcmicro(DATA / "sample2_cellMask.csv", pixel_size=0.5)
    assert cs.validate(x).ok
    assert x.images["image_id"].tolist() == ["sample2"]
    assert x.feature_ids[:4] == ["cell:DNA1:mean", "cell:CD45:mean", "cytoplasm:DNA1:mean", "cytoplasm:CD45:mean"]
    assert x.dictionary["source_name"].tolist()[2] == "DNA1_nucleiRingMask"
    assert x.cells["x"].tolist() == [101.0 * 0.5, 120.5 * 0.5, 141.25 * 0.5]
    assert x.provenance["parameters"]["centroids"] == ["X_centroid", "Y_centroid", "column_centroid", "row_centroid"]


def test_only_column_and_row_centroids(tmp_path):
    table = tmp_path / "old.csv"
    table.write_text("CellID,CD3,column_centroid,row_centroid,Area\n5,10,3,4,20\n", encoding="utf-8")
    x = cs.read_mcmicro(table, pixel_size=2.0)
    assert x.cells["x"].tolist() == [7.0] and x.cells["y"].tolist() == [9.0]


def test_disagreeing_centroid_columns_stop(tmp_path):
    table = tmp_path / "mixed.csv"
    table.write_text("CellID,CD3,X_centroid,Y_centroid,column_centroid,row_centroid\n1,10,3,4,3,4\n2,10,5,6,7,6\n",
                     encoding="utf-8")
    with pytest.raises(InputError, match=r"mixed.csv: line 3: 'X_centroid' and 'column_centroid' disagree"):
        cs.read_mcmicro(table, pixel_size=1.0)


def test_nuclei_mask_file_gives_nucleus_features_and_no_cell_area(tmp_path):
    table = tmp_path / "exemplar-001--unmicst_nuclei.csv"
    table.write_text("CellID,DNA_1,CD3,X_centroid,Y_centroid,Area,Solidity\n1,900,12,10,10,40,0.9\n",
                     encoding="utf-8")
    x = cs.read_mcmicro(table, pixel_size=0.5)
    assert x.feature_ids == ["nucleus:DNA_1:mean", "nucleus:CD3:mean", "nucleus:area", "nucleus:solidity"]
    assert "area" not in x.cells


@pytest.mark.parametrize("text, pattern", [
    ("", r"line 1: the file is empty"),
    ("CellID,CD3,X_centroid,Y_centroid\n", r"line 2: .*no data rows"),
    ("CellID,CD3,X_centroid,Y_centroid\n1,5,1,1\n2,x5,1,1\n", r"line 3, column 'CD3': cannot parse 'x5'"),
    ("CellID,CD3,X_centroid,Y_centroid\n1,5,1,1\n2,6,1,1\n1,7,1,1\n", r"lines 2 and 4, column 'CellID'"),
    ("CellID;CD3;X_centroid;Y_centroid\n1;5;1;1\n", r"line 1: .*semicolon.*wrong separator"),
])
def test_bad_mcquant_files(tmp_path, text, pattern):
    table = tmp_path / "bad--s_cell.csv"
    table.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=pattern) as err:
        cs.read_mcmicro(table, pixel_size=1.0)
    assert str(err.value).startswith("bad--s_cell.csv")


@pytest.mark.parametrize("ids, duplicate", [
    (["1", "2", "10"], None),  # mcquant's own: integers in increasing order
    (["1", "01", "2"], None),  # increasing as integers, distinct as text
    (["2", "02", "3"], None),  # equal as integers, distinct as text: encoded
    (["10", "9", "1"], None),  # decreasing: encoded
    (["3", "1", "3"], (2, 4)),  # a duplicate: refused with both lines
    (["a1", "b", "a1"], (2, 4)),
])
def test_cell_ids_are_checked_as_text(tmp_path, ids, duplicate):
    table = tmp_path / "ids--s_cell.csv"
    table.write_text("CellID,CD3,X_centroid,Y_centroid\n" + "".join(f"{i},5,1,1\n" for i in ids), encoding="utf-8")
    if duplicate is not None:
        with pytest.raises(InputError, match=rf"lines {duplicate[0]} and {duplicate[1]}, column 'CellID'"):
            cs.read_mcmicro(table, pixel_size=1.0)
        return
    x = cs.read_mcmicro(table, pixel_size=1.0)
    assert x.cells["cell_id"].tolist() == ids
    assert x.validation_memo[2].status("cells_key_unique") == "pass"
    assert cs.validate(x.replace(cells=x.cells.assign(cell_id=[ids[0]] * len(ids)))).status("cells_key_unique") \
        == "fail"


def test_a_qupath_file_is_not_an_mcquant_table():
    with pytest.raises(CellspecError) as err:
        cs.read_mcmicro(DATA_ROOT / "qupath" / "v06_compartment_first.csv", pixel_size=1)
    message = str(err.value)
    # the file is another tool's: the refusal names that tool and its reader instead of mcquant's missing columns
    assert "looks like a QuPath measurement export" in message and "use read_qupath" in message
