"""`cellspec import` end to end, the shared reader helpers, and the generated tables of docs/readers.md."""

from __future__ import annotations

import pytest

import cellspec_sc as cs
from cellspec_sc.cli.main import main
from cellspec_sc.docgen import _readers as docs
from cellspec_sc.readers._features import FeatureSpec, build_dictionary
from cellspec_sc.readers._table import normalise_header, other_name
from exports import DATA


def test_import_qupath_writes_a_valid_directory(tmp_path, capsys):
    out = tmp_path / "q"
    code = main(["import", "qupath", str(DATA / "qupath" / "v05_channel_first.tsv"), str(out), "--pixel-size", "0.325",
                 "--marker", "CD3=CD3e", "--sample-id", "tonsil-01"])
    assert code == 0
    assert "4 cells, 23 features" in capsys.readouterr().out
    x = cs.read(out)
    assert x.equals(cs.read_qupath(DATA / "qupath" / "v05_channel_first.tsv", pixel_size=0.325,
                                   marker_map={"CD3": "CD3e"}, sample_id="tonsil-01").replace(
        provenance=x.provenance))
    assert "cell:CD3e:mean" in x.feature_ids
    assert set(x.cells["sample_id"]) == {"tonsil-01"}
    assert main(["validate", str(out)]) == 0


def test_import_mcmicro_with_image_and_markers(tmp_path):
    out = tmp_path / "m"
    mc = DATA / "mcmicro"
    code = main(["import", "mcmicro", str(mc / "exemplar-001--unmicst_cell.csv"), str(out),
                 "--image", str(mc / "exemplar-001.ome.xml"), "--markers", str(mc / "markers.csv"), "--format", "tsv"])
    assert code == 0
    x = cs.read(out)
    assert x.images["width_px"].tolist() == [64]
    assert x.channels["marker"].tolist() == ["DNA_1", "AF488", "CD3", "CD8a"]


def test_refused_input_exits_2_with_the_reason(tmp_path, capsys):
    code = main(["import", "mcmicro", str(DATA / "mcmicro" / "exemplar-001--unmicst_cell.csv"), str(tmp_path / "m")])
    assert code == 2
    assert "--pixel-size" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
    assert main(["import", "qupath", str(DATA / "qupath" / "v04_cell_detection.tsv"), str(tmp_path / "q"),
                 "--pixel-size", "0.5", "--marker", "CD3"]) == 2


def test_normalise_header_reads_every_micro_sign_the_same():
    spellings = ["Cell: Area \u00b5m^2", "Cell: Area \u03bcm^2", "Cell: Area \u00c2\u00b5m^2", "Cell: Area um^2",
                 "Cell:  Area   um^2"]
    assert {normalise_header(s) for s in spellings} == {"Cell: Area um^2"}
    assert other_name("Subcellular: Channel 2: Num spots") == "subcellular_channel_2_num_spots"


def test_dictionary_keeps_colliding_and_out_of_vocabulary_features_as_other():
    specs = [FeatureSpec("shape", "area", "um2", "Cell: Area", "cell"),
             FeatureSpec("shape", "area", "um2", "Cell: Area \u00b5m^2", "cell"),
             FeatureSpec("shape", "roundness", "1", "Cell: Roundness", "cell"),
             FeatureSpec("intensity", "mean", "a.u.", "Nucleus: CD3: Mean", "nucleolus", "CD3"),
             FeatureSpec.other("Cell: Area \u00b5m^2")]
    d, _ = build_dictionary(specs)
    assert d["feature_id"].tolist() == ["cell:area", "other:cell_area_um_2", "other:cell_roundness",
                                        "other:nucleus_cd3_mean", "other:cell_area_um_2_2"]
    assert d["kind"].tolist() == ["shape", "other", "other", "other", "other"]
    assert d["source_name"].tolist()[1] == "Cell: Area \u00b5m^2"
    assert "marker_source" not in d


def test_docs_tables_are_generated_from_the_readers():
    on_disk = docs.DOC.read_text(encoding="utf-8")
    assert on_disk == docs.render_document(on_disk), "docs/readers.md is stale: run `python -m cellspec_sc.docgen`"
    assert "| `Nucleus: CD3: Mean` | intensity | `nucleus:CD3:mean` | a.u. |" in on_disk


@pytest.mark.parametrize("name", ["read_qupath", "read_mcmicro", "read_steinbock"])
def test_readers_are_public(name):
    assert callable(getattr(cs, name))
    assert name in cs.__all__


IMPORTS = {
    "qupath": [str(DATA / "qupath" / "v05_channel_first.tsv"), "--pixel-size", "0.325"],
    "mcmicro": [str(DATA / "mcmicro" / "exemplar-001--unmicst_cell.csv"), "--pixel-size", "0.65"],
}


@pytest.mark.parametrize("tool", sorted(IMPORTS))
def test_cellspec_import_validates_once(tool, tmp_path, validation_calls):
    source, *options = IMPORTS[tool]
    assert main(["import", tool, source, str(tmp_path / "out"), *options]) == 0
    assert validation_calls == ["CellSpec"]  # the reader leaves it to the command, the writer reuses the report
    validation_calls.clear()
    reader = getattr(cs, f"read_{tool}")
    reader(source, pixel_size=float(options[-1]))
    assert validation_calls == ["CellSpec"]  # a read on its own validates its object once too
