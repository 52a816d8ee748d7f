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


def test_a_project_with_several_tables_of_its_image_is_refused_naming_them(tmp_path):
    project, table = make_project(tmp_path)
    shutil.copyfile(table, table.with_name("exemplar-001--unmicst_nuclei.csv"))
    with pytest.raises(InputError, match=r"exemplar-001: 2 mcquant tables of one image in quantification/ \("
                       r"'exemplar-001--unmicst_cell.csv', 'exemplar-001--unmicst_nuclei.csv': its masks or "
                       r"segmentations\); pass the one to read: "
                       r"read_mcmicro\('[^']*exemplar-001/quantification/exemplar-001--unmicst_cell.csv'\)"):
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
