"""MCMICRO project folders as the pipeline leaves them (markers.csv at the top, registration/<sample>.ome.tif,
quantification/<image>--<segmentation>_<mask>.csv): a table read from one takes the side files the call leaves out,
the folder reads as its one table, and given arguments always win."""

from __future__ import annotations

import gzip
import hashlib
import logging
import shutil

import numpy as np
import pandas as pd
import pytest
import tifffile

import cellspec_sc as cs
from cellspec_sc.cli.main import main
from cellspec_sc.errors import InputError
from cellspec_sc.readers import ReaderWarning
from exports import DATA

TABLE = DATA / "mcmicro" / "exemplar-001--unmicst_cell.csv"
# markers.csv as MCMICRO's exemplar writes it, with a channel that mcquant did not quantify
MARKERS = ("channel_number,cycle_number,marker_name\n1,1,DNA_1\n2,1,AF488\n3,1,CD3\n4,1,CD8a\n"
           "5,2,AF555_background\n")
PIXEL_SIZE, WIDTH, HEIGHT = 0.325, 64, 40


def make_project(root, name="exemplar-001"):
    project = root / name
    for part in ("quantification", "registration"):
        (project / part).mkdir(parents=True)
    (project / "markers.csv").write_text(MARKERS)
    tifffile.imwrite(project / "registration" / f"{name}.ome.tif", np.zeros((5, HEIGHT, WIDTH), np.uint16),
                     ome=True, metadata={"axes": "CYX", "PhysicalSizeX": PIXEL_SIZE, "PhysicalSizeXUnit": "µm",
                                         "PhysicalSizeY": PIXEL_SIZE, "PhysicalSizeYUnit": "µm"})
    table = project / "quantification" / f"{name}--unmicst_cell.csv"
    shutil.copyfile(TABLE, table)
    return project, table


def same_tables(a, b):
    assert a.cells.equals(b.cells) and a.images.equals(b.images) and a.channels.equals(b.channels)
    assert a.dictionary.equals(b.dictionary) and np.array_equal(a.measurements, b.measurements, equal_nan=True)


def test_a_table_in_a_project_takes_markers_csv_and_the_registered_image_from_it(tmp_path, caplog):
    project, table = make_project(tmp_path)
    image = project / "registration" / "exemplar-001.ome.tif"
    with caplog.at_level(logging.INFO, logger="cellspec_sc"), pytest.warns(ReaderWarning, match="AF555_background"):
        x = cs.read_mcmicro(table)
    source = pd.read_csv(table)
    assert x.images[["pixel_size", "width_px", "height_px"]].values.tolist() == [[PIXEL_SIZE, WIDTH, HEIGHT]]
    assert x.images["source_image_sha256"].tolist() == [hashlib.sha256(image.read_bytes()).hexdigest()]
    assert np.array_equal(x.cells["x"], (source["X_centroid"].to_numpy() + 0.5) * PIXEL_SIZE)
    assert x.channels["marker"].tolist() == pd.read_csv(project / "markers.csv")["marker_name"].tolist()
    parameters = x.provenance["parameters"]
    assert parameters["found_in_project"] == ["markers.csv", "registration/exemplar-001.ome.tif"]
    assert parameters["pixel_size_source"] == ("OME-XML PhysicalSizeX of registration/exemplar-001.ome.tif (found in "
                                               "the project folder)")
    assert [i["path_basename"] for i in x.provenance["inputs"]] == [table.name, "markers.csv", image.name]
    assert "found markers.csv and registration/exemplar-001.ome.tif in the MCMICRO project folder exemplar-001" \
        in caplog.text
    # the whole image is hashed for provenance, counted by a progress bar (shown when that takes a while)
    assert f"hashing exemplar-001.ome.tif for provenance: {image.stat().st_size:,} B in" in caplog.text
    with pytest.warns(ReaderWarning, match="AF555_background"):
        given = cs.read_mcmicro(table, markers_csv=project / "markers.csv", image=image)
    same_tables(x, given)


def test_given_arguments_win_over_the_project_folder(tmp_path):
    project, table = make_project(tmp_path)
    x = cs.read_mcmicro(table, pixel_size=0.5, markers_csv=DATA / "mcmicro" / "markers.csv")
    assert x.provenance["parameters"]["found_in_project"] == []
    assert x.images["pixel_size"].tolist() == [0.5] and "width_px" not in x.images
    assert x.channels["marker"].tolist() == ["DNA_1", "AF488", "CD3", "CD8a"]
    with pytest.warns(ReaderWarning, match="AF555_background"):
        y = cs.read_mcmicro(table, pixel_size=0.5)  # the project's markers.csv, but no image read for its size
    assert y.provenance["parameters"]["found_in_project"] == ["markers.csv"]
    assert "width_px" not in y.images and y.provenance["parameters"]["pixel_size_source"] == "argument"


def test_the_project_folder_and_its_quantification_folder_read_as_their_one_table(tmp_path):
    project, table = make_project(tmp_path)
    with pytest.warns(ReaderWarning, match="AF555_background"):
        expected = cs.read_mcmicro(table)
    for path in (project, project / "quantification"):
        with pytest.warns(ReaderWarning, match="AF555_background"):
            by_reader = cs.read_mcmicro(path)
        with pytest.warns(ReaderWarning, match="AF555_background"):
            recognised = cs.read_export(path)
        same_tables(by_reader, expected)
        same_tables(recognised, expected)
    assert recognised.provenance["parameters"]["recognised_as"] == "MCMICRO: read_mcmicro (from the folder layout)"


def test_a_gzipped_table_in_a_project_finds_the_same_side_files(tmp_path):
    project, table = make_project(tmp_path)
    packed = table.with_name(table.name + ".gz")
    packed.write_bytes(gzip.compress(table.read_bytes()))
    with pytest.warns(ReaderWarning, match="AF555_background"):
        plain = cs.read_mcmicro(table)
    table.unlink()
    with pytest.warns(ReaderWarning, match="AF555_background"):
        x = cs.read_export(project)
    same_tables(x, plain)
    assert x.provenance["inputs"][0]["path_basename"] == packed.name


def nuclei_of(table, keep, path, shift=1.0):
    """A nuclei mask's table of the cells ``keep`` (positions in ``table``), as mcquant writes one per mask: the
    same columns, other values (every measurement halved, centroids moved by ``shift`` pixels)."""
    source = pd.read_csv(table)
    nuclei = source.iloc[keep].copy()
    measured = [c for c in source.columns if c not in ("CellID", "X_centroid", "Y_centroid")]
    nuclei[measured] = nuclei[measured] * 0.5
    nuclei[["X_centroid", "Y_centroid"]] += shift
    nuclei.to_csv(path, index=False)
    return nuclei


def test_the_masks_of_one_segmentation_read_as_one_object_joined_by_cell_id(tmp_path):
    project, table = make_project(tmp_path)
    nuclei_path = table.with_name("exemplar-001--unmicst_nuclei.csv")
    nuclei = nuclei_of(table, [3, 0, 2], nuclei_path)  # the second cell has no nucleus; rows in another order
    with pytest.warns(ReaderWarning, match="AF555_background"):
        cell_only = cs.read_mcmicro(table)
    with pytest.warns(ReaderWarning, match="AF555_background"):
        x = cs.read_mcmicro(project)
    with pytest.warns(ReaderWarning, match="AF555_background"):
        recognised = cs.read_export(project / "quantification")
    assert recognised.equals(x.replace(provenance=recognised.provenance))
    cell_ids = cell_only.feature_ids
    assert x.feature_ids[:len(cell_ids)] == cell_ids
    assert np.array_equal(x.measurements[:, :len(cell_ids)], cell_only.measurements, equal_nan=True)
    source = pd.read_csv(table)
    row_of = {str(i): r for r, i in enumerate(source["CellID"])}
    rows = [row_of[str(i)] for i in nuclei["CellID"]]
    for column, feature in (("CD3", "nucleus:CD3:mean"), ("CD8a_intensity_median", "nucleus:CD8a:median"),
                            ("Area", "nucleus:area"), ("CD3_gini_index", "other:nucleus_cd3_gini_index")):
        values = x.measurements[:, x.feature_ids.index(feature)]
        assert np.array_equal(values[rows], nuclei[column].to_numpy(), equal_nan=True)
        assert np.isnan(values[row_of["2"]])
    assert x.dictionary.set_index("feature_id").loc["other:nucleus_cd3_gini_index", "source_name"] == "CD3_gini_index"
    assert x.cells["nucleus_x"].to_numpy()[rows].tolist() == ((nuclei["X_centroid"] + 0.5) * PIXEL_SIZE).tolist()
    assert np.isnan(x.cells["nucleus_y"].to_numpy()[row_of["2"]])
    assert x.cells.drop(columns=["nucleus_x", "nucleus_y"]).equals(cell_only.cells)
    assert x.images.equals(cell_only.images) and x.channels.equals(cell_only.channels)
    inputs = x.provenance["inputs"]
    assert [i["path_basename"] for i in inputs] == [table.name, "markers.csv", "exemplar-001.ome.tif",
                                                    nuclei_path.name]
    assert inputs[3]["sha256"] == hashlib.sha256(nuclei_path.read_bytes()).hexdigest()
    counts, parameters = x.provenance["counts"], x.provenance["parameters"]
    assert counts["rows_read"] == len(source) + len(nuclei) and counts["rows_kept"] == len(source)
    assert parameters["cells_without"] == {"nucleus": 1} and parameters["joined_on"] == ["image_id", "cell_id"]
    assert parameters["by_compartment"]["nucleus"]["tables"] == [nuclei_path.name]
    assert cs.read(cs.write(x, tmp_path / "joined")).equals(x)
    assert main(["import", "auto", str(project), str(tmp_path / "imported")]) == 0
    imported = cs.read(tmp_path / "imported")
    assert imported.equals(x.replace(provenance=imported.provenance))
    assert imported.provenance["parameters"]["cells_without"] == {"nucleus": 1}


def test_a_gzipped_mask_table_joins_as_the_plain_one(tmp_path):
    project, table = make_project(tmp_path)
    nuclei_path = table.with_name("exemplar-001--unmicst_nuclei.csv")
    nuclei_of(table, [1, 3], nuclei_path)
    with pytest.warns(ReaderWarning, match="AF555_background"):
        plain = cs.read_mcmicro(project)
    packed = nuclei_path.with_name(nuclei_path.name + ".gz")
    packed.write_bytes(gzip.compress(nuclei_path.read_bytes()))
    nuclei_path.unlink()
    with pytest.warns(ReaderWarning, match="AF555_background"):
        x = cs.read_mcmicro(project)
    assert x.equals(plain.replace(provenance=x.provenance))
    assert x.provenance["inputs"][-1]["path_basename"] == packed.name
    assert x.provenance["inputs"][-1]["sha256"] == hashlib.sha256(packed.read_bytes()).hexdigest()


def test_a_tma_of_cores_with_two_masks_each_joins_each_cores_cells(tmp_path):
    project, table = make_project(tmp_path, "tma-01")
    (project / "registration" / "tma-01.ome.tif").unlink()
    source = table.read_text().splitlines()
    for core in ("1", "2"):  # the same CellIDs in both cores: cells are matched within their core
        path = table.with_name(f"{core}--unmicst_cell.csv")
        path.write_text("\n".join(source[:4]) + "\n")
        nuclei_of(path, [0, 2] if core == "1" else [1], table.with_name(f"{core}--unmicst_nuclei.csv"),
                  shift=float(core))
    table.unlink()
    with pytest.warns(ReaderWarning, match="AF555_background"):
        x = cs.read_mcmicro(project, pixel_size=0.5)
    assert x.cells["image_id"].tolist() == ["1"] * 3 + ["2"] * 3
    nucleus_x = pd.read_csv(table.with_name("1--unmicst_nuclei.csv"))["X_centroid"].tolist()
    assert x.cells["nucleus_x"].tolist()[:3:2] == [(v + 0.5) * 0.5 for v in nucleus_x]
    present = ~np.isnan(x.measurements[:, x.feature_ids.index("nucleus:CD3:mean")])
    assert present.tolist() == [True, False, True, False, True, False]
    assert x.provenance["parameters"]["cells_without"] == {"nucleus": 3}


def test_a_nucleus_of_a_cell_the_cell_table_lacks_is_refused_naming_the_tables(tmp_path):
    project, table = make_project(tmp_path)
    nuclei = nuclei_of(table, [0, 1], table.with_name("exemplar-001--unmicst_nuclei.csv"))
    nuclei.loc[nuclei.index[1], "CellID"] = 99
    nuclei.to_csv(table.with_name("exemplar-001--unmicst_nuclei.csv"), index=False)
    with pytest.raises(InputError, match=r"'exemplar-001--unmicst_nuclei.csv': cell '99' of image 'exemplar-001' is "
                                         r"in no table of 'exemplar-001--unmicst_cell.csv'"), \
            pytest.warns(ReaderWarning, match="AF555_background"):
        cs.read_mcmicro(project)


def test_a_nuclei_table_of_an_image_without_a_cell_table_is_refused_naming_the_image(tmp_path):
    project, table = make_project(tmp_path, "tma-01")
    for core in ("1", "2"):
        nuclei_of(table, [0, 1], table.with_name(f"{core}--unmicst_nuclei.csv"))
    shutil.copyfile(table, table.with_name("1--unmicst_cell.csv"))
    table.unlink()
    with pytest.raises(InputError, match=r"'2--unmicst_nuclei.csv': image\(s\) '2' have no table among "
                                         r"'1--unmicst_cell.csv'"), pytest.warns(ReaderWarning):
        cs.read_mcmicro(project, pixel_size=0.5)


def test_two_segmentations_of_one_image_are_refused_naming_them(tmp_path):
    project, table = make_project(tmp_path)
    shutil.copyfile(table, table.with_name("exemplar-001--ilastik_cell.csv"))
    with pytest.raises(InputError, match=r"exemplar-001: 2 mcquant tables of one image in quantification/ \("
                       r"'exemplar-001--ilastik_cell.csv', 'exemplar-001--unmicst_cell.csv'\), not masks of one "
                       r"segmentation that measure different compartments \(those are read as one object, joined by "
                       r"CellID\); pass the one to read: "
                       r"read_mcmicro\('[^']*exemplar-001/quantification/exemplar-001--ilastik_cell.csv'\)"):
        cs.read_mcmicro(project)


def test_a_tma_projects_cores_read_as_one_object_with_the_projects_markers(tmp_path):
    project, table = make_project(tmp_path, "tma-01")
    (project / "registration" / "tma-01.ome.tif").unlink()  # cores have no registered image of their own
    source = table.read_text().splitlines()
    cores = []
    for core in ("1", "2", "3"):  # MCMICRO names a TMA core's table after the core: <core>--unmicst_cell.csv
        path = table.with_name(f"{core}--unmicst_cell.csv")
        path.write_text("\n".join([source[0], *source[1 + int(core):3 + int(core)]]) + "\n")
        cores.append(path)
    table.unlink()
    with pytest.warns(ReaderWarning, match="AF555_background"):
        x = cs.read_mcmicro(project, pixel_size=0.65)
    frames = [pd.read_csv(c) for c in cores]
    assert x.images["image_id"].tolist() == ["1", "2", "3"]
    assert x.cells["image_id"].tolist() == [core for core, f in zip("123", frames, strict=True) for _ in range(len(f))]
    assert np.array_equal(x.cells["x_px"], np.concatenate([f["X_centroid"].to_numpy() + 0.5 for f in frames]))
    assert np.array_equal(x.measurements[:, x.feature_ids.index("cell:CD3:mean")],
                          np.concatenate([f["CD3"].to_numpy() for f in frames]), equal_nan=True)
    assert x.channels["marker"].tolist() == 3 * ["DNA_1", "AF488", "CD3", "CD8a", "AF555_background"]
    assert x.provenance["parameters"]["found_in_project"] == ["markers.csv"]
    # one entry per input file: the markers.csv every core's read used is listed once
    assert [i["path_basename"] for i in x.provenance["inputs"]] == [cores[0].name, "markers.csv", *(c.name for c in
                                                                                                  cores[1:])]


def test_a_folder_without_mcquant_tables_is_refused_as_such(tmp_path):
    (tmp_path / "quantification").mkdir()
    (tmp_path / "quantification" / "notes.csv").write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match=r"no mcquant table \(a CSV with CellID and centroid columns\)"):
        cs.read_mcmicro(tmp_path, pixel_size=0.5)


def test_side_files_are_looked_for_only_in_a_project_layout(tmp_path):
    (tmp_path / "markers.csv").write_text(MARKERS)
    (tmp_path / "tables").mkdir()
    table = tmp_path / "tables" / TABLE.name
    shutil.copyfile(TABLE, table)
    x = cs.read_mcmicro(table, pixel_size=0.5)  # no warning: the markers.csv above is not read
    assert x.provenance["parameters"]["found_in_project"] == [] and len(x.channels) == 4


def test_cellspec_import_reads_a_project_folder(tmp_path, capsys):
    project, table = make_project(tmp_path)
    with pytest.warns(ReaderWarning, match="AF555_background"):
        expected = cs.read_mcmicro(table)
    for tool, out in (("mcmicro", tmp_path / "by_tool"), ("auto", tmp_path / "by_auto")):
        assert main(["import", tool, str(project), str(out)]) == 0
        assert "AF555_background" in capsys.readouterr().err
        same_tables(cs.read(out), expected)


@pytest.mark.parametrize("reader", [cs.read_steinbock, cs.read_cellprofiler])
def test_another_folder_reader_given_a_project_folder_names_mcmicro(tmp_path, reader):
    project, _ = make_project(tmp_path)
    with pytest.raises(InputError, match=r"exemplar-001: this looks like an MCMICRO project folder, not an export of "
                       r".*: use read_mcmicro \(`cellspec import mcmicro \.\.\.`\)"):
        reader(project, pixel_size=0.5)
