"""A folder of one export table per image or field (inForm's batch export, per-image HALO and QuPath tables) read as
one object: the same object as the merged table of the same rows, every table an input of its own, and what cannot
be one object refused naming the tables."""

from __future__ import annotations

import csv
import gzip
import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cellspec_sc as cs
from cellspec_sc.cli.main import main
from cellspec_sc.readers import ReaderWarning
from exports import measured_values, number_text
from tool_layouts import tsv, write_halo, write_inform

QUPATH_HEAD = ["Image", "Object ID", "Object type", "Classification", "Centroid X µm", "Centroid Y µm",
               "Centroid X px", "Centroid Y px", "Cell: Area µm^2", "Nucleus: CD3: Mean"]
QUPATH_ROWS = [["a.tif", "c1", "Cell", "CD3+", "10", "5", "20", "10", "80.5", "450.25"],
               ["a.tif", "c2", "Cell", "Tumor", "14", "6", "28", "12", "90", "8.5"],
               ["b.tif", "c1", "Cell", "Tumor", "3", "4.5", "6", "9", "70.25", "NaN"]]


def write_qupath(folder):
    path = folder / "measurements.tsv"
    path.write_text(tsv(QUPATH_HEAD, QUPATH_ROWS), encoding="utf-8")
    return path


# tool -> (merged table writer, image column, reader, options)
TOOLS = {"inform": (write_inform, "Sample Name", cs.read_inform, {"pixel_size": 0.5}),
         "halo": (write_halo, "Image Location", cs.read_halo, {"pixel_size": 0.5}),
         "qupath": (write_qupath, "Image", cs.read_qupath, {})}


def split_by_image(merged, image_column, folder):
    """The merged table's rows written as one table per image, byte for byte as the tool wrote them (header, byte
    order mark, separator and line ends kept), named so that they sort in the merged table's order."""
    data = merged.read_bytes()
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    end = b"\r\n" if b"\r\n" in data else b"\n"
    header, *rows = data[len(bom):].rstrip(end).split(end)
    delimiter = "\t" if b"\t" in header else ","
    column = next(csv.reader([header.decode()], delimiter=delimiter)).index(image_column)
    groups: dict[str, list[bytes]] = {}
    for row in rows:
        groups.setdefault(next(csv.reader([row.decode()], delimiter=delimiter))[column], []).append(row)
    folder.mkdir()
    paths = []
    for k, lines in enumerate(groups.values()):
        path = folder / f"{k:02d}_{merged.name}"
        path.write_bytes(bom + end.join([header, *lines]) + end)
        paths.append(path)
    return paths


def same_object_but_provenance(a, b):
    assert a.cells.equals(b.cells) and a.dictionary.equals(b.dictionary)
    assert a.images.equals(b.images) and a.channels.equals(b.channels)
    assert np.array_equal(a.measurements.view(np.int64), b.measurements.view(np.int64))  # to the bit, NaN too


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_a_folder_of_per_image_tables_reads_as_the_merged_table(tmp_path, tool):
    write, image_column, reader, options = TOOLS[tool]
    (tmp_path / "merged").mkdir()
    merged_path = write(tmp_path / "merged")
    tables = split_by_image(merged_path, image_column, tmp_path / "batch")
    assert len(tables) >= 2
    (tmp_path / "batch" / "notes.txt").write_text("not a table\n")  # a stray file is not read
    # nor what is no regular file: a folder, a dangling link, a FIFO (opening it would wait for a writer)
    (tmp_path / "batch" / "older.csv").mkdir()
    (tmp_path / "batch" / "moved.csv").symlink_to(tmp_path / "gone.csv")
    os.mkfifo(tmp_path / "batch" / "pipe.txt")
    merged = reader(merged_path, **options)
    for read in (reader, cs.read_export):
        x = read(tmp_path / "batch", **options)
        same_object_but_provenance(x, merged)
        assert x.provenance["inputs"] == [{"path_basename": t.name, "bytes": t.stat().st_size,
                                           "sha256": hashlib.sha256(t.read_bytes()).hexdigest()} for t in tables]
        assert x.provenance["counts"] == merged.provenance["counts"]
        parameters = dict(x.provenance["parameters"])
        assert parameters.pop("tables") == [t.name for t in tables]
        parameters.pop("recognised_as", None)
        assert parameters == merged.provenance["parameters"]
        back = cs.read(cs.write(x, tmp_path / f"{tool}-{read.__name__}"))
        assert back.equals(x), back.differences(x)


def test_the_command_imports_a_folder_of_per_field_tables(tmp_path):
    (tmp_path / "merged").mkdir()
    merged_path = write_inform(tmp_path / "merged")
    split_by_image(merged_path, "Sample Name", tmp_path / "batch")
    merged = cs.read_inform(merged_path, pixel_size=0.5)
    for tool in ("inform", "auto"):
        assert main(["import", tool, str(tmp_path / "batch"), str(tmp_path / tool), "--pixel-size", "0.5"]) == 0
        same_object_but_provenance(cs.read(tmp_path / tool), merged)


def batch(tmp_path):
    (tmp_path / "merged").mkdir()
    return split_by_image(write_inform(tmp_path / "merged"), "Sample Name", tmp_path / "batch")


def test_tables_that_measure_other_features_are_refused_naming_the_table_and_features(tmp_path):
    first, second = batch(tmp_path)
    second.write_text(second.read_text().replace("Nucleus Compactness", "Nucleus Solidity"))
    with pytest.raises(cs.InputError, match=rf"{second.name}: its features differ from those of {first.name} \(only "
                       rf"in {second.name}: 'other:nucleus_solidity'; only in {first.name}: "
                       r"'other:nucleus_compactness'\); the tables of a folder are read as one object"):
        cs.read_inform(tmp_path / "batch", pixel_size=0.5)


def test_tables_with_other_cells_columns_are_refused_naming_them(tmp_path):
    first, second = batch(tmp_path)
    second.write_text(second.read_text().replace("Tissue Category", "Phenotype-CD8"))
    with pytest.raises(cs.InputError, match=rf"{second.name}: its cells columns differ from those of {first.name} "
                       rf"\(only in {second.name}: 'phenotype_cd8'; only in {first.name}: 'tissue_category'\)"):
        cs.read_inform(tmp_path / "batch", pixel_size=0.5)


def test_an_image_in_two_tables_is_refused_naming_both(tmp_path):
    first, second = batch(tmp_path)
    second.write_bytes(first.read_bytes())
    with pytest.raises(cs.InputError, match=rf"{second.name}: image 'Core\[1,5,6,1\]_\[21302,15107\].im3' is in "
                       rf"{first.name} too; each table of a folder holds images of its own"):
        cs.read_inform(tmp_path / "batch", pixel_size=0.5)


def test_a_refusal_inside_one_table_names_that_table_and_line(tmp_path):
    _, second = batch(tmp_path)
    second.write_text(second.read_text().replace("87.5%", "high"))
    with pytest.raises(cs.InputError, match=rf"{second.name}: line 2, column 'Confidence': cannot parse 'high'"):
        cs.read_inform(tmp_path / "batch", pixel_size=0.5)


def test_a_folder_of_another_tools_tables_names_that_tool(tmp_path):
    batch(tmp_path)
    with pytest.raises(cs.InputError, match=r"batch: this looks like a folder of inForm cell_seg_data tables, not an "
                       r"export of HALO: use read_inform"):
        cs.read_halo(tmp_path / "batch", pixel_size=0.5)


def test_a_folder_of_tables_of_two_tools_is_refused_listing_them(tmp_path):
    batch(tmp_path)
    (tmp_path / "batch" / "objects.csv").write_bytes(write_halo(tmp_path / "merged").read_bytes())
    with pytest.raises(cs.InputError, match=r"batch: a folder of tables of several tools \(inForm: '00_Merge_cell_seg_"
                       r"data.txt', '01_Merge_cell_seg_data.txt'; HALO: 'objects.csv'\); read_inform reads a folder "
                       r"of inForm tables only"):
        cs.read_inform(tmp_path / "batch", pixel_size=0.5)
    with pytest.raises(cs.InputError, match=r"batch: no reader recognises this folder's layout"):
        cs.read_export(tmp_path / "batch", pixel_size=0.5)


def test_a_folder_without_a_table_of_the_tool_is_refused_as_such(tmp_path):
    (tmp_path / "notes.txt").write_text("a\tb\n1\t2\n")
    with pytest.raises(cs.InputError, match=r"no inForm table in the folder"):
        cs.read_inform(tmp_path, pixel_size=0.5)


# field names as inForm writes them, with non-ASCII and zero-padded parts
FIELDS = st.lists(st.sampled_from(["Core[1,1,1]_[001,2].im3", "Kern_µ[2,1,1].im3", "Core[1,1,2]_[010,2].im3",
                                   "Core[1,2,1]_[9,007].im3"]), min_size=1, max_size=4, unique=True)


@settings(max_examples=20, deadline=None)
@given(fields=FIELDS, data=st.data())
def test_generated_batches_read_as_the_merged_table_and_the_source_values(fields, data):
    head = ["Sample Name", "Cell ID", "Cell X Position", "Cell Y Position", "Nucleus Area (pixels)",
            "Nucleus DAPI Mean (Normalized Counts, Total Weighting)", "Entire Cell CD8 Total (Normalized Counts, "
            "Total Weighting)"]
    rows, values = [], []
    for field in fields:
        for k in range(data.draw(st.integers(1, 4))):
            row = [data.draw(st.one_of(measured_values(infinities=False), st.none())) for _ in range(2)]
            values.append(row)
            rows.append([field, f"{k + 1:03d}", str(data.draw(st.integers(0, 1868))), "7.5", "100",
                         *("#N/A" if v is None else number_text(v) for v in row)])
    with tempfile.TemporaryDirectory() as tmp:
        merged_path = Path(tmp) / "merged" / "Merge_cell_seg_data.txt"
        merged_path.parent.mkdir()
        merged_path.write_text(tsv(head, rows), encoding="utf-8")
        split_by_image(merged_path, "Sample Name", Path(tmp) / "batch")
        x = cs.read_inform(Path(tmp) / "batch", pixel_size=0.5)
        same_object_but_provenance(x, cs.read_inform(merged_path, pixel_size=0.5))
        raw = np.array([[np.nan if v is None else v for v in row] for row in values], dtype=np.float64)
        got = x.measurements[:, 1:]
        assert np.array_equal(np.isnan(got), np.isnan(raw))
        assert np.array_equal(got.view(np.int64)[~np.isnan(raw)], raw.view(np.int64)[~np.isnan(raw)])  # -0.0 too
        assert x.cells["cell_id"].tolist() == [r[1] for r in rows]
        back = cs.read(cs.write(x, Path(tmp) / "out"))
        assert back.equals(x), back.differences(x)


def test_a_warning_every_table_gives_is_said_once_naming_the_tables(tmp_path):
    tables = batch(tmp_path)
    column = "Nucleus DAPI Mean (Normalized Counts, Total Weighting)"
    for table in tables:  # every field writes that measurement as a percentage
        table.write_text(table.read_text().replace("\t3.5\t", "\t3.5 %\t").replace("\t4.25\t", "\t4.25 %\t"))
    with pytest.warns(ReaderWarning) as caught:
        x = cs.read_inform(tmp_path / "batch", pixel_size=0.5)
    said = [str(w.message) for w in caught if issubclass(w.category, ReaderWarning)]
    assert said == [f"{tables[0].name}: column {column!r} is named as an intensity measurement but holds percentages "
                    "written as text; it is read as the cells column "
                    "'nucleus_dapi_mean_normalized_counts_total_weighting' (the number before the per cent sign) and "
                    "is not in the matrix (provenance parameters['percent_columns']) (the same in 1 other table(s) of "
                    f"the folder: {tables[1].name!r})"]
    assert x.cells["nucleus_dapi_mean_normalized_counts_total_weighting"].tolist()[::2] == [3.5, 4.25]


def test_a_refusal_in_a_later_table_still_lets_the_earlier_warnings_through(tmp_path):
    first, second = batch(tmp_path)
    first.write_text(first.read_text().replace("\t3.5\t", "\t3.5 %\t"))
    second.write_text(second.read_text().replace("87.5%", "high"))
    with pytest.warns(ReaderWarning, match=rf"{first.name}: column .* holds percentages"), \
            pytest.raises(cs.InputError, match=rf"{second.name}: line 2, column 'Confidence'"):
        cs.read_inform(tmp_path / "batch", pixel_size=0.5)


def test_tables_are_refused_in_their_order_though_the_next_one_is_read_ahead(tmp_path):
    first, second = batch(tmp_path)
    # the first table's cells are refused (a repeated id); the second is planned and parsed while the first is made
    # into cells, and refused too (at its header, or in its parse): the first refusal is the one said
    first.write_text(first.read_text().replace("\tother\t2\t", "\tother\t1\t"))
    readable = second.read_text()
    for broken in ("Tissue Category", "Phenotype"), ("87.5%", "high"):
        second.write_text(readable.replace(*broken, 1))
        with pytest.raises(cs.InputError, match=rf"^{second.name}: "):  # alone, the second table is refused
            cs.read_inform(second, pixel_size=0.5)
        with pytest.raises(cs.InputError, match=rf"^{first.name}: .*Cell ID") as refused:
            cs.read_inform(tmp_path / "batch", pixel_size=0.5)
        assert second.name not in str(refused.value)


def test_a_folder_with_gzipped_tables_reads_as_the_plain_folder(tmp_path):
    write, image_column, reader, options = TOOLS["halo"]
    (tmp_path / "merged").mkdir()
    tables = split_by_image(write(tmp_path / "merged"), image_column, tmp_path / "batch")
    plain = reader(tmp_path / "batch", **options)
    packed = tables[0].with_name(tables[0].name + ".gz")  # the first table kept compressed, as large exports are
    packed.write_bytes(gzip.compress(tables[0].read_bytes()))
    tables[0].unlink()
    x = reader(tmp_path / "batch", **options)
    same_object_but_provenance(x, plain)
    inputs = [(i["path_basename"], i["sha256"]) for i in x.provenance["inputs"]]
    assert inputs == [(packed.name, hashlib.sha256(packed.read_bytes()).hexdigest()),
                      *[(t.name, hashlib.sha256(t.read_bytes()).hexdigest()) for t in tables[1:]]]
