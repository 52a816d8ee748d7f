"""Each row's image in the one-table exports of several images (HALO, inForm, CellProfiler): taken from the values the
parse grouped its stats by, however the file was cut into pieces; a row without its image refused by line and column;
``image_id=`` naming the one image a column holds."""

from __future__ import annotations

import csv
import io
from pathlib import PureWindowsPath

import numpy as np
import pytest

import cellspec_sc as cs
from cellspec_sc.readers import _table as pieces
from cellspec_sc.readers._table import data_start, line_pieces
from tool_layouts import (
    CELLPROFILER_CELLS,
    HALO_HEAD,
    HALO_ROWS,
    INFORM_HEAD,
    INFORM_ROWS,
    write_cellprofiler,
    write_halo,
    write_inform,
)


def halo_rows(n: int, rng: np.random.Generator) -> list[list[str]]:
    """``n`` rows of the layout's HALO table, images drawn at random (so that every piece meets them in another
    order), object ids counted per image."""
    images = [f"C:\\slides\\tumour {k}.qptiff" for k in (3, 1, 2)]
    counts = dict.fromkeys(images, 0)
    rows = []
    for _ in range(n):
        image = images[rng.integers(len(images))]
        row = list(HALO_ROWS[0])
        row[0], row[3] = image, str(counts[image])
        counts[image] += 1
        rows.append(row)
    return rows


def write_halo_rows(tmp_path, rows: list[list[str]]):
    HALO_ROWS[:], kept = rows, list(HALO_ROWS)
    try:
        return write_halo(tmp_path)
    finally:
        HALO_ROWS[:] = kept


def test_each_rows_image_is_its_image_column_however_the_file_is_cut(tmp_path, monkeypatch):
    path = write_halo_rows(tmp_path, halo_rows(400, np.random.default_rng(5)))
    one = cs.read_halo(path, pixel_size=0.5)
    monkeypatch.setattr(pieces, "PIECE_BYTES", 2000)
    monkeypatch.setattr(pieces, "workers", lambda: 2)
    assert len(line_pieces(path, data_start(path))) > 10
    many = cs.read_halo(path, pixel_size=0.5)
    source = list(csv.DictReader(io.StringIO(path.read_bytes().decode("utf-8-sig"))))  # parsed independently
    expected = [PureWindowsPath(r["Image Location"]).name for r in source]
    assert many.cells["image_id"].tolist() == one.cells["image_id"].tolist() == expected
    assert many.images["image_id"].tolist() == one.images["image_id"].tolist() == list(dict.fromkeys(expected))
    assert len(set(expected)) == 3
    assert many.equals(one.replace(provenance=many.provenance)), many.differences(one)


@pytest.mark.parametrize(("export", "column", "blank"), [
    ("halo", "Image Location", lambda tmp: write_halo_rows(tmp, [HALO_ROWS[0], ["", *HALO_ROWS[1][1:]],
                                                                  HALO_ROWS[2]])),
    ("inform", "Sample Name", lambda tmp: _inform_without_sample(tmp)),
    ("cellprofiler", "ImageNumber", lambda tmp: _cellprofiler_without_image(tmp)),
])
def test_a_row_without_its_image_is_refused_naming_line_and_column(tmp_path, export, column, blank):
    path = blank(tmp_path)
    with pytest.raises(cs.InputError, match=rf"line 3, column '{column}': missing identifier"):
        getattr(cs, f"read_{export}")(path, pixel_size=0.5)


def _inform_without_sample(tmp_path):
    path = write_inform(tmp_path)
    rows = [list(r) for r in INFORM_ROWS]
    rows[1][INFORM_HEAD.index("Sample Name")] = ""
    path.write_text("\n".join("\t".join(r) for r in [INFORM_HEAD, *rows]) + "\n", encoding="utf-8")
    return path


def _cellprofiler_without_image(tmp_path):
    folder = write_cellprofiler(tmp_path)
    lines = CELLPROFILER_CELLS.splitlines()
    lines[2] = lines[2][lines[2].index(","):]  # the second object's ImageNumber left empty
    (folder / "MyExpt_Cells.csv").write_text("\n".join(lines) + "\n")
    return folder


@pytest.mark.parametrize("value", ["C:\\slides\\tumour 1.qptiff", ""])
def test_an_image_id_names_the_one_image_a_column_holds(tmp_path, value):
    rows = [[value, *r[1:]] for r in HALO_ROWS]
    rows[2][3] = "2"  # one image: its object ids distinct
    path = write_halo_rows(tmp_path, rows)
    x = cs.read_halo(path, pixel_size=0.5, image_id="core 7")
    assert x.images["image_id"].tolist() == ["core 7"] and set(x.cells["image_id"]) == {"core 7"}
    assert x.cells["cell_id"].tolist() == [r[3] for r in rows]
    assert HALO_HEAD[0] == "Image Location"


def test_the_groups_a_parse_in_pieces_found_are_the_columns_own_encoding(tmp_path, monkeypatch):
    path = write_halo_rows(tmp_path, halo_rows(300, np.random.default_rng(8)))
    monkeypatch.setattr(pieces, "PIECE_BYTES", 1500)
    monkeypatch.setattr(pieces, "workers", lambda: 2)
    header = pieces.read_header(path, ",", "HALO")
    column = "Image Location"
    text = [column, "Analysis Region", "Algorithm Name"]
    parsed = pieces.stream_columns(header, text=text, numbers=[], matrix=["XMin"], group=column)
    assert len(line_pieces(path, data_start(path))) > 10 and parsed.group == column
    codes, values = parsed.groups(column)  # merged from every piece's own codes
    whole_codes, whole_values = pieces.group_codes(parsed.arrow(column), parsed.n)  # the whole column at once
    assert values == whole_values and codes.tolist() == whole_codes.tolist()
    source = [r[column] for r in csv.DictReader(io.StringIO(path.read_bytes().decode("utf-8-sig")))]
    assert [values[c] for c in codes] == source
