"""read_qupath on hand-written exports of every QuPath header style (tests/data/qupath)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

import cellspec_sc as cs
from cellspec_sc.errors import CellspecError, InputError
from cellspec_sc.readers.qupath._plan import ADAPTER_VERSION
from exports import DATA as DATA_ROOT

DATA = DATA_ROOT / "qupath"


def column(x, feature_id):
    return x.measurements[:, x.feature_ids.index(feature_id)]


def dictionary_row(x, feature_id):
    d = x.dictionary.set_index("feature_id")
    return {k: (None if v is cs_na() else v) for k, v in d.loc[feature_id].items()}


def cs_na():
    import pandas as pd

    return pd.NA


# -- 0.4 cell detection ---------------------------------------------------------------------------
def test_v04_cell_detection_ids_coordinates_and_features():
    x = cs.read_qupath(DATA / "v04_cell_detection.tsv", pixel_size=0.5)
    assert cs.validate(x).ok
    assert x.cells["cell_id"].tolist() == ["8c3f0a1e-2b4d-4c6e-9f10-1a2b3c4d5e6f",
                                           "1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b",
                                           "a0b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d"]
    assert x.cells["image_id"].unique().tolist() == ["slide_01.ome.tif"]
    assert x.cells["x"].tolist() == [1523.4, 1530.12, 1611.75]  # micrometres as exported
    assert x.cells["y"].tolist() == [872.25, 880.5, 905.0]
    assert x.cells["classification"].tolist()[:2] == ["Tumor", "Immune cells"]
    assert x.cells["classification"].isna().tolist() == [False, False, True]
    assert x.cells["parent"].tolist()[2] == "Annotation (Stroma)"
    assert "x_px" not in x.cells
    assert x.feature_ids == [
        "nucleus:area", "nucleus:perimeter", "nucleus:circularity", "nucleus:max_caliper", "nucleus:min_caliper",
        "nucleus:eccentricity", "nucleus:DAPI:mean", "nucleus:DAPI:sd", "other:nucleus_dapi_range",
        "nucleus:CD3:mean", "cell:area", "cell:perimeter", "cell:max_caliper", "cell:DAPI:mean", "cell:CD3:mean",
        "cell:CD3:sd", "cytoplasm:CD3:mean", "cytoplasm:CD3:sd", "cell:nucleus_cell_area_ratio"]


def test_v04_units_raw_values_and_na():
    x = cs.read_qupath(DATA / "v04_cell_detection.tsv", pixel_size=0.5)
    units = dict(zip(x.dictionary["feature_id"], x.dictionary["unit"], strict=True))
    # calibrated file: unit-less cell-detection shapes are in micrometres
    assert units["nucleus:area"] == "um2" and units["nucleus:max_caliper"] == "um"
    assert units["nucleus:circularity"] == "1" and units["nucleus:DAPI:sd"] == "a.u."
    assert dictionary_row(x, "nucleus:DAPI:sd")["source_name"] == "Nucleus: DAPI std dev"
    assert column(x, "nucleus:DAPI:sd").tolist() == [402.7, 511.3, 288.45]
    assert column(x, "other:nucleus_dapi_range").tolist() == [2210.0, 2987.0, 1702.0]
    assert np.isnan(column(x, "cytoplasm:CD3:sd")[1])
    assert x.cells["area"].tolist() == [121.5, 88.25, 102.75]  # Cell: Area, already um2
    assert x.provenance["counts"] == {"rows_read": 3, "rows_kept": 3, "na_converted": 1, "nonfinite_converted": 0,
                                      "missing_in_source": 0}
    assert x.channels["marker"].tolist() == ["DAPI", "CD3"]
    assert x.channels["channel_index"].tolist() == [1, 2]


def test_v04_provenance_records_reader_and_hashed_input():
    path = DATA / "v04_cell_detection.tsv"
    x = cs.read_qupath(path, pixel_size=0.5)
    prov = x.provenance
    assert prov["reader"]["adapter"] == "qupath"
    assert prov["reader"]["adapter_version"] == ADAPTER_VERSION
    assert prov["producer"]["tool"] == "QuPath"
    assert prov["inputs"] == [{"path_basename": "v04_cell_detection.tsv", "bytes": path.stat().st_size,
                               "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}]
    assert str(DATA) not in json.dumps(prov)  # no directory paths
    assert prov["parameters"]["pixel_size_source"] == "argument"
    assert prov["parameters"]["header_styles"] == ["cell detection (Nucleus: DAPI mean)"]
    assert x.images["pixel_size"].tolist() == [0.5]


def test_micrometre_centroids_without_pixel_size_stop_with_advice():
    with pytest.raises(InputError, match="pixel_size=") as err:
        cs.read_qupath(DATA / "v04_cell_detection.tsv")
    assert "v04_cell_detection.tsv" in str(err.value)


# -- 0.5 channel first ------------------------------------------------------------------------------
def test_v05_channel_first_object_types_and_stardist():
    x = cs.read_qupath(DATA / "v05_channel_first.tsv", pixel_size=0.325)
    assert cs.validate(x).ok
    assert x.cells["object_type"].tolist() == ["Cell", "Cell", "Cell", "Detection"]  # the annotation is skipped
    assert x.provenance["counts"]["rows_read"] == 5
    assert x.provenance["counts"]["rows_kept"] == 4
    assert x.feature_ids[:2] == ["other:detection_probability", "nucleus:area"]
    assert x.feature_ids[14:] == ["nucleus:DAPI:mean", "nucleus:DAPI:sd", "nucleus:CD3:mean", "cytoplasm:CD3:mean",
                                  "membrane:CD3:mean", "cell:CD3:mean", "cell:CD3:median", "cell:FOXP3:max",
                                  "cell:FOXP3:variance"]
    assert dictionary_row(x, "other:detection_probability")["unit"] == "1"
    assert dictionary_row(x, "nucleus:length")["unit"] == "um"
    assert dictionary_row(x, "cell:max_diameter")["source_name"] == "Cell: Max diameter µm"
    assert column(x, "nucleus:DAPI:sd").tolist() == [210.7729, 198.4435, 240.0561, 150.9]
    assert column(x, "other:detection_probability").tolist() == [0.8731, 0.9312, 0.7764, 0.6602]
    assert x.cells["area"].tolist()[:3] == [96.1187, 140.4976, 80.7711]
    assert np.isnan(x.cells["area"].iloc[3])  # the detection has no cell shape
    counts = x.provenance["counts"]
    assert counts["na_converted"] == 4  # NaN written by QuPath in kept rows
    assert counts["missing_in_source"] == 7  # empty fields of the detection row
    assert x.channels["marker"].tolist() == ["DAPI", "CD3", "FOXP3"]


def test_object_types_choose_rows():
    cells_only = cs.read_qupath(DATA / "v05_channel_first.tsv", pixel_size=0.325, object_types=("Cell",))
    assert cells_only.n_cells == 3
    everything = cs.read_qupath(DATA / "v05_channel_first.tsv", pixel_size=0.325, object_types=None)
    assert everything.cells["object_type"].tolist()[0] == "Annotation"
    assert everything.provenance["counts"]["rows_kept"] == 5
    with pytest.raises(InputError, match="no rows with Object type"):
        cs.read_qupath(DATA / "v05_channel_first.tsv", pixel_size=0.325, object_types=("Tile",))


# -- 0.6 compartment first, CSV, several images ------------------------------------------------------
def test_v06_compartment_first_multi_image_csv():
    x = cs.read_qupath(DATA / "v06_compartment_first.csv", pixel_size={"core_A1.tif": 0.5, "core_B2.tif": 0.25})
    assert cs.validate(x).ok
    assert x.images["image_id"].tolist() == ["core_A1.tif", "core_B2.tif"]
    assert x.images["pixel_size"].tolist() == [0.5, 0.25]
    assert x.cells["image_id"].tolist() == ["core_A1.tif"] * 3 + ["core_B2.tif"] * 2
    assert x.cells["sample_id"].tolist() == x.cells["image_id"].tolist()
    assert x.cells["classification"].tolist()[1] == "Tumor, PD-L1+"  # quoted field with a comma
    assert x.feature_ids == ["cell:area", "nucleus:area", "nucleus:DAPI:mean", "nucleus:CD3:mean",
                             "cytoplasm:CD3:mean", "cell:CD3:mean", "cell:PD-L1:mean"]
    assert dictionary_row(x, "cell:area")["source_name"] == "Cell: Area \u03bcm^2"
    assert np.isnan(column(x, "cytoplasm:CD3:mean")[2])  # Infinity became NA
    assert x.provenance["counts"]["nonfinite_converted"] == 1
    assert x.channels["image_id"].tolist() == ["core_A1.tif"] * 3 + ["core_B2.tif"] * 3
    assert x.channels["channel_index"].tolist() == [1, 2, 3, 1, 2, 3]
    assert x.provenance["parameters"]["delimiter"] == "comma"


def test_image_id_and_sample_id_arguments():
    x = cs.read_qupath(DATA / "v04_cell_detection.tsv", pixel_size=0.5, image_id="slide1", sample_id="patient7")
    assert x.images["image_id"].tolist() == ["slide1"]
    assert x.images["source_image"].tolist() == ["slide_01.ome.tif"]
    assert set(x.cells["sample_id"]) == {"patient7"}
    with pytest.raises(InputError, match="2 images"):
        cs.read_qupath(DATA / "v06_compartment_first.csv", pixel_size=0.5, image_id="one")


# -- micro signs and marker names --------------------------------------------------------------------
def test_mis_decoded_micro_sign_and_marker_with_colon():
    x = cs.read_qupath(DATA / "micro_variants.tsv", pixel_size=0.25)
    assert cs.validate(x).ok
    assert x.cells["x"].tolist() == [10.5, 30.0]
    assert x.feature_ids == ["cell:area", "nucleus:length", "cell:max_diameter", "nucleus:CD8_ clone C8/144B:mean",
                             "nucleus:DAPI:mean"]
    assert dictionary_row(x, "cell:area")["source_name"] == "Cell: Area \u00c2\u00b5m^2"
    assert dictionary_row(x, "nucleus:length")["unit"] == "um"
    row = dictionary_row(x, "nucleus:CD8_ clone C8/144B:mean")
    assert row["marker"] == "CD8_ clone C8/144B" and row["marker_source"] == "CD8: clone C8/144B"
    assert x.channels["channel_name"].tolist() == ["CD8: clone C8/144B", "DAPI"]


@pytest.mark.parametrize("micro", ["\u00b5", "\u03bc", "u", "\u00c2\u00b5"])
def test_every_micro_sign_variant_reads_the_same(tmp_path, micro):
    text = (f"Image\tObject ID\tCentroid X {micro}m\tCentroid Y {micro}m\tCell: Area {micro}m^2\t"
            f"Nucleus: Max diameter {micro}m\tCell: CD3: Mean\n"
            "a.tif\tid1\t12.5\t8.25\t101.5\t9.75\t40.5\n")
    path = tmp_path / "cells.tsv"
    path.write_text(text, encoding="utf-8")
    x = cs.read_qupath(path, pixel_size=0.5)
    assert x.feature_ids == ["cell:area", "nucleus:max_diameter", "cell:CD3:mean"]
    assert x.dictionary["unit"].tolist() == ["um2", "um", "a.u."]
    assert x.dictionary["source_name"].tolist()[0] == f"Cell: Area {micro}m^2"
    assert x.cells["x"].tolist() == [12.5] and x.cells["area"].tolist() == [101.5]


def test_marker_map_renames_and_records_source():
    x = cs.read_qupath(DATA / "v04_cell_detection.tsv", pixel_size=0.5, marker_map={"CD3": "CD3e"})
    assert "cell:CD3e:mean" in x.feature_ids and "cell:CD3:mean" not in x.feature_ids
    assert dictionary_row(x, "cell:CD3e:mean")["marker_source"] == "CD3"
    assert x.channels[["channel_name", "marker"]].values.tolist() == [["DAPI", "DAPI"], ["CD3", "CD3e"]]
    assert x.provenance["parameters"]["marker_map"] == {"CD3": "CD3e"}
    with pytest.raises(InputError, match="both be called"):
        cs.read_qupath(DATA / "v04_cell_detection.tsv", pixel_size=0.5, marker_map={"CD3": "DAPI"})
    with pytest.raises(InputError, match="contain no ':'"):
        cs.read_qupath(DATA / "v04_cell_detection.tsv", pixel_size=0.5, marker_map={"CD3": "CD3:e"})


# -- pixel centroids -------------------------------------------------------------------------------
def test_pixel_centroids_need_and_use_the_pixel_size():
    with pytest.raises(InputError,
                       match=r"line 1, column .Centroid X px.: the file has pixel centroids and no pixel size; pass"):
        cs.read_qupath(DATA / "pixels_only.tsv")
    x = cs.read_qupath(DATA / "pixels_only.tsv", pixel_size=0.5)
    assert cs.validate(x).ok
    # QuPath pixel coordinates start at the image corner: x = x_px * pixel_size, no half-pixel shift
    assert x.cells["x"].tolist() == [50.25, 75.0, 6.125, 20.0, 30.375]
    assert x.cells["y"].tolist() == [100.125, 105.375, 4.0, 8.25, 15.125]
    assert x.cells["x_px"].tolist() == [100.5, 150.0, 12.25, 40.0, 60.75]
    # no Object ID column: ids are row numbers within each image
    assert x.cells["cell_id"].tolist() == ["1", "2", "1", "2", "3"]
    assert x.provenance["parameters"]["cell_id_source"] == "row number within image"
    assert x.dictionary["unit"].tolist()[:2] == ["px2", "px2"]
    assert column(x, "cell:area").tolist()[:3] == [400.0, 380.5, 420.0]  # raw pixel areas
    assert x.cells["area"].tolist()[:3] == [100.0, 95.125, 105.0]  # um2 for cells.area only
    assert np.isnan(x.cells["area"].iloc[3])
    assert x.provenance["counts"]["na_converted"] == 2


BOTH = ("Image\tObject ID\tCentroid X µm\tCentroid Y µm\tCentroid X px\tCentroid Y px\tCell: DAPI mean\n"
        "a.tif\tid1\t5.25\t10.5\t10.5\t21\t100\n"
        "a.tif\tid2\t{x2}\t30\t60.5\t60\t120\n")


def test_micrometre_and_pixel_centroids_derive_and_check_the_pixel_size(tmp_path):
    path = tmp_path / "both.tsv"
    path.write_text(BOTH.format(x2="30.25"), encoding="utf-8")
    x = cs.read_qupath(path)
    assert x.images["pixel_size"].iloc[0] == pytest.approx(0.5, rel=1e-12)
    assert x.provenance["parameters"]["pixel_size_source"] == "derived from micrometre and pixel centroids"
    assert x.cells["x_px"].tolist() == [10.5, 60.5]
    path.write_text(BOTH.format(x2="31"), encoding="utf-8")  # 60.5 px * 0.5 = 30.25, not 31
    with pytest.raises(InputError, match=r"line 3, column 'Centroid X µm': 31.0 disagrees with column 'Centroid X px'"):
        cs.read_qupath(path, pixel_size=0.5)


# -- bad input -------------------------------------------------------------------------------------
def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


HEAD = "Image\tObject ID\tCentroid X µm\tCentroid Y µm\tCell: CD3 mean\n"


@pytest.mark.parametrize("name, text, pattern", [
    ("empty.tsv", "", r"empty.tsv: line 1: the file is empty"),
    ("header.tsv", HEAD, r"header.tsv: line 2: .*no data rows"),
    ("bad.tsv", HEAD + "a\t1\t1\t1\t5\na\t2\t1\t1\tabc\n",
     r"bad.tsv: line 3, column 'Cell: CD3 mean': cannot parse 'abc'"),
    ("dup.tsv", HEAD + "a\tX\t1\t1\t5\na\tY\t2\t1\t5\na\tX\t3\t1\t5\n", r"dup.tsv: lines 2 and 4, column 'Object ID'"),
    ("short.tsv", HEAD + "a\t1\t1\t1\t5\na\t2\t1\t1\n", r"short.tsv: line 3: expected 5 tab-separated fields"),
    ("commas.tsv", HEAD.replace("\t", ",") + "a,1,1,1,5\n", r"commas.tsv: line 1: .*comma.*wrong separator"),
    ("nan_x.tsv", HEAD + "a\t1\t1\t1\t5\na\t2\tNaN\t1\t5\n", r"nan_x.tsv: line 3, column 'Centroid X µm'"),
    ("no_id.tsv", HEAD + "a\t\t1\t1\t5\n", r"no_id.tsv: line 2, column 'Object ID': missing identifier"),
])
def test_bad_files_name_file_line_and_column(tmp_path, name, text, pattern):
    path = write(tmp_path, name, text)
    with pytest.raises(InputError, match=pattern):
        cs.read_qupath(path, pixel_size=0.5)


def test_a_file_of_another_tool_lists_the_missing_columns():
    with pytest.raises(CellspecError) as err:
        cs.read_qupath(DATA_ROOT / "mcmicro" / "exemplar-001--unmicst_cell.csv", pixel_size=1)
    message = str(err.value)
    # the file is another tool's: the refusal names that tool and its reader instead of QuPath's missing columns
    assert "looks like an MCMICRO mcquant table" in message and "use read_mcmicro" in message


def test_a_table_of_no_known_tool_lists_the_missing_columns(tmp_path):
    path = write(tmp_path, "other.tsv", "Sample\tValue\nA\t1\n")
    with pytest.raises(CellspecError) as err:
        cs.read_qupath(path, pixel_size=1)
    message = str(err.value)
    assert "not a QuPath table" in message
    assert "'Centroid X µm' or 'Centroid X px'" in message and "'Image'" in message


def test_duplicate_ids_in_different_images_are_fine(tmp_path):
    path = write(tmp_path, "two.tsv", HEAD + "a\tX\t1\t1\t5\nb\tX\t2\t1\t6\n")
    x = cs.read_qupath(path, pixel_size=0.5)
    assert x.cells["cell_id"].tolist() == ["X", "X"]
    assert x.images["image_id"].tolist() == ["a", "b"]


def test_line_numbers_count_skipped_rows(tmp_path):
    head = "Image\tObject ID\tObject type\tCentroid X µm\tCentroid Y µm\tCell: CD3 mean\n"
    body = ("a\tA1\tAnnotation\t1\t1\t\n"
            "a\tX\tCell\t1\t1\t5\n"
            "a\tT1\tTile\t1\t1\t\n"
            "a\tX\tCell\t2\t1\t6\n")
    path = write(tmp_path, "skipped.tsv", head + body)
    with pytest.raises(InputError, match=r"skipped.tsv: lines 3 and 5, column 'Object ID'"):
        cs.read_qupath(path, pixel_size=0.5)


def test_pixel_size_that_cannot_be_derived_is_asked_for(tmp_path):
    path = write(tmp_path, "zero.tsv", BOTH.format(x2="30.25").replace("\t10.5\t21\t", "\t0\t0\t")
                 .replace("\t60.5\t60\t", "\t0\t0\t"))
    with pytest.raises(InputError, match="cannot derive the pixel size of image 'a.tif'"):
        cs.read_qupath(path)


def test_matrix_grows_when_the_first_megabyte_has_long_rows(tmp_path):
    """The matrix is sized from the mean line length of the first 256 kB; short rows after them make it grow."""
    import pandas as pd

    header = ["Image", "Object ID", "Object type", "Name", "Centroid X µm", "Centroid Y µm", "Cell: Area µm^2",
              "Nucleus: CD3: Mean"]
    lines = ["\t".join(header)]
    long_rows, short_rows = 300, 40_000  # 300 rows of ~4 kB fill the first 256 kB (and more), then rows of ~30 bytes
    for i in range(long_rows + short_rows):
        name = "x" * 4000 if i < long_rows else ""
        cd3 = "NaN" if i % 997 == 0 else ("Infinity" if i % 991 == 0 else f"{i % 50}.5")
        lines.append("\t".join(["s.tif", f"c{i}", "Cell", name, f"{i % 100}.25", "3", f"{1 + i % 7}", cd3]))
    path = tmp_path / "long_then_short.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    x = cs.read_qupath(path, pixel_size=0.5)
    frame = pd.read_csv(path, sep="\t", keep_default_na=False, na_values=["", "NaN"])
    assert x.n_cells == long_rows + short_rows
    assert x.cells["cell_id"].tolist() == frame["Object ID"].tolist()
    assert column(x, "cell:area").tolist() == frame["Cell: Area µm^2"].astype(float).tolist()
    expected_cd3 = frame["Nucleus: CD3: Mean"].astype(float).replace([np.inf], np.nan).to_numpy()
    np.testing.assert_array_equal(column(x, "nucleus:CD3:mean"), expected_cd3)
    n_nan = sum(1 for i in range(long_rows + short_rows) if i % 997 == 0)
    n_inf = sum(1 for i in range(long_rows + short_rows) if i % 997 != 0 and i % 991 == 0)
    assert x.provenance["counts"]["na_converted"] == n_nan
    assert x.provenance["counts"]["nonfinite_converted"] == n_inf
    assert x.measurements.flags.c_contiguous
