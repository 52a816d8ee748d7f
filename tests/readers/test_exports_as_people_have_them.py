"""Exports as people really have them, each on a minimal file the test writes."""

from __future__ import annotations

import string
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cellspec_sc as cs
from cellspec_sc.cli.main import main
from cellspec_sc.errors import InputError
from cellspec_sc.readers import ReaderWarning

QUPATH_HEAD = ["Image", "Object ID", "Object type", "Centroid X µm", "Centroid Y µm"]


def write_tsv(path: Path, header: list[str], rows: list[list[str]], encoding: str = "utf-8") -> Path:
    path.write_bytes(("\n".join("\t".join(r) for r in [header, *rows]) + "\n").encode(encoding))
    return path


def cell_row(i: int, *values: str, kind: str = "Cell") -> list[str]:
    return ["img", f"c{i}", kind, f"{10 + i}.5", "2.25", *values]


# -- 1: colliding names ----------------------------------------------------------------------------
def test_colliding_other_names_import_with_matching_ids_and_statistics(tmp_path):
    heads = ["Num CD3+", "Num CD3-", "Num: CD3 ", "Cell: Area µm^2"]
    path = write_tsv(tmp_path / "collide.tsv", QUPATH_HEAD + heads, [cell_row(0, "1", "2", "3", "40")])
    x = cs.read_qupath(path, pixel_size=0.5)
    d = x.dictionary
    assert d["feature_id"].tolist() == ["other:num_cd3", "other:num_cd3_2", "other:num_cd3_3", "cell:area"]
    assert d["statistic"].tolist()[:3] == ["num_cd3", "num_cd3_2", "num_cd3_3"]
    assert d["source_name"].tolist()[:3] == heads[:3]
    assert x.measurements[0].tolist() == [1.0, 2.0, 3.0, 40.0]
    assert cs.validate(x).ok


def test_cli_imports_colliding_names_instead_of_exiting_1(tmp_path, capsys):
    path = write_tsv(tmp_path / "collide.tsv", QUPATH_HEAD + ["Num CD3+", "Num CD3-"], [cell_row(0, "1", "2")])
    assert main(["import", "qupath", str(path), str(tmp_path / "out"), "--pixel-size", "0.5"]) == 0
    assert cs.read(tmp_path / "out").feature_ids == ["other:num_cd3", "other:num_cd3_2"]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(alphabet="ab +-_:.()", min_size=1, max_size=5).filter(lambda h: h.strip(" :") != ""),
                min_size=2, max_size=8, unique=True))
def test_generated_headers_with_collisions_give_valid_dictionaries(heads):
    heads = [f"Q{h}" for h in heads]  # never a fixed QuPath column; many collide after normalisation
    with tempfile.TemporaryDirectory() as tmp:
        path = write_tsv(Path(tmp) / "gen.tsv", QUPATH_HEAD + heads,
                         [cell_row(0, *[str(i) for i in range(len(heads))])])
        x = cs.read_qupath(path, pixel_size=1.0)
    assert cs.validate(x).ok
    assert len(set(x.feature_ids)) == len(heads)
    other = x.dictionary[x.dictionary["kind"] == "other"]
    assert (other["feature_id"] == "other:" + other["statistic"]).all()
    assert x.measurements[0].tolist() == [float(i) for i in range(len(heads))]


# -- 2: markers.csv that matches nothing or part -----------------------------------------------------
def mcquant(tmp_path: Path, markers: list[str]) -> tuple[Path, Path]:
    table = tmp_path / "img--unmicst_cell.csv"
    table.write_text("CellID,DNA,CD3,CD8,X_centroid,Y_centroid,Area\n1,5,6,7,10,20,30\n2,1,2,3,11,21,31\n")
    csv = tmp_path / "markers.csv"
    csv.write_text("channel_number,marker_name\n" + "".join(f"{i + 1},{m}\n" for i, m in enumerate(markers)))
    return table, csv


def test_markers_csv_matching_nothing_warns_and_strict_refuses(tmp_path):
    table, csv = mcquant(tmp_path, ["Ki67", "PD1"])
    with pytest.warns(ReaderWarning, match=r"markers.csv: names none of the marker columns .*DNA, CD3, CD8"):
        x = cs.read_mcmicro(table, pixel_size=1.0, markers_csv=csv)
    assert x.feature_ids[:3] == ["other:dna", "other:cd3", "other:cd8"]
    with pytest.raises(InputError, match="names none of the marker columns"):
        cs.read_mcmicro(table, pixel_size=1.0, markers_csv=csv, strict=True)


def test_markers_csv_matching_part_names_the_columns_left_out(tmp_path):
    table, csv = mcquant(tmp_path, ["DNA", "CD3", "FOXP3"])
    with pytest.warns(ReaderWarning, match=r"column\(s\) 'CD8' of the table are not in markers.csv.*'FOXP3' without"):
        x = cs.read_mcmicro(table, pixel_size=1.0, markers_csv=csv)
    assert x.feature_ids[:3] == ["cell:DNA:mean", "cell:CD3:mean", "other:cd8"]


def test_markers_csv_matching_every_column_is_silent(tmp_path):
    table, csv = mcquant(tmp_path, ["DNA", "CD3", "CD8"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReaderWarning)
        assert cs.read_mcmicro(table, pixel_size=1.0, markers_csv=csv).feature_ids[:3] == [
            "cell:DNA:mean", "cell:CD3:mean", "cell:CD8:mean"]


# -- 3: text in rows the reader skips ------------------------------------------------------------------
def test_text_in_a_skipped_annotation_row_does_not_refuse_the_file(tmp_path):
    rows = [cell_row(0, "1.5"), ["img", "a1", "Annotation", "s", "3", "n/a"], cell_row(2, "NaN")]
    path = write_tsv(tmp_path / "mixed.tsv", QUPATH_HEAD + ["Cell: CD3: Mean"], rows)
    x = cs.read_qupath(path, pixel_size=0.5)
    assert x.cells["cell_id"].tolist() == ["c0", "c2"]
    assert x.cells["x"].tolist() == [10.5, 12.5]
    assert x.measurements[0, 0] == 1.5 and np.isnan(x.measurements[1, 0])
    assert x.provenance["counts"]["rows_read"] == 3 and x.provenance["counts"]["na_converted"] == 1


def test_only_annotations_with_text_say_no_cell_rows(tmp_path):
    rows = [["img", "a1", "Annotation", "s", "3", "n/a"]]
    path = write_tsv(tmp_path / "annotations.tsv", QUPATH_HEAD + ["Cell: CD3: Mean"], rows)
    with pytest.raises(InputError, match=r"no rows with Object type in \['Cell', 'Detection'\] \(found: Annotation\)"):
        cs.read_qupath(path, pixel_size=0.5)


def test_text_in_a_kept_row_still_names_line_and_column(tmp_path):
    rows = [cell_row(0, "1.5"), ["img", "a1", "Annotation", "s", "3", "n/a"], cell_row(2, "high")]
    path = write_tsv(tmp_path / "bad.tsv", QUPATH_HEAD + ["Cell: CD3: Mean"], rows)
    with pytest.raises(InputError, match=r"bad.tsv: line 4, column 'Cell: CD3: Mean': cannot parse 'high'"):
        cs.read_qupath(path, pixel_size=0.5)


# -- 4: refusals show every column ------------------------------------------------------------------
def test_not_a_table_of_this_tool_lists_every_column(tmp_path):
    names = [f"col{i}" for i in range(12)] + ["Centroid_X_wrong"]
    path = tmp_path / "other.csv"
    path.write_text(",".join(names) + "\n" + ",".join("1" for _ in names) + "\n")
    with pytest.raises(InputError) as err:
        cs.read_mcmicro(path, pixel_size=1.0)
    assert "found 13 column(s)" in str(err.value)
    assert all(n in str(err.value) for n in names)


# -- 5: Latin-1 exports and unescaped quotes ----------------------------------------------------------
def test_latin1_export_is_read_with_a_warning_naming_the_encoding(tmp_path):
    path = write_tsv(tmp_path / "win.tsv", QUPATH_HEAD + ["Cell: Area µm^2", "Nucleus: CD3: Mean"],
                     [cell_row(0, "40", "1.5"), ["imgé", "c1", "Cell", "1", "2", "41", "2.5"]], encoding="latin-1")
    with pytest.warns(ReaderWarning, match=r"win.tsv: line 1: byte 0xb5 is not UTF-8; reading the file as cp1252"):
        x = cs.read_qupath(path, pixel_size=0.5)
    assert x.feature_ids == ["cell:area", "nucleus:CD3:mean"]
    assert x.dictionary["source_name"].tolist()[0] == "Cell: Area µm^2"
    assert x.cells["image_id"].tolist() == ["img", "imgé"]
    assert x.cells["area"].tolist() == [40.0, 41.0]


def test_encoding_argument_overrides_detection(tmp_path):
    path = write_tsv(tmp_path / "win.tsv", QUPATH_HEAD + ["Cell: Area µm^2"], [cell_row(0, "40")], encoding="latin-1")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReaderWarning)
        assert cs.read_qupath(path, pixel_size=0.5, encoding="latin-1").feature_ids == ["cell:area"]
    with pytest.raises(InputError, match="encoding='klingon' is not an encoding"):
        cs.read_qupath(path, pixel_size=0.5, encoding="klingon")


def test_unescaped_quotes_are_named_as_the_cause_of_duplicates(tmp_path):
    path = tmp_path / "quotes.tsv"
    path.write_text("\t".join(QUPATH_HEAD + ['"HER2" Intensity', "HER2 Intensity"]) + "\n"
                    + "\t".join(cell_row(0, "1", "2")) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"duplicated column name\(s\) 'HER2 Intensity'; the header writes them "
                                         r"differently \('\"HER2\" Intensity' and 'HER2 Intensity'\): unescaped quote"):
        cs.read_qupath(path, pixel_size=0.5)


# -- 6: nf-core file names ------------------------------------------------------------------------------
def test_nf_core_name_splits_image_and_mask_and_maps_the_mask_to_cell(tmp_path):
    path = tmp_path / "TEST1_mask_TEST1.csv"
    path.write_text("CellID,CD3,X_centroid,Y_centroid,Area\n1,5,10,20,30\n")
    x = cs.read_mcmicro(path, pixel_size=0.5)
    assert x.cells["image_id"].tolist() == ["TEST1"]
    assert x.provenance["parameters"]["mask"] == "mask_TEST1"
    assert x.feature_ids == ["cell:CD3:mean", "cell:area"]
    assert x.cells["area"].tolist() == [7.5]  # a whole-cell mask: cells.area is filled


def test_mcquant_alone_names_image_and_known_mask(tmp_path):
    path = tmp_path / "core_7_nuclei.csv"
    path.write_text("CellID,CD3,X_centroid,Y_centroid,Area\n1,5,10,20,30\n")
    x = cs.read_mcmicro(path, pixel_size=0.5)
    assert x.cells["image_id"].tolist() == ["core_7"]
    assert x.feature_ids == ["nucleus:CD3:mean", "nucleus:area"]


# -- 7: annotations are not cells -------------------------------------------------------------------------
def test_annotation_rows_kept_only_on_request_and_then_with_a_warning(tmp_path):
    rows = [cell_row(0, "40"), ["img", "a1", "Annotation", "500", "600", "250000"]]
    path = write_tsv(tmp_path / "both.tsv", QUPATH_HEAD + ["Cell: Area µm^2"], rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReaderWarning)
        assert cs.read_qupath(path, pixel_size=0.5).n_cells == 1  # default: cells and detections only
    with pytest.warns(ReaderWarning, match=r"1 'Annotation' row\(s\) kept as cells .* not cells"):
        x = cs.read_qupath(path, pixel_size=0.5, object_types=None)
    assert x.cells["object_type"].tolist() == ["Cell", "Annotation"]
    with pytest.warns(ReaderWarning, match="'Annotation'"):
        cs.read_qupath(path, pixel_size=0.5, object_types=("Annotation",))


# -- 8: the oldest mcquant layout -------------------------------------------------------------------------
def test_oldest_mcquant_layout_reads_x_position_as_the_row(tmp_path):
    path = tmp_path / "old_cellMask.csv"
    path.write_text("CellID,CD3,X_position,Y_position,Area\n1,5,20,10,30\n2,6,3.5,7,31\n")
    x = cs.read_mcmicro(path, pixel_size=2.0)
    # X_position is regionprops centroid[0], the row: y; Y_position the column: x (pixel centres at i + 0.5)
    assert x.cells["x_px"].tolist() == [10.5, 7.5] and x.cells["y_px"].tolist() == [20.5, 4.0]
    assert x.cells["x"].tolist() == [21.0, 15.0] and x.cells["y"].tolist() == [41.0, 8.0]
    assert x.provenance["parameters"]["centroids"] == ["Y_position", "X_position"]
    assert x.feature_ids == ["cell:CD3:mean", "cell:area"]


# -- 9: misspelt pixel_size keys --------------------------------------------------------------------------
def test_pixel_size_dict_with_misspelt_key_names_the_unused_key(tmp_path):
    path = write_tsv(tmp_path / "one.tsv", QUPATH_HEAD, [cell_row(0)])
    with pytest.raises(InputError, match=r"no entry for image\(s\) 'img'; unused key\(s\) 'imh' match no image"):
        cs.read_qupath(path, pixel_size={"imh": 0.5})


# -- 10 and MUST stops: messages say file, line, column and what to pass ---------------------------------------
def test_cli_target_exists_names_the_cli_flag_before_reading(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    missing = tmp_path / "does-not-exist.tsv"  # never opened: the target is checked first
    assert main(["import", "qupath", str(missing), str(out), "--pixel-size", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "already exists (a directory); pass --overwrite to replace it" in err and "overwrite=True" not in err


def test_pixel_centroids_without_pixel_size_name_file_line_column_and_argument(tmp_path):
    path = write_tsv(tmp_path / "px.tsv", ["Image", "Object ID", "Centroid X px", "Centroid Y px"],
                     [["img", "c0", "3", "4"]])
    with pytest.raises(InputError, match=r"px.tsv: line 1, column 'Centroid X px': .*pixel_size=0.5.*--pixel-size 0.5"):
        cs.read_qupath(path)


def test_disagreeing_centroids_name_file_line_columns_and_pixel_size(tmp_path):
    head = ["Image", "Object ID", "Centroid X µm", "Centroid Y µm", "Centroid X px", "Centroid Y px"]
    path = write_tsv(tmp_path / "both.tsv", head, [["img", "c0", "5", "5", "10", "10"],
                                                    ["img", "c1", "9", "5", "10", "10"]])
    with pytest.raises(InputError, match=r"both.tsv: line 3, column 'Centroid X µm': 9.0 disagrees with column "
                                         r"'Centroid X px' = 10.0 .* pixel_size=0.9 or --pixel-size 0.9"):
        cs.read_qupath(path, pixel_size=0.5)


def test_adapter_versions_were_bumped_for_changed_output():
    from cellspec_sc.readers.mcmicro import _plan as mcmicro
    from cellspec_sc.readers.qupath import _plan as qupath
    from cellspec_sc.readers.steinbock import _plan as steinbock

    assert (qupath.ADAPTER_VERSION, mcmicro.ADAPTER_VERSION, steinbock.ADAPTER_VERSION) == ("1.3.0", "1.4.0", "1.3.0")
    assert set(string.digits + ".") >= set(qupath.ADAPTER_VERSION)
