"""CellProfiler ExportToSpreadsheet folders as CellProfiler writes them: values compared with pandas' parse of the
same files, the layout rules (per-image table joined for image ids, touching neighbours as adjacency, other
neighbours left out with a warning, the object's compartment, a choice of object tables) and a round trip of
generated tables."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cellspec_sc as cs
from cellspec_sc.readers import ReaderWarning
from exports import measured_values, number_text
from tool_layouts import write_cellprofiler


def test_an_object_table_matches_pandas_and_images_come_from_the_image_table(tmp_path):
    folder = write_cellprofiler(tmp_path)
    cells_csv, image_csv = pd.read_csv(folder / "MyExpt_Cells.csv"), pd.read_csv(folder / "MyExpt_Image.csv")
    x = cs.read_cellprofiler(folder, pixel_size=0.5)
    names = dict(zip(image_csv["ImageNumber"], image_csv["FileName_DNA"], strict=True))
    assert x.cells["image_id"].tolist() == [names[n] for n in cells_csv["ImageNumber"]]
    assert x.cells["cell_id"].tolist() == cells_csv["ObjectNumber"].astype(str).tolist()
    assert np.array_equal(x.cells["x_px"], cells_csv["Location_Center_X"].to_numpy() + 0.5)
    assert np.array_equal(x.cells["y"], (cells_csv["Location_Center_Y"].to_numpy() + 0.5) * 0.5)
    assert np.array_equal(x.cells["area"], cells_csv["AreaShape_Area"].to_numpy() * 0.25)
    assert x.cells["metadata_well"].tolist() == cells_csv["Metadata_Well"].tolist()
    measured = [c for c in cells_csv.columns if c not in
                ("ImageNumber", "ObjectNumber", "Metadata_Well", "Location_Center_X", "Location_Center_Y")]
    assert x.dictionary["source_name"].tolist() == measured
    assert x.feature_ids == ["cell:area", "cell:perimeter", "cell:circularity", "other:areashape_orientation",
                             "cell:DNA:mean", "cell:DNA:sum", "cell:CD3:median",
                             "other:neighbors_numberofneighbors_adjacent", "other:neighbors_percenttouching_adjacent"]
    assert np.array_equal(x.measurements, cells_csv[measured].to_numpy(dtype=np.float64), equal_nan=True)
    assert x.adjacency[["image_id", "cell_id_a", "cell_id_b", "method"]].values.tolist() == \
        [["A01_s1.tiff", "1", "2", "mask_touching"]]
    assert [i["path_basename"] for i in x.provenance["inputs"]] == \
        ["MyExpt_Cells.csv", "MyExpt_Image.csv", "MyExpt_Object_relationships.csv"]
    assert x.provenance["parameters"]["neighbors"]["method_source"] == "Neighbors_*_Adjacent columns"


def test_the_object_table_alone_names_images_by_number(tmp_path):
    folder = write_cellprofiler(tmp_path)
    (folder / "MyExpt_Image.csv").unlink()
    x = cs.read_cellprofiler(folder / "MyExpt_Cells.csv", pixel_size=0.5)
    assert x.cells["image_id"].tolist() == ["1", "1", "2"]
    assert x.provenance["parameters"]["image_id_source"] == "ImageNumber"


def test_an_image_table_of_two_rows_for_one_image_names_images_by_number_aloud(tmp_path):
    folder = write_cellprofiler(tmp_path)
    with open(folder / "MyExpt_Image.csv", "a") as table:  # a second batch's row for image 2, joined after the first
        table.write("2,B07_s1.tiff,/data,B07_s1_cd3.tiff,4,B07\n")
    with pytest.warns(ReaderWarning, match=r"MyExpt_Image.csv: ImageNumber '2' has 2 rows \(lines 3, 4\); images "
                                           "are named by ImageNumber"):
        x = cs.read_cellprofiler(folder, pixel_size=0.5)
    assert x.cells["image_id"].tolist() == ["1", "1", "2"]  # not the last row's file name, picked silently
    assert x.provenance["parameters"]["image_id_source"] == "ImageNumber"


@pytest.mark.parametrize("method", ["Expanded", "15"])
def test_expanded_or_distance_limited_neighbours_are_left_out_with_a_warning(tmp_path, method):
    folder = write_cellprofiler(tmp_path)
    table = folder / "MyExpt_Cells.csv"
    table.write_text(table.read_text().replace("_Adjacent", f"_{method}"))
    with pytest.warns(ReaderWarning, match="no adjacency method of the spec"):
        x = cs.read_cellprofiler(folder, pixel_size=0.5)
    assert x.adjacency is None
    assert x.provenance["parameters"]["neighbors"] == {"left_out": [method]}


def test_neighbours_without_a_method_column_need_the_argument(tmp_path):
    folder = write_cellprofiler(tmp_path)
    table = folder / "MyExpt_Cells.csv"
    frame = pd.read_csv(table)
    frame.drop(columns=[c for c in frame.columns if c.startswith("Neighbors_")]).to_csv(table, index=False)
    with pytest.warns(ReaderWarning, match="pass neighbors_method="):
        assert cs.read_cellprofiler(folder, pixel_size=0.5).adjacency is None
    x = cs.read_cellprofiler(folder, pixel_size=0.5, neighbors_method="mask_touching")
    assert len(x.adjacency) == 1 and x.provenance["parameters"]["neighbors"]["method_source"] == "argument"


def test_a_folder_of_several_object_tables_is_refused_naming_them_and_objects_chooses(tmp_path):
    folder = write_cellprofiler(tmp_path)
    (folder / "MyExpt_Nuclei.csv").write_text((folder / "MyExpt_Cells.csv").read_text())
    with pytest.raises(cs.InputError, match=r"MyExpt_Cells.csv, MyExpt_Nuclei.csv\); choose one with objects="):
        cs.read_cellprofiler(folder, pixel_size=0.5)
    x = cs.read_cellprofiler(folder, pixel_size=0.5, objects="Nuclei")
    assert x.feature_ids[:2] == ["nucleus:area", "nucleus:perimeter"] and "area" not in x.cells
    assert x.adjacency is None  # the relationships are between Cells, not Nuclei


def test_an_object_set_of_another_name_is_read_as_cells_with_a_warning(tmp_path):
    folder = write_cellprofiler(tmp_path)
    (folder / "MyExpt_Cells.csv").rename(folder / "MyExpt_Tcells.csv")
    with pytest.warns(ReaderWarning, match="read as compartment 'cell'; pass compartment="):
        x = cs.read_cellprofiler(folder, pixel_size=0.5, neighbors=False)
    assert x.provenance["parameters"]["compartment_source"] == "assumed"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReaderWarning)
        y = cs.read_cellprofiler(folder, pixel_size=0.5, neighbors=False, compartment="membrane")
    assert y.feature_ids[0] == "membrane:area"


def test_without_a_pixel_size_the_reader_stops(tmp_path):
    with pytest.raises(cs.InputError, match="carry no pixel size"):
        cs.read_cellprofiler(write_cellprofiler(tmp_path))


STATS = {"MeanIntensity": "mean", "MedianIntensity": "median", "StdIntensity": "sd", "IntegratedIntensity": "sum"}
channel = st.text(alphabet="ABCDEFGHKLMPQRSTXYZabcdefgk0123456789", min_size=1, max_size=6)


@st.composite
def cellprofiler_tables(draw):
    names = draw(st.lists(channel, min_size=1, max_size=3, unique=True))
    combos = draw(st.lists(st.tuples(st.sampled_from(sorted(STATS)), st.sampled_from(names)), min_size=1, max_size=5,
                           unique=True))
    counts = draw(st.lists(st.integers(1, 6), min_size=1, max_size=3))
    centres = [(draw(st.floats(0, 2000, allow_nan=False)), draw(st.floats(0, 2000, allow_nan=False)))
               for _ in range(sum(counts))]
    values = [[draw(measured_values(infinities=True)) for _ in combos] for _ in range(sum(counts))]
    return combos, counts, centres, values


@settings(max_examples=20, deadline=None)
@given(cellprofiler_tables())
def test_generated_object_tables_read_back_exactly(table):
    combos, counts, centres, values = table
    heads = ["ImageNumber", "ObjectNumber", "Location_Center_X", "Location_Center_Y",
             *(f"Intensity_{s}_{c}" for s, c in combos)]
    numbers = [(image + 1, obj + 1) for image, n in enumerate(counts) for obj in range(n)]
    lines = [",".join(heads)] + [",".join([str(i), str(o), repr(cx), repr(cy), *(number_text(v, nan="nan", inf="inf")
                                                                               for v in row)])
                                 for (i, o), (cx, cy), row in zip(numbers, centres, values, strict=True)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "Cells.csv"
        path.write_text("\n".join(lines) + "\n")
        x = cs.read_cellprofiler(path, pixel_size=0.65)
        assert x.feature_ids == [f"cell:{c}:{STATS[s]}" for s, c in combos]
        assert x.cells["cell_id"].tolist() == [str(o) for _, o in numbers]
        assert x.cells["x"].tolist() == [(cx + 0.5) * 0.65 for cx, _ in centres]
        raw = np.array(values, dtype=np.float64).reshape(len(numbers), len(combos))
        ok = np.isfinite(raw)
        assert np.array_equal(np.isnan(x.measurements), ~ok)
        assert np.array_equal(x.measurements.view(np.int64)[ok], raw.view(np.int64)[ok])
        assert x.provenance["counts"]["nonfinite_converted"] == int(np.isinf(raw).sum())
        back = cs.read(cs.write(x, Path(tmp) / "out"))
        assert back.equals(x), back.differences(x)


def test_a_neighbour_that_is_not_among_the_cells_is_refused_naming_the_line(tmp_path):
    folder = write_cellprofiler(tmp_path)
    relationships = folder / "MyExpt_Object_relationships.csv"
    relationships.write_text(relationships.read_text() + "MeasureObjectNeighbors,7,Neighbors,Cells,2,1,Cells,2,9\n")
    with pytest.raises(cs.InputError, match=r"MyExpt_Object_relationships.csv: line 5, column 'Second Object Number': "
                                            r"object '9' of image 'A02_s1.tiff' is not in the Cells table"):
        cs.read_cellprofiler(folder, pixel_size=0.5)
