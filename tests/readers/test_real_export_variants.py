"""Variants met in real public exports (thirteenth session's trial; the files the tests write are minimal
versions of what those exports held): steinbock's images.csv with text columns of its own, MCMICRO's
markers.csv with quoted names or extra channels, QuPath's derived measurements and exports without
centroids, and how the CLI shows a reader's warnings."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import cellspec_sc as cs
from cellspec_sc.cli.main import main
from cellspec_sc.errors import InputError
from cellspec_sc.readers import ReaderWarning


def column(x, source_name: str):
    """The measured values of the feature read from ``source_name``."""
    feature_id = x.dictionary.set_index("source_name").at[source_name, "feature_id"]
    return x.measurements[:, x.feature_ids.index(feature_id)].tolist()


def steinbock_folder(root: Path, images_csv: str | None) -> Path:
    folder = root / "steinbock"
    for sub in ("intensities", "regionprops"):
        (folder / sub).mkdir(parents=True)
    (folder / "intensities" / "img_1.csv").write_text("Object,CD3\n1,0.5\n2,0.25\n")
    (folder / "regionprops" / "img_1.csv").write_text("Object,area,centroid-0,centroid-1\n1,4,2.0,3.0\n2,6,7.0,1.0\n")
    if images_csv is not None:
        (folder / "images.csv").write_text(images_csv)
    return folder


def test_steinbock_images_csv_with_text_columns_of_its_own(tmp_path):
    # older steinbock wrote a `source` column; labs add their own (patient, condition)
    folder = steinbock_folder(tmp_path, "image,width_px,height_px,source,acquisition_width_um,acquisition_height_um,"
                                        "patient\nimg_1.tiff,10,10,run1.mcd,5.0,5.0,P 7\n")
    x = cs.read_steinbock(folder, neighbors=False)
    assert x.images["pixel_size"].tolist() == [0.5]
    assert x.images["width_px"].tolist() == [10]
    assert x.cells["x"].tolist() == [(3.0 + 0.5) * 0.5, (1.0 + 0.5) * 0.5]  # centroid-1 is x, pixel centres at i + 0.5
    assert x.cells["y"].tolist() == [(2.0 + 0.5) * 0.5, (7.0 + 0.5) * 0.5]
    assert cs.validate(x).ok


def test_steinbock_images_csv_number_that_is_not_one_is_named_by_line_and_column(tmp_path):
    folder = steinbock_folder(tmp_path, "image,width_px,height_px,acquisition_width_um,acquisition_height_um\n"
                                        "img_0.tiff,10,10,5,5\nimg_1.tiff,ten,10,5,5\n")
    with pytest.raises(InputError, match=r"images.csv: line 3, column 'width_px': cannot parse 'ten' as a number"):
        cs.read_steinbock(folder)


def test_steinbock_without_images_csv_says_so_plainly(tmp_path):
    folder = steinbock_folder(tmp_path, None)
    with pytest.raises(InputError,
                       match=r"^steinbock: no images.csv: no pixel size for image 'img_1' .*pixel_size=1.0"):
        cs.read_steinbock(folder)


MCQUANT = "CellID,DNA 1,CD3,X_centroid,Y_centroid,Area\n1,100.0,5.0,10.0,4.0,30\n"


def mcquant_with_markers(folder: Path, *names: str) -> tuple[Path, Path]:
    """An mcquant table with the markers DNA 1 and CD3, and a markers.csv naming ``names``."""
    table = folder / "img_cell.csv"
    table.write_text(MCQUANT)
    markers = folder / "markers.csv"
    markers.write_text("channel_number,cycle_number,marker_name\n" + "".join(
        f"{i + 1},1,{name}\n" for i, name in enumerate(names)))
    return table, markers


def test_markers_csv_names_in_quotes_match_the_unquoted_columns(tmp_path):
    table, markers = mcquant_with_markers(tmp_path, "'DNA 1'", "'CD3'")
    with pytest.warns(ReaderWarning, match=r"markers.csv: marker name\(s\) 'DNA 1', 'CD3' are in quotes"):
        x = cs.read_mcmicro(table, pixel_size=0.5, markers_csv=markers)
    kinds = x.dictionary.set_index("source_name")["kind"]
    assert kinds["DNA 1"] == "intensity" and kinds["CD3"] == "intensity"
    assert x.channels["channel_name"].tolist() == ["DNA 1", "CD3"]
    assert column(x, "CD3") == [5.0] and column(x, "DNA 1") == [100.0]
    with pytest.raises(InputError, match="are in quotes"):
        cs.read_mcmicro(table, pixel_size=0.5, markers_csv=markers, strict=True)


def test_markers_csv_with_channels_the_table_lacks_warns_and_keeps_them(tmp_path):
    table, markers = mcquant_with_markers(tmp_path, "DNA 1", "CD3", "CD20", "PD1")
    with pytest.warns(ReaderWarning, match=r"names 2 channel\(s\) with no column in the table \('CD20', 'PD1'\)"):
        x = cs.read_mcmicro(table, pixel_size=0.5, markers_csv=markers)
    assert x.channels["channel_name"].tolist() == ["DNA 1", "CD3", "CD20", "PD1"]
    assert (x.dictionary["kind"] == "intensity").sum() == 2
    with pytest.raises(InputError, match=r"names 2 channel\(s\) with no column"):
        cs.read_mcmicro(table, pixel_size=0.5, markers_csv=markers, strict=True)


QUPATH_DERIVED = ["Image", "Object ID", "Centroid X µm", "Centroid Y µm", "Cell: DAPI mean",
                  "Smoothed: 50 µm: Hematoxylin: Mean", "ROI: 2.00 µm per pixel: DAPI: Mean",
                  "Nuclei Area µm^2: Mean", "Diameter Ratio %: Min", "CD3: Mean"]


def test_qupath_derived_measurements_are_not_markers(tmp_path):
    path = tmp_path / "derived.tsv"
    path.write_text("\t".join(QUPATH_DERIVED) + "\n" + "\t".join(["a.tif", "c1", "10.5", "20.5", "5", "6", "7", "8",
                                                                  "9", "10"]) + "\n", encoding="utf-8")
    x = cs.read_qupath(path, pixel_size=0.5)
    d = x.dictionary.set_index("source_name")
    assert d.loc["Cell: DAPI mean", ["kind", "marker", "compartment", "statistic"]].tolist() == \
        ["intensity", "DAPI", "cell", "mean"]
    assert d.loc["CD3: Mean", ["kind", "marker"]].tolist() == ["intensity", "CD3"]
    for derived in QUPATH_DERIVED[5:9]:
        assert d.at[derived, "kind"] == "other", derived
    assert d.at["Nuclei Area µm^2: Mean", "unit"] == "um2"
    assert sorted(x.channels["channel_name"]) == ["CD3", "DAPI"]  # no channel named after a derived header
    assert column(x, "ROI: 2.00 µm per pixel: DAPI: Mean") == [7.0] and column(x, "Cell: DAPI mean") == [5.0]
    assert cs.validate(x).ok


def test_qupath_export_without_centroids_says_what_to_export_and_lists_whole_names(tmp_path):
    names = ["Image", "Object ID", "Class", "Nucleus: Hematoxylin OD mean", "Nucleus: DAB OD mean",
             "Cytoplasm: DAB OD mean", "Cell: DAB OD mean", "Nucleus: Area µm^2", "Cell: Area µm^2",
             "Hematoxylin: Mean", "Area ratio %: Max"]
    path = tmp_path / "nocentroids.tsv"
    path.write_text("\t".join(names) + "\n" + "\t".join(["a.tif", "c1", "T"] + ["1"] * 8) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        cs.read_qupath(path, pixel_size=0.5)
    message = str(err.value)
    assert message.startswith("nocentroids.tsv: a QuPath export without centroid columns")
    assert "'Centroid X µm'" in message and "found 11 column(s)" in message
    listing = message.split("column(s):\n", 1)[1].splitlines()
    assert all(len(line) <= 100 for line in listing)
    shown = [n.strip().strip("'") for line in listing for n in line.strip().rstrip(",").split("', '")]
    assert shown == names  # every name whole, on one line, in the file's order


def test_cli_prints_reader_warnings_as_one_line_each(tmp_path, capsys):
    table, markers = mcquant_with_markers(tmp_path, "'DNA 1'", "CD3")
    code = main(["import", "mcmicro", str(table), str(tmp_path / "out"), "--pixel-size", "0.5", "--markers",
                 str(markers)])
    err = capsys.readouterr().err
    assert code == 0
    assert err.splitlines()[0] == ("cellspec: warning: markers.csv: marker name(s) 'DNA 1' are in quotes that the "
                                   "table's columns do not have; matched without the quotes")
    assert ".py:" not in err and "ReaderWarning" not in err
    code = main(["import", "mcmicro", str(table), str(tmp_path / "out2"), "--pixel-size", "0.5", "--markers",
                 str(markers), "-q"])
    assert code == 0 and "warning" not in capsys.readouterr().err


def test_steinbock_images_without_neighbour_files_are_named(tmp_path):
    folder = steinbock_folder(tmp_path, "image,width_px,height_px,acquisition_width_um,acquisition_height_um\n"
                                        "img_1.tiff,10,10,5,5\nimg_2.tiff,10,10,5,5\n")
    (folder / "intensities" / "img_2.csv").write_text("Object,CD3\n1,0.75\n2,1.0\n")
    (folder / "regionprops" / "img_2.csv").write_text("Object,area,centroid-0,centroid-1\n1,4,2.0,3.0\n2,6,4.0,4.0\n")
    (folder / "neighbors").mkdir()
    (folder / "neighbors" / "img_2.csv").write_text("Object,Neighbor,Distance\n1,2,1.0\n2,1,1.0\n")
    with pytest.warns(ReaderWarning, match=r"steinbock/neighbors: no <image>.csv for 1 of 2 image\(s\) \(img_1\)"):
        x = cs.read_steinbock(folder)
    assert x.adjacency[["image_id", "cell_id_a", "cell_id_b"]].values.tolist() == [["img_2", "1", "2"]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cs.read_steinbock(folder, neighbors=False, aggregation="mean").adjacency is None


QUPATH01 = ["Image", "Name", "Class", "Parent", "ROI", "Centroid X µm", "Centroid Y µm", "Area µm^2"]


def write_qupath01(tmp_path: Path, rows: list[list[str]]) -> Path:
    path = tmp_path / "qupath01.txt"
    path.write_text("\n".join("\t".join(r) for r in [QUPATH01, *rows]) + "\n", encoding="utf-8")
    return path


def test_qupath01_annotation_rows_are_not_cells(tmp_path):
    # QuPath 0.1 has no Object type column; an object without a name shows its class name in Name
    path = write_qupath01(tmp_path, [["a.svs", "PathCellObject", "Tumor", "PathAnnotationObject", "Polygon", "10", "10",
                                      "50"],
                                     ["a.svs", "PathAnnotationObject", "", "Image", "Polygon", "100", "100", "500000"]])
    with pytest.raises(InputError, match=r"qupath01.txt: line 3, column 'Name': 'PathAnnotationObject' marks a QuPath "
                                         r"0.1 object that is not a cell .*1 'Annotation' row.*object_types=None"):
        cs.read_qupath(path, pixel_size=0.5)
    with pytest.warns(ReaderWarning, match=r"1 'Annotation' row\(s\) of a QuPath 0.1 export kept as cells"):
        x = cs.read_qupath(path, pixel_size=0.5, object_types=None)
    assert x.cells["area"].tolist() == [50.0, 500000.0]
    only_cells = write_qupath01(tmp_path, [["a.svs", "PathCellObject", "Tumor", "Image", "Polygon", "10", "10", "50"]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cs.read_qupath(only_cells, pixel_size=0.5).cells["x"].tolist() == [10.0]


def test_qupath_tma_core_table_is_refused_as_such(tmp_path):
    path = tmp_path / "TMA.txt"
    path.write_text("Image\tName\tMissing\tCentroid X µm\tCentroid Y µm\tNum Detections\n"
                    "s.svs\tB-1\tFalse\t8742.9\t7615.6\t662\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"TMA.txt: line 1, column 'Missing': a QuPath TMA core table"):
        cs.read_qupath(path, pixel_size=0.5)


def test_steinbock_panel_names_with_spaces_match_their_columns(tmp_path):
    folder = steinbock_folder(tmp_path, None)
    (folder / "panel.csv").write_text("channel,name,keep\nXe131, 3,1\nPr141,CD3,1\n")
    (folder / "intensities" / "img_1.csv").write_text("Object, 3,CD3\n1,1.0,2.0\n2,3.0,4.0\n")
    x = cs.read_steinbock(folder, pixel_size=1.0, neighbors=False)
    d = x.dictionary.set_index("source_name")
    assert d.loc[" 3", ["kind", "marker"]].tolist() == ["intensity", "3"]
    assert x.channels["marker"].tolist() == ["3", "CD3"]
    assert column(x, " 3") == [1.0, 3.0]
    assert cs.validate(x).ok


def test_steinbock_uneven_pixels_are_warned_about(tmp_path):
    # an acquisition stopped early: 31 rows of a planned 100 um
    folder = steinbock_folder(tmp_path, "image,width_px,height_px,acquisition_width_um,acquisition_height_um\n"
                                        "img_1.tiff,100,31,100,100\n")
    with pytest.warns(ReaderWarning, match=r"images.csv: line 2: image 'img_1' has pixels of 1 um in x .* 3.22581 um "
                                           r"in y"):
        x = cs.read_steinbock(folder, neighbors=False)
    assert x.images["pixel_size_y"].tolist() == [100 / 31]  # what the file says, kept as it says it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cs.read_steinbock(folder, pixel_size=1.0, neighbors=False, aggregation="mean"
                                 ).images["pixel_size"].tolist() == [1.0]


def test_a_folder_without_tables_names_both_steinbock_layouts_in_the_refusal(tmp_path):
    folder = tmp_path / "old"
    for sub in ("cell_intensities", "cell_regionprops"):
        (folder / sub).mkdir(parents=True)
    with pytest.raises(InputError, match=r"no intensities/\*.csv; not a steinbock output folder .* or the early "
                                         r"layout's cell_intensities/, cell_regionprops/, cell_graphs/"):
        cs.read_steinbock(folder)


def test_qupath_semicolon_csv_reads_as_its_comma_twin(tmp_path):
    # QuPath's export dialog offers "Semicolon (.csv)"; 40,000 rows make it parse in pieces on both cores
    head = ["Image", "Object ID", "Object type", "Classification", "Centroid X µm", "Centroid Y µm", "Cell: Area µm^2",
            "Nucleus: CD3: Mean"]
    rows = [["core A1.tif", f"c{i}", "Cell", "Tumor" if i % 3 else "", f"{i * 0.25}", f"{i % 997 + 0.5}",
             f"{50 + i % 13}", f"{(i * 7919) % 1000 / 8}"] for i in range(40_000)]
    twins = {}
    for sep, name in ((",", "comma.csv"), (";", "semicolon.csv")):
        path = tmp_path / name
        path.write_text("\n".join(sep.join(r) for r in [head, *rows]) + "\n", encoding="utf-8")
        twins[sep] = cs.read_qupath(path, pixel_size=0.5)
    assert twins[";"].n_cells == 40_000 and twins[";"].cells["x"].iloc[-1] == 39_999 * 0.25
    assert column(twins[";"], "Nucleus: CD3: Mean")[:3] == [0.0, 7919 % 1000 / 8, 15838 % 1000 / 8]
    assert (twins[";"].measurements == twins[","].measurements).all()
    assert twins[";"].cells.equals(twins[","].cells)
    assert twins[";"].provenance["parameters"]["delimiter"] == "semicolon"


def test_qupath_project_metadata_columns_are_kept_as_text(tmp_path):
    path = tmp_path / "meta.tsv"
    path.write_text("Image\tPatient (metadata)\tPatient\tObject ID\tObject type\tCentroid X µm\tCentroid Y µm\t"
                    "Nucleus: CD3: Mean\n"
                    "a.tif\tP01\tP01\t1\tAnnotation\t1\t1\tnot-a-number\n"
                    "a.tif\tP01\tP01\t2\tCell\t10.5\t20.5\t450.25\n"
                    "a.tif\t\t\t3\tCell\t11.5\t21.5\t8.5\n", encoding="utf-8")
    with pytest.warns(ReaderWarning) as notes:
        x = cs.read_qupath(path, pixel_size=0.5)
    # the name says metadata: text from the start; the other is found when its P01 fails the parse
    assert [str(n.message) for n in notes] == [
        "meta.tsv: column(s) 'Patient (metadata)' hold text, not measurements (project metadata?); kept as cells "
        "column(s) patient_metadata",
        "meta.tsv: column(s) 'Patient' hold text, not measurements (project metadata?); kept as cells "
        "column(s) patient"]
    assert x.cells["patient_metadata"].tolist()[0] == "P01" and x.cells["patient"].isna().tolist() == [False, True]
    assert x.feature_ids == ["nucleus:CD3:mean"] and column(x, "Nucleus: CD3: Mean") == [450.25, 8.5]
    assert x.provenance["parameters"]["text_columns"] == {"Patient (metadata)": "patient_metadata",
                                                          "Patient": "patient"}
    assert cs.validate(x).ok


def late_metadata_export(path: Path, n: int, patient_from: int, stain_from: int, cd3=lambda i: f"{i / 4}") -> Path:
    """A two-image QuPath export whose metadata columns are empty until the images that have them (QuPath
    writes a project's metadata only for the images it was set on)."""
    lines = ["Image\tPatient\tObject ID\tObject type\tStain\tCentroid X µm\tCentroid Y µm\tNucleus: CD3: Mean"]
    for i in range(n):
        image = "a.tif" if i < patient_from else "b.tif"
        patient = "P02" if i >= patient_from else ""
        stain = "H&E" if i >= stain_from else ""
        lines.append(f"{image}\t{patient}\t{i}\tCell\t{stain}\t{i * 0.5}\t1.5\t{cd3(i)}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_metadata_empty_until_far_down_the_file_is_kept_as_text(tmp_path):
    # both columns are empty in the whole 64 kB sample; Stain starts holding text after Patient does
    path = late_metadata_export(tmp_path / "late.tsv", 30_000, 20_000, 25_000)
    assert path.read_bytes()[: 1 << 16].count(b"P02") == 0
    with pytest.warns(ReaderWarning) as notes:
        x = cs.read_qupath(path, pixel_size=0.5)
    assert [str(n.message) for n in notes if "hold text" in str(n.message)] == [
        "late.tsv: column(s) 'Patient' hold text, not measurements (project metadata?); kept as cells column(s) "
        "patient",
        "late.tsv: column(s) 'Stain' hold text, not measurements (project metadata?); kept as cells column(s) stain"]
    assert x.feature_ids == ["nucleus:CD3:mean"] and x.n_cells == 30_000
    assert x.cells["patient"].isna().sum() == 20_000 and set(x.cells["patient"].dropna()) == {"P02"}
    assert x.cells["stain"].isna().sum() == 25_000 and x.cells["stain"].iloc[-1] == "H&E"
    assert x.cells["image_id"].iloc[[0, -1]].tolist() == ["a.tif", "b.tif"]
    assert column(x, "Nucleus: CD3: Mean")[-1] == 29_999 / 4
    assert x.provenance["parameters"]["text_columns"] == {"Patient": "patient", "Stain": "stain"}
    assert cs.validate(x).ok


def test_numbers_with_text_far_down_stay_a_refused_measurement(tmp_path):
    # CD3 holds numbers, then text on one row after the sample: not metadata, refused at that line
    path = late_metadata_export(tmp_path / "mixed.tsv", 30_000, 0, 0,
                                cd3=lambda i: "high" if i == 28_000 else f"{i / 4}")
    with pytest.warns(ReaderWarning, match="hold text"), pytest.raises(
            InputError, match=r"mixed.tsv: line 28002, column 'Nucleus: CD3: Mean': cannot parse 'high' as a number"):
        cs.read_qupath(path, pixel_size=0.5)


def test_decimal_commas_are_refused_with_what_to_do(tmp_path):
    path = tmp_path / "comma.tsv"
    path.write_text("Image\tObject ID\tCentroid X µm\tCentroid Y µm\tNucleus: CD3: Mean\n"
                    "a.tif\t1\t10.5\t20.5\t101,25\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"line 2, column 'Nucleus: CD3: Mean': cannot parse '101,25' as a number; a "
                                         r"decimal comma\? .*export again with '\.'"):
        cs.read_qupath(path, pixel_size=0.5)


@pytest.mark.parametrize(("start", "what"), [(b"\x1f\x8b\x08\x00", "gzip-compressed"),
                                             (b"PK\x03\x04", "a ZIP archive, e.g. an Excel workbook"),
                                             (b"\xd0\xcf\x11\xe0\xa1\xb1", "an old Excel workbook")])
def test_compressed_files_and_workbooks_are_named_for_what_they_are(tmp_path, start, what):
    path = tmp_path / "export.tsv"
    path.write_bytes(start + b"\x00\x00\x01binary")
    with pytest.raises(InputError, match=rf"export.tsv: the file is {what}.*, not text"):
        cs.read_qupath(path, pixel_size=0.5)


def test_a_pandas_index_column_is_not_a_marker(tmp_path):
    table = tmp_path / "img--unmicst_cell.csv"
    table.write_text("Unnamed: 0,CellID,Hoechst,X_centroid,Y_centroid,Area\n"
                     "0,1,100.5,10.0,5.0,50\n1,2,200.5,30,15,80\n")
    with pytest.warns(ReaderWarning, match=r"'Unnamed: 0' look like the index pandas writes"):
        x = cs.read_mcmicro(table, pixel_size=0.65)
    assert x.dictionary.set_index("source_name").at["Unnamed: 0", "kind"] == "other"
    assert x.channels["channel_name"].tolist() == ["Hoechst"]


def test_markers_csv_remove_column_drops_channels_the_table_lacks(tmp_path):
    # MCMICRO background subtraction: channels marked remove are gone from the image it writes
    (tmp_path / "markers.csv").write_text("marker_name,background,exposure,remove\nDAPI,,20,\nCy5,,200,TRUE\n"
                                          "TREM,Cy5,200,\nCD68,,200,True\n")
    table = tmp_path / "img--unmicst_cell.csv"
    table.write_text("CellID,DAPI,TREM,CD68,X_centroid,Y_centroid,Area\n1,100.5,20.25,3.5,10.0,5.0,50\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = cs.read_mcmicro(table, pixel_size=0.65, markers_csv=tmp_path / "markers.csv")
    # CD68 is marked remove but the table has its column: it stays a channel
    assert x.channels[["channel_index", "channel_name"]].values.tolist() == [[1, "DAPI"], [2, "TREM"], [3, "CD68"]]
    assert x.provenance["parameters"]["markers_removed"] == ["Cy5"]
    assert column(x, "TREM") == [20.25]


def test_strict_refusals_say_they_are_refusals(tmp_path):
    table, markers = mcquant_with_markers(tmp_path, "DNA 1", "CD3", "CD20")
    with pytest.raises(InputError, match=r"they are kept as channels without measurements \(refused: strict=True\)$"):
        cs.read_mcmicro(table, pixel_size=0.5, markers_csv=markers, strict=True)


def test_mcquant_mask_props_without_markers_csv_are_not_markers(tmp_path):
    # mcquant --mask_props perimeter equivalent_diameter euler_number bbox; a marker may still be named PD-1
    table = tmp_path / "img--unmicst_cell.csv"
    table.write_text("CellID,DNA_1,PD-1,X_centroid,Y_centroid,Area,perimeter,equivalent_diameter,euler_number,bbox-0,"
                     "bbox-3,DNA_1_centroid_weighted-0\n1,100.5,20.25,10.0,5.0,50,25.5,7.9,1,1,14,4.5\n")
    x = cs.read_mcmicro(table, pixel_size=0.65)
    d = x.dictionary.set_index("source_name")
    assert d.at["perimeter", "kind"] == "shape"
    for prop in ("equivalent_diameter", "euler_number", "bbox-0", "bbox-3", "DNA_1_centroid_weighted-0"):
        assert d.at[prop, "kind"] == "other", prop
    assert x.channels["channel_name"].tolist() == ["DNA_1", "PD-1"]
    assert column(x, "bbox-3") == [14.0]


def steinbock_two_images(root: Path, images_csv: str) -> Path:
    folder = steinbock_folder(root, images_csv)
    (folder / "intensities" / "img_2.csv").write_text("Object,CD3\n")  # an empty mask: a header, no objects
    (folder / "regionprops" / "img_2.csv").write_text("Object,area,centroid-0,centroid-1\n")
    return folder


def test_steinbock_image_without_objects_is_left_out_with_a_warning(tmp_path):
    folder = steinbock_two_images(tmp_path, "image,width_px,height_px,acquisition_width_um,acquisition_height_um\n"
                                            "img_1.tiff,10,10,5,5\nimg_2.tiff,10,10,5,5\n")
    with pytest.warns(ReaderWarning, match=r"intensities: img_2.csv hold\(s\) a header but no objects"):
        x = cs.read_steinbock(folder, neighbors=False)
    assert x.images["image_id"].tolist() == ["img_1"] and x.cells["cell_id"].tolist() == ["1", "2"]
    (folder / "intensities" / "img_1.csv").write_text("Object,CD3\n")
    with pytest.raises(InputError, match="every table has a header but no objects"):
        cs.read_steinbock(folder, neighbors=False)


def test_steinbock_image_listed_twice_is_refused_by_line(tmp_path):
    # the same image as .tiff and .ome.tiff, as two steinbock versions name it
    folder = steinbock_folder(tmp_path, "image,width_px,height_px,acquisition_width_um,acquisition_height_um\n"
                                        "img_1.tiff,10,10,5,5\nimg_1.ome.tiff,10,10,5,5\n")
    with pytest.raises(InputError, match=r"images.csv: lines 2 and 3, column 'image': image 'img_1' is listed twice"):
        cs.read_steinbock(folder, neighbors=False)


def test_steinbock_panel_naming_two_kept_channels_alike_is_refused_by_line(tmp_path):
    folder = steinbock_folder(tmp_path, None)
    (folder / "panel.csv").write_text("channel,name,keep\nIr191,DNA,1\nXe131,CD3,0\nIr193,DNA,1\nPr141,CD3,1\n")
    (folder / "intensities" / "img_1.csv").write_text("Object,DNA,DNA.1,CD3\n1,1,2,3\n2,4,5,6\n")
    with pytest.raises(InputError, match=r"panel.csv: lines 2 and 4, column 'name': 'DNA' names two kept channels"):
        cs.read_steinbock(folder, pixel_size=1.0, neighbors=False)


def test_steinbock_empty_images_csv_is_ignored_with_a_warning(tmp_path):
    folder = steinbock_folder(tmp_path, "")  # 0 bytes, as an interrupted run leaves it (steinbock issue 284)
    with pytest.warns(ReaderWarning, match=r"steinbock/images.csv is empty \(0 bytes\): ignored"):
        x = cs.read_steinbock(folder, pixel_size=0.5, neighbors=False)
    assert x.cells["x"].tolist() == [1.75, 0.75]
    with pytest.raises(InputError, match=r"steinbock: no images.csv: no pixel size"), pytest.warns(ReaderWarning):
        cs.read_steinbock(folder, neighbors=False)


def test_steinbock_ome_tiff_image_matches_its_tables_named_as_steinbock_names_them(tmp_path):
    # steinbock replaces only the last suffix: images.csv's P1_001.ome.tiff has intensities/P1_001.ome.csv
    folder = steinbock_folder(tmp_path, "image,width_px,height_px,acquisition_width_um,acquisition_height_um\n"
                                        "P1_002.ome.tiff,20,20,5,5\nP1_001.ome.tiff,10,8,2.5,4\n")
    for sub in ("intensities", "regionprops"):
        (folder / sub / "img_1.csv").rename(folder / sub / "P1_001.ome.csv")
        (folder / sub / "P1_002.ome.csv").write_text((folder / sub / "P1_001.ome.csv").read_text())
    with pytest.warns(ReaderWarning, match=r"image 'P1_001.ome' has pixels of 0.25 um in x .* but 0.5 um in y"):
        x = cs.read_steinbock(folder, neighbors=False)
    assert x.images["image_id"].tolist() == ["P1_002.ome", "P1_001.ome"]  # images.csv's order
    assert x.images["pixel_size"].tolist() == [0.25, 0.25]
    assert x.images["pixel_size_y"].tolist() == [0.25, 0.5]
    assert x.images["width_px"].tolist() == [20, 10]
    assert x.cells.loc[x.cells["image_id"] == "P1_001.ome", "y"].tolist() == [(2.0 + 0.5) * 0.5, (7.0 + 0.5) * 0.5]


def test_steinbock_images_csv_rows_without_tables_are_named_in_a_warning(tmp_path):
    # an interrupted `steinbock measure`, or tables deleted by hand: those images are not silently missing
    folder = steinbock_folder(tmp_path, "image,width_px,height_px,acquisition_width_um,acquisition_height_um\n"
                                        "img_0.tiff,10,10,5,5\nimg_1.tiff,10,10,5,5\nP2.ome.tiff,10,10,5,5\n")
    with pytest.warns(ReaderWarning, match=r"steinbock/images.csv lists 2 image\(s\) without a table in "
                                           r"intensities/ \(img_0.csv, P2.ome.csv\): left out"):
        x = cs.read_steinbock(folder, neighbors=False)
    assert x.images["image_id"].tolist() == ["img_1"] and x.cells["cell_id"].tolist() == ["1", "2"]


def test_a_markers_csv_row_with_a_field_too_many_is_refused_naming_its_line(tmp_path):
    table = tmp_path / "img--unmicst_cell.csv"
    table.write_text("CellID,DNA_1,CD3,X_centroid,Y_centroid,Area\n1,100.5,2.5,10.0,5.0,50\n")
    (tmp_path / "markers.csv").write_text("cycle,marker_name\n1,DNA_1\n1,CD3,extra\n")
    with pytest.raises(InputError, match=r"^markers.csv: line 3: expected 2 comma-separated fields as in the header, "
                                         r"found 3"):
        cs.read_mcmicro(table, markers_csv=tmp_path / "markers.csv", pixel_size=0.65)
