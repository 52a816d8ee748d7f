"""Which tool wrote an export: every reader given another tool's export names that tool and its reader, and
``read_export`` / ``cellspec import auto`` pick the right reader for all six tools or refuse, listing them."""

from __future__ import annotations

import hashlib
import io
import logging
import re
import warnings
import zipfile

import numpy as np
import pytest

import cellspec_sc as cs
from cellspec_sc.cli.main import main
from cellspec_sc.readers import ReaderWarning
from tool_layouts import OPTIONS, TOOL_NAMES, WRITERS

READERS = {"halo": "read_halo", "inform": "read_inform", "cellprofiler": "read_cellprofiler",
           "qupath": "read_qupath", "mcmicro": "read_mcmicro", "steinbock": "read_steinbock"}
PAIRS = [(reader, export) for reader in READERS for export in WRITERS if reader != export]


@pytest.mark.parametrize(("reader", "export"), PAIRS, ids=[f"{r}-on-{e}" for r, e in PAIRS])
def test_a_reader_given_another_tools_export_names_that_tool(tmp_path, reader, export):
    path = WRITERS[export](tmp_path)
    with pytest.raises(cs.InputError) as err:
        getattr(cs, READERS[reader])(path, **OPTIONS[reader])
    message = str(err.value)
    assert TOOL_NAMES[export] in message and READERS[export] in message, message
    assert len(message) < 400  # the tool's name, not a list of garbled columns


@pytest.mark.parametrize("export", sorted(WRITERS))
def test_read_export_picks_the_reader_of_each_tool(tmp_path, export, caplog):
    path = WRITERS[export](tmp_path)
    with caplog.at_level(logging.INFO, logger="cellspec_sc.readers"):
        x = cs.read_export(path, **OPTIONS[export])
    assert x.provenance["reader"]["adapter"] == export
    chosen = x.provenance["parameters"]["recognised_as"]
    assert chosen.startswith(f"{TOOL_NAMES[export]}: {READERS[export]}")
    assert any(READERS[export] in r.getMessage() and path.name in r.getMessage() for r in caplog.records)
    direct = getattr(cs, READERS[export])(path, **OPTIONS[export])  # the same object as the tool's own reader
    assert direct.cells.equals(x.cells) and np.array_equal(direct.measurements, x.measurements, equal_nan=True)
    assert "recognised_as" not in direct.provenance["parameters"]  # said only when read_export chose the reader


def test_read_export_refuses_an_unknown_file_listing_the_tools(tmp_path):
    path = tmp_path / "notes.csv"
    path.write_text("sample,value\na,1\n")
    with pytest.raises(cs.InputError) as err:
        cs.read_export(path)
    assert all(f"{TOOL_NAMES[k]} ({READERS[k]})" in str(err.value) for k in READERS)


@pytest.mark.parametrize(("name", "encode", "said"), [
    ("objects.xlsx", lambda text: zipped(text), "is a ZIP archive, e.g. an Excel workbook (.xlsx), not text"),
    ("objects.csv", lambda text: text.encode("utf-16"), "line 1: the file is UTF-16 text"),
])
def test_read_export_says_what_a_file_that_is_no_text_table_is(tmp_path, name, encode, said):
    path = tmp_path / name
    path.write_bytes(encode(WRITERS["halo"](tmp_path).read_bytes().decode("utf-8-sig")))
    with pytest.raises(cs.InputError, match=rf"{name}: .*{re.escape(said)}"):
        cs.read_export(path, pixel_size=0.5)
    with pytest.raises(cs.InputError, match=re.escape(said)):  # as the tool's own reader says it
        cs.read_halo(path, pixel_size=0.5)


@pytest.mark.parametrize("content", [b"", b"\xef\xbb\xbf", b"\r\n\n"], ids=["nothing", "a byte order mark", "blank"])
def test_read_export_says_an_empty_file_is_empty(tmp_path, content):
    path = tmp_path / "objects.csv"
    path.write_bytes(content)
    with pytest.raises(cs.InputError, match=r"^objects.csv: line 1: the file is empty"):
        cs.read_export(path)


def zipped(text: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("sheet.csv", text)
    return buffer.getvalue()


def test_read_export_refuses_an_argument_the_chosen_reader_does_not_take(tmp_path):
    path = WRITERS["halo"](tmp_path)
    with pytest.raises(cs.InputError, match="read_halo takes no argument 'markers_csv'"):
        cs.read_export(path, pixel_size=0.5, markers_csv="markers.csv")


@pytest.mark.parametrize("export", ["steinbock", "cellprofiler"])
def test_the_readers_of_contacts_take_the_neighbours_options_under_the_same_names(tmp_path, export):
    path = WRITERS[export](tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReaderWarning)  # the method is given: nothing is assumed about it
        x = cs.read_export(path, **OPTIONS[export], aggregation="mean", neighbors=True,
                           neighbors_method="mask_touching") if export == "steinbock" else \
            cs.read_export(path, **OPTIONS[export], neighbors=True, neighbors_method="mask_touching")
    assert len(x.adjacency) == 1 and x.adjacency["method"].tolist() == ["mask_touching"]
    assert x.provenance["parameters"]["neighbors"]["method"] == "mask_touching"
    y = cs.read_export(path, **OPTIONS[export], neighbors=False, neighbors_method="mask_touching")
    assert y.adjacency is None

def test_a_gzip_mcquant_table_reads_as_the_plain_one_and_is_recorded_as_stored(tmp_path):
    import gzip
    gz = WRITERS["mcmicro"](tmp_path)
    plain = tmp_path / "plain" / "exemplar-001--unmicst_cell.csv"
    plain.parent.mkdir()
    plain.write_bytes(gzip.decompress(gz.read_bytes()))
    x, y = cs.read_mcmicro(gz, pixel_size=0.65), cs.read_mcmicro(plain, pixel_size=0.65)
    assert x.cells.equals(y.cells) and np.array_equal(x.measurements, y.measurements)
    assert x.images["image_id"].tolist() == ["exemplar-001"]
    record = x.provenance["inputs"][0]
    assert record == {"path_basename": gz.name, "bytes": gz.stat().st_size,
                      "sha256": hashlib.sha256(gz.read_bytes()).hexdigest()}


def test_a_truncated_gzip_table_is_refused(tmp_path):
    gz = WRITERS["mcmicro"](tmp_path)
    gz.write_bytes(gz.read_bytes()[:-12])
    with pytest.raises(cs.InputError, match="gzip"):
        cs.read_mcmicro(gz, pixel_size=0.65)


@pytest.mark.parametrize("export", sorted(WRITERS))
def test_cellspec_import_auto_writes_what_the_tools_reader_reads(tmp_path, export, capsys):
    path = WRITERS[export](tmp_path)
    size = OPTIONS[export].get("pixel_size")
    code = main(["import", "auto", str(path), str(tmp_path / "out"), *(["--pixel-size", str(size)] if size else [])])
    assert code == 0
    assert f"reading with {READERS[export]}" in capsys.readouterr().out
    back = cs.read(tmp_path / "out")
    x = getattr(cs, READERS[export])(path, **OPTIONS[export])
    assert back.cells["cell_id"].tolist() == x.cells["cell_id"].tolist() and back.feature_ids == x.feature_ids


@pytest.mark.parametrize(("export", "flags", "expected"), [
    ("steinbock", ["--aggregation", "median", "--neighbors-method", "delaunay"],
     {"aggregation": "median", "neighbors_method": "delaunay"}),
    ("cellprofiler", ["--pixel-size", "0.5", "--no-neighbors", "--compartment", "nucleus"],
     {"pixel_size": 0.5, "neighbors": False, "compartment": "nucleus"}),
    ("qupath", ["--all-objects"], {"object_types": None}),
    ("inform", ["--pixel-size", "0.5", "--position-unit", "pixels"], {"pixel_size": 0.5, "position_unit": "pixels"}),
])
def test_cellspec_import_auto_takes_the_recognised_tools_own_options(tmp_path, export, flags, expected, capsys):
    path = WRITERS[export](tmp_path)
    assert main(["import", "auto", str(path), str(tmp_path / "out"), *flags]) == 0
    assert "warning" not in capsys.readouterr().err  # nothing assumed: the options said it
    back = cs.read(tmp_path / "out")
    x = getattr(cs, READERS[export])(path, **expected)  # what the tool's reader makes of the same options
    assert back.equals(x.replace(provenance=back.provenance)), back.differences(x)
    assert back.provenance["parameters"] == {**x.provenance["parameters"],
                                             "recognised_as": back.provenance["parameters"]["recognised_as"]}


def test_cellspec_import_auto_refuses_another_tools_option_in_its_own_words(tmp_path, capsys):
    path = WRITERS["halo"](tmp_path)
    assert main(["import", "auto", str(path), str(tmp_path / "out"), "--pixel-size", "0.5", "--aggregation",
                 "median", "--segmentation", "deepcell"]) == 2
    assert ("recognised as a HALO object table, which `cellspec import halo` reads; it takes no --aggregation, "
            "--segmentation") in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    folder = WRITERS["steinbock"](tmp_path)  # its image ids come from the folder
    assert main(["import", "auto", str(folder), str(tmp_path / "out"), "--image-id", "core 1"]) == 2
    assert "which `cellspec import steinbock` reads; it takes no --image-id" in capsys.readouterr().err


def test_cellspec_import_auto_refuses_an_unknown_file(tmp_path, capsys):
    path = tmp_path / "notes.txt"
    path.write_text("a\tb\n1\t2\n")
    assert main(["import", "auto", str(path), str(tmp_path / "out")]) == 2
    assert "the readers know: HALO (read_halo)" in capsys.readouterr().err


# QuPath's "Export measurements" without the centroid columns (a script's columnsToInclude that leaves them out):
# QuPath 0.2-0.3 names (Class, "Nucleus: DAPI mean") and 0.4+ names (Object ID, Classification, "Nucleus: DAPI: Mean").
QUPATH_WITHOUT_CENTROIDS = {
    "0.3": (["Image", "Name", "Class", "Parent", "ROI", "Nucleus: Area", "Nucleus: DAPI mean", "Cell: CD3 mean"],
            ["slide.svs", "", "Tumor", "Annotation", "Polygon", "31.5", "120.25", "8.5"]),
    "0.6": (["Image", "Object ID", "Object type", "Name", "Classification", "Parent", "ROI", "Nucleus: Area µm^2",
             "Nucleus: DAPI: Mean", "Cell: CD3: Mean"],
            ["slide.svs", "8f4b2c1e-5d6a-4b7c-9e0f-1a2b3c4d5e6f", "Cell", "", "Tumor", "Annotation", "Polygon", "31.5",
             "120.25", "8.5"]),
}


@pytest.mark.parametrize("version", sorted(QUPATH_WITHOUT_CENTROIDS))
def test_a_qupath_export_without_centroids_is_recognised_and_told_to_export_them(tmp_path, capsys, version):
    names, row = QUPATH_WITHOUT_CENTROIDS[version]
    path = tmp_path / "measurements.tsv"
    path.write_text("\t".join(names) + "\n" + "\t".join(row) + "\n", encoding="utf-8")
    advice = "a QuPath export without centroid columns"
    for read in (cs.read_export, cs.read_qupath):
        with pytest.raises(cs.InputError, match=f"{advice}.*export the measurements again with 'Centroid X µm'"):
            read(path, pixel_size=0.5)
    assert main(["import", "auto", str(path), str(tmp_path / "out"), "--pixel-size", "0.5"]) == 2
    out = capsys.readouterr()
    assert "reading with read_qupath" in out.out and advice in out.err
    with pytest.raises(cs.InputError, match=r"this looks like a QuPath measurement export.*use read_qupath"):
        cs.read_mcmicro(path, pixel_size=0.5)


def test_the_docs_table_of_recognised_tools_follows_the_signatures():
    from pathlib import Path

    from cellspec_sc.readers._recognise import SIGNATURES

    page = (Path(__file__).resolve().parents[2] / "docs" / "readers.md").read_text(encoding="utf-8")
    table = page.split("## One entry point", 1)[1].split("| tool | recognised by | reader |", 1)[1].split("\n\n", 1)[0]
    rows = [line.split("|")[1:-1] for line in table.strip().splitlines()[1:]]
    assert [(r[0].strip(), r[2].strip()) for r in rows] == [(s.tool, f"`{s.reader}`") for s in SIGNATURES]
    for row, signature in zip(rows, SIGNATURES, strict=True):
        if signature.key != "steinbock":  # a folder layout, not columns
            groups = [group for groups in (signature.columns, *signature.also) for group in groups]
            assert all(f"`{group[0]}`" in row[1] for group in groups), (row, groups)


@pytest.mark.parametrize("export", ["halo", "inform"])
def test_gzip_halo_and_inform_tables_read_as_the_plain_ones(tmp_path, export):
    import gzip
    plain = WRITERS[export](tmp_path)
    gz = tmp_path / "stored" / (plain.name + ".gz")
    gz.parent.mkdir()
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    x, y = cs.read_export(gz, pixel_size=0.5), getattr(cs, READERS[export])(plain, pixel_size=0.5)
    assert x.cells.equals(y.cells) and np.array_equal(x.measurements, y.measurements, equal_nan=True)
    assert x.provenance["inputs"][0]["path_basename"] == gz.name

