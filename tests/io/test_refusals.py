"""Every refusal of the directory format (spec sections 9 and 11) raises its own FormatError subclass."""

from __future__ import annotations

import gzip
import os
import re
import shutil
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cellspec_sc as cs
from cellspec_sc.cohort import CohortError
from cellspec_sc.io import _parquet as parquet_io
from cellspec_sc.io import _refusals as r
from dirhelpers import edit_json, reseal


@pytest.fixture
def written(tmp_path):
    return cs.write(cs.example(n_cells=30, adjacency=True), tmp_path / "obj")


@pytest.fixture
def written_tsv(tmp_path):
    return cs.write(cs.example(n_cells=30), tmp_path / "tsv", format="tsv")


def refused(path, cls, file):
    """read(path) raises exactly ``cls``, naming directory, file and rule."""
    with pytest.raises(cls) as info:
        cs.read(path)
    err = info.value
    assert type(err) is cls and isinstance(err, cs.FormatError)
    message = str(err)
    assert str(path) in message and cls.rule in message
    if file:
        assert file in message and err.file == file
    return err


def test_every_refusal_class_has_its_own_rule():
    rules = [cls.rule for cls in r.all_refusals()]
    assert len(rules) == len(set(rules)) >= 15


def test_not_a_directory(tmp_path):
    (tmp_path / "f").write_text("x")
    refused(tmp_path / "f", r.NotACellspecDirectory, None)


def test_missing_done(written):
    (written / "DONE").unlink()
    refused(written, r.IncompleteDirectory, "DONE")


def test_directory_in_place_of_a_file(written):
    (written / "DONE").unlink()
    (written / "DONE").mkdir()
    refused(written, r.NotARegularFile, "DONE")


def test_done_mismatch(written):
    (written / "DONE").write_text("0" * 64 + "\n")
    refused(written, r.DoneMismatch, "DONE")


def test_manifest_garbage(written):
    (written / "MANIFEST.sha256").write_text("not a manifest line\n")
    reseal_done_only(written)
    refused(written, r.ManifestInvalid, "MANIFEST.sha256")


def reseal_done_only(directory):
    import hashlib
    (directory / "DONE").write_text(hashlib.sha256((directory / "MANIFEST.sha256").read_bytes()).hexdigest() + "\n")


def test_listed_file_missing(written):
    (written / "adjacency.parquet").unlink()
    refused(written, r.ListedFileMissing, "adjacency.parquet")


def test_listed_file_changed(written):
    with open(written / "cells.parquet", "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 1]))
    refused(written, r.ChecksumMismatch, "cells.parquet")


def test_second_unlisted_cells_file(written, written_tsv):
    shutil.copy(written_tsv / "cells.tsv.gz", written / "cells.tsv.gz")
    refused(written, r.UnlistedDataFile, "cells.tsv.gz")


def test_both_cells_files_listed(written, written_tsv):
    shutil.copy(written_tsv / "cells.tsv.gz", written / "cells.tsv.gz")
    reseal(written, ["cells.parquet", "cells.tsv.gz", "adjacency.parquet", "cellspec.json"])
    refused(written, r.UnlistedDataFile, "MANIFEST.sha256")


def test_other_unlisted_file_is_ignored_with_a_warning(written):
    (written / "notes.txt").write_text("hello")
    with pytest.warns(r.UnlistedFileWarning, match="notes.txt"):
        y = cs.read(written)
    assert y.n_cells == 30


@pytest.mark.parametrize("entry", ["/etc/passwd", "../outside.txt", "sub/../../outside.txt", "C:/x"])
def test_unsafe_manifest_entries_refused_before_opening(written, entry):
    (written.parent / "outside.txt").write_text("secret")
    lines = (written / "MANIFEST.sha256").read_text()
    (written / "MANIFEST.sha256").write_text(lines + f"{'0' * 64}  {entry}\n")
    reseal_done_only(written)
    (written / "cells.parquet").unlink()  # proves nothing listed was opened: this would be ListedFileMissing
    refused(written, r.UnsafePath, "MANIFEST.sha256")


def test_symlink_pointing_out_refused(written):
    (written.parent / "outside.json").write_text("{}")
    os.symlink(written.parent / "outside.json", written / "link.json")
    reseal(written, ["cells.parquet", "adjacency.parquet", "cellspec.json", "link.json"])
    refused(written, r.UnsafePath, "MANIFEST.sha256")


@pytest.mark.parametrize("version, reason", [("2.0.0", "major"), ("1.7.0", "minor version 7"),
                                             ("0.9.0", "major"), ("1.0", "MAJOR.MINOR.PATCH"),
                                             (1, "MAJOR.MINOR.PATCH")])
def test_unsupported_versions(written, version, reason):
    edit_json(written, lambda d: d.update(spec_version=version))
    err = refused(written, r.UnsupportedVersion, "cellspec.json")
    assert reason in str(err)


def test_newer_patch_is_read(written):
    edit_json(written, lambda d: d.update(spec_version="1.0.9"))
    assert cs.read(written).spec_version == "1.0.9"


def test_invalid_json(written):
    (written / "cellspec.json").write_text('{"spec_version": "1.0.0",')
    reseal(written)
    refused(written, r.InvalidJson, "cellspec.json")


@pytest.mark.parametrize("change", [
    lambda d: d.pop("provenance"),
    lambda d: d["column_types"]["cells"].append({"name": "q", "type": "float"}),
    lambda d: d.update(images={"image_id": "img1"}),
    lambda d: d["dictionary"][0].update(kind=["intensity"]),
])
def test_schema_violations(written, change):
    edit_json(written, change)
    refused(written, r.SchemaViolation, "cellspec.json")


def test_undecodable_parquet(written):
    (written / "cells.parquet").write_bytes(b"PAR1 this is not parquet PAR1")
    reseal(written)
    refused(written, r.UndecodableData, "cells.parquet")


def not_utf8(values: list[str], row: int) -> pa.Array:
    """A string array whose value at ``row`` is not UTF-8 (pyarrow builds it without checking)."""
    raw = [v.encode() for v in values]
    raw[row] = b"\xff" + raw[row][1:]
    return pa.Array.from_buffers(pa.string(), len(raw), pa.array(raw, pa.binary()).buffers())


@pytest.mark.parametrize(("file", "column", "row"), [("cells", "cell_id", 5), ("cells", "image_id", 17),
                                                      ("adjacency", "cell_id_b", 3)])
def test_text_that_is_not_utf8_is_refused_naming_column_and_row(written, file, column, row):
    # Parquet readers hand such bytes on unchecked; pandas then failed deep inside pyarrow ("Wrapping ... failed")
    table = pq.read_table(written / f"{file}.parquet")
    at = table.schema.get_field_index(column)
    values = table.column(column).cast(pa.string()).to_pylist()
    pq.write_table(table.set_column(at, column, not_utf8(values, row)), written / f"{file}.parquet")
    reseal(written)
    err = refused(written, r.UndecodableData, f"{file}.parquet")
    bad = "\\xff" + values[row][1:]
    assert f"column {column!r}, row {row} (counting from 0): text that is not UTF-8 (b'{bad}')" in str(err)


def test_column_name_in_the_parquet_footer_that_is_not_utf8_is_refused(written):
    # pyarrow decodes the footer's names as it opens the file and raised UnicodeDecodeError past our handlers
    data = bytearray((written / "cells.parquet").read_bytes())
    at = data.find(b"cell_id")  # its first occurrence: a name pyarrow decodes as it opens the file
    data[at] ^= 0x80
    (written / "cells.parquet").write_bytes(bytes(data))
    reseal(written)
    err = refused(written, r.UndecodableData, "cells.parquet")
    assert "not a readable Parquet file: a name in the file's footer is not UTF-8 (b'\\xe3'" in str(err)


def test_footer_row_count_that_disagrees_with_its_row_groups_is_refused(written):
    # a flipped bit in the footer's num_rows (resealed): the matrix was sized from it (numpy: "negative dimensions")
    raw = (written / "cells.parquet").read_bytes()
    footer = len(raw) - 8 - int.from_bytes(raw[-8:-4], "little")
    for at in range(footer, len(raw) - 8):
        data = bytearray(raw)
        data[at] ^= 1
        try:
            meta = pq.ParquetFile(pa.BufferReader(bytes(data))).metadata
            groups = sum(meta.row_group(i).num_rows for i in range(meta.num_row_groups))
        except (pa.ArrowException, OSError, UnicodeDecodeError):
            continue
        if groups == 30 and meta.num_rows != 30:
            break
    else:
        pytest.fail("no byte of the footer changes its row count alone")
    (written / "cells.parquet").write_bytes(bytes(data))
    reseal(written)
    err = refused(written, r.UndecodableData, "cells.parquet")
    assert f"the footer says {meta.num_rows} rows but its row groups hold 30" in str(err)


def parquet_bomb(directory, rows_per_group: int, groups: int) -> None:
    """Replace cells.parquet with copies of its first row: run-length encoding makes the file tiny (resealed)."""
    source = pq.read_table(directory / "cells.parquet").slice(0, 1)
    with pq.ParquetWriter(directory / "bomb.parquet", source.schema, use_dictionary=True, compression="zstd") as out:
        for _ in range(groups):
            out.write_table(pa.Table.from_arrays([pa.array(np.repeat(c.to_numpy(zero_copy_only=False), rows_per_group),
                                                           type=c.type) for c in source.columns], schema=source.schema))
    (directory / "bomb.parquet").replace(directory / "cells.parquet")
    reseal(directory)


def test_parquet_footer_claiming_more_values_than_the_file_could_hold_is_refused(written):
    # a few hundred kB of run-length encoding claiming 1.2 million cells: refused before a matrix is sized from it
    parquet_bomb(written, 400_000, 3)
    size, columns = (written / "cells.parquet").stat().st_size, pq.ParquetFile(written / "cells.parquet").metadata
    assert columns.num_rows == 1_200_000 and size * 100 < 1_200_000 * columns.num_columns * 8
    claim = f"its footer claims 1,200,000 rows of {columns.num_columns} columns, at least " \
            f"{1_200_000 * columns.num_columns * 8:,} bytes once read: over 100 times its size ({size:,} bytes)"
    assert claim in str(refused(written, r.FileTooLarge, "cells.parquet"))
    with pytest.raises(r.FileTooLarge, match=re.escape(claim)):
        cs.read(written, lazy=True)
    with pytest.raises(CohortError, match="FileTooLarge: .*" + re.escape(claim)):
        cs.open_cohort([written])
    # the bound is the user's to lift: the file is then read whole, and its copied cell ids fail validation
    with pytest.raises(cs.ValidationError, match="cells_key_unique"):
        cs.read(written, max_inflation=1e6)
    assert len(cs.open_cohort([written], max_inflation=1e6)) == 1


def test_undecodable_tsv(written_tsv):
    (written_tsv / "cells.tsv.gz").write_bytes(b"\x1f\x8b not gzip")
    reseal(written_tsv)
    refused(written_tsv, r.UndecodableData, "cells.tsv.gz")


def test_tsv_value_of_wrong_type(written_tsv):
    text = gzip.decompress((written_tsv / "cells.tsv.gz").read_bytes()).decode()
    header, first, rest = text.split("\n", 2)
    fields = first.split("\t")
    fields[3] = "twelve"  # x, a double
    (written_tsv / "cells.tsv.gz").write_bytes(gzip.compress("\n".join([header, "\t".join(fields), rest]).encode()))
    reseal(written_tsv)
    refused(written_tsv, r.UndecodableData, "cells.tsv.gz")


def test_column_listed_but_missing(written):
    edit_json(written, lambda d: d["column_types"]["cells"].insert(3, {"name": "tile_id", "type": "character"}))
    err = refused(written, r.ColumnMismatch, "cells.parquet")
    assert "tile_id" in str(err)


def test_stored_column_not_listed(written):
    edit_json(written, lambda d: d["column_types"]["cells"].pop(5))
    refused(written, r.ColumnMismatch, "cells.parquet")


def test_stored_type_differs_from_column_types(written):
    edit_json(written, lambda d: d["column_types"]["cells"][3].update(type="character"))
    refused(written, r.ColumnMismatch, "cells.parquet")


@pytest.mark.parametrize("mistyped", [["image_id"], ["cell_id", "image_id"]])
def test_mistyped_image_id_is_refused_in_column_order(written, mistyped, monkeypatch):
    """The matrix starts decoding once image_id alone reads as text; a stored image_id that does not
    (numbers where column_types says character) is refused like any other column, and the first
    mistyped column in column_types order is the one named."""
    monkeypatch.setattr(parquet_io, "_EARLY_ROWS", 1)  # even 30 cells
    table = pq.read_table(written / "cells.parquet")
    for name in mistyped:
        i = table.schema.get_field_index(name)
        table = table.set_column(i, name, pa.array(np.arange(table.num_rows), type=pa.int64()))
    pq.write_table(table, written / "cells.parquet")
    reseal(written)
    err = refused(written, r.ColumnMismatch, "cells.parquet")
    assert f"column {mistyped[0]!r} is stored as int64" in str(err)


def test_adjacency_without_column_types(written):
    edit_json(written, lambda d: d["column_types"].pop("adjacency"))
    refused(written, r.UnlistedDataFile, "adjacency.parquet")


def test_json_table_value_of_wrong_type(written):
    edit_json(written, lambda d: d["images"][0].update(pixel_size="0.5"))
    refused(written, r.ColumnMismatch, "cellspec.json")


def _replace_parquet_column(path, name, values):
    table = pq.read_table(path)
    i = table.schema.get_field_index(name)
    pq.write_table(table.set_column(i, name, pa.array(values, type=table.schema.field(i).type)), path)


def test_nan_stored_as_number_fails_measurements_finite(written):
    values = pq.read_table(written / "cells.parquet").column("cell:CD3e:mean").to_pylist()
    values[4] = float("nan")
    _replace_parquet_column(written / "cells.parquet", "cell:CD3e:mean", values)
    reseal(written)
    with pytest.raises(cs.ValidationError) as info:
        cs.read(written)
    report = info.value.report
    assert report.status("measurements_finite") == "fail"
    assert [f.name for f in report.failures] == ["measurements_finite"]
    assert "cell:CD3e:mean: 1 NaN" in report.result("measurements_finite").message


def test_nan_stored_in_tsv_fails_measurements_finite(written_tsv):
    text = gzip.decompress((written_tsv / "cells.tsv.gz").read_bytes()).decode()
    lines = text.split("\n")
    fields = lines[2].split("\t")
    fields[-1] = "NaN"
    lines[2] = "\t".join(fields)
    (written_tsv / "cells.tsv.gz").write_bytes(gzip.compress("\n".join(lines).encode()))
    reseal(written_tsv)
    with pytest.raises(cs.ValidationError) as info:
        cs.read(written_tsv)
    assert info.value.report.status("measurements_finite") == "fail"


def test_infinite_stored_fails_measurements_finite(written):
    values = pq.read_table(written / "cells.parquet").column("cell:area").to_pylist()
    values[0] = float("inf")
    _replace_parquet_column(written / "cells.parquet", "cell:area", values)
    reseal(written)
    with pytest.raises(cs.ValidationError) as info:
        cs.read(written)
    assert info.value.report.status("measurements_finite") == "fail"


def test_structure_failure_is_a_validation_error_with_report(written):
    edit_json(written, lambda d: d["images"][0].update(pixel_size=-1.0))
    with pytest.raises(cs.ValidationError) as info:
        cs.read(written)
    assert info.value.report.status("images_pixel_size") == "fail"
    assert str(written) in str(info.value)


def test_outline_not_listed(written):
    edit_json(written, lambda d: [row.update(geometry_ref="outlines.geojson") for row in d["images"]])
    refused(written, r.OutlineMissing, "outlines.geojson")


def test_null_feature_column_reads_as_na(written):
    n = pq.read_metadata(written / "cells.parquet").num_rows
    table = pq.read_table(written / "cells.parquet")
    i = table.schema.get_field_index("cell:area")
    pq.write_table(table.set_column(i, "cell:area", pa.nulls(n)), written / "cells.parquet")
    reseal(written)
    y = cs.read(written)
    assert np.isnan(y.measurements[:, y.feature_ids.index("cell:area")]).all()


def test_int64_integer_column_from_another_writer(tmp_path):
    x = cs.example(n_cells=10)
    path = cs.write(x, tmp_path / "o")
    cells = pq.read_table(path / "cells.parquet")
    extra = pa.array(list(range(10)), pa.int64())
    pq.write_table(cells.add_column(3, "n_px", extra), path / "cells.parquet")
    edit_json(path, lambda d: d["column_types"]["cells"].insert(3, {"name": "n_px", "type": "integer"}))
    y = cs.read(path)
    assert str(y.cells["n_px"].dtype) == "Int32" and y.cells["n_px"].tolist() == list(range(10))


def test_warnings_not_raised_for_listed_outlines(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "o.geojson").write_text('{"type": "FeatureCollection", "features": []}')
    x = cs.example(n_cells=10)
    x = x.replace(images=x.images.assign(geometry_ref="o.geojson"), source_dir=src)
    path = cs.write(x, tmp_path / "out")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cs.read(path)


def test_changed_file_that_no_longer_decodes_is_refused_for_its_hash(written):
    """The data file is hashed while it is decoded; a mismatch explains the decoding error and wins."""
    (written / "cells.parquet").write_bytes(b"PAR1 this is not parquet PAR1")
    refused(written, r.ChecksumMismatch, "cells.parquet")


def with_corrupt_feature_page(tmp_path):
    """A directory whose cells.parquet has 180 bytes of garbage in a feature column's data page
    (footer intact; the manifest not resealed)."""
    path = cs.write(cs.example(n_cells=3000, n_features=40), tmp_path / "obj")
    data = bytearray((path / "cells.parquet").read_bytes())
    meta = pq.ParquetFile(path / "cells.parquet").metadata
    page = meta.row_group(0).column(meta.num_columns - 5).data_page_offset
    data[page + 20:page + 200] = b"\xff" * 180
    (path / "cells.parquet").write_bytes(bytes(data))
    return path


def test_undecodable_feature_pages_refused_from_the_decoding_thread(tmp_path):
    """The matrix decodes in a thread while the cells are checked: a corrupt data page of a feature
    column (manifest resealed) still gives UndecodableData naming the file."""
    path = with_corrupt_feature_page(tmp_path)
    reseal(path)
    refused(path, r.UndecodableData, "cells.parquet")


def test_changed_feature_pages_refused_by_the_manifest_first(tmp_path):
    """Same corruption without resealing: the manifest mismatch is what the reader reports."""
    refused(with_corrupt_feature_page(tmp_path), r.ChecksumMismatch, "cells.parquet")


UNREADABLE_CHILD = """
import errno, json, os, sys
import cellspec_sc as cs
from cellspec_sc.cohort import CohortError
path, denied = sys.argv[1], sys.argv[2]

def deny(event, args):  # as an EACCES would (root cannot be refused a read by permissions)
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)) and os.fspath(args[0]).endswith(denied):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(args[0]))

sys.addaudithook(deny)
try:
    cs.read(path)
except cs.CellspecError as err:
    print(json.dumps({"type": type(err).__name__, "file": err.file, "message": str(err)}))
"""


@pytest.mark.parametrize("denied", ["cells.parquet", "MANIFEST.sha256"])  # cellspec.json: io/test_permissions.py
def test_unreadable_file_refused_naming_it(written, denied):
    """A file that cannot be opened (EACCES, raised by an audit hook on Python's open) gives
    UnreadableFile naming that file, not an OSError from deep inside."""
    import json
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", UNREADABLE_CHILD, str(written), denied], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    assert got["type"] == "UnreadableFile" and got["file"] == denied, got
    assert "Permission denied" in got["message"] and r.UnreadableFile.rule in got["message"]
