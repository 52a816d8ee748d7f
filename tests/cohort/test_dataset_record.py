"""cohort.json, the record of a written cohort dataset: what earlier versions wrote still decodes, a newer major
version is refused naming both versions, and a dataset opens only with a record this package reads."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import cellspec_sc as cs
from cellspec_sc.cohort._record import FORMAT, CohortRecord, decode, encode
from cellspec_sc.cohort.example import write_example_cohort

RECORDS = Path(__file__).resolve().parents[1] / "data" / "records"


def stored(name: str) -> dict:
    return json.loads((RECORDS / name).read_text(encoding="utf-8"))


def test_a_version_1_0_record_decodes_to_the_cohort_it_describes():
    """Written by Cohort.write_dataset before the record had a codec (2 directories x 2 images x 6 cells)."""
    record = decode(stored("cohort-1.0.json"), where="dataset")
    assert record.features == "strict" and record.partition_by == ("sample_id",) and record.spec_version == "1.0.0"
    assert [s["directory"] for s in record.sources] == ["slide01", "slide02"]
    assert list(record.tables["dictionary"]["feature_id"]) == ["cell:area", "nucleus:area",
                                                               "other:detection_probability"]
    images = record.tables["images"]
    assert list(images["image_id"]) == ["slide01_img1", "slide01_img2", "slide02_img1", "slide02_img2"]
    assert list(images["directory"]) == ["slide01", "slide01", "slide02", "slide02"]
    assert str(images["width_px"].dtype) == "Int32" and str(images["image_id"].dtype) == "string"
    assert [c["name"] for c in record.column_types][-3:] == list(record.tables["dictionary"]["feature_id"])
    assert record.equals(decode(encode(record), where="dataset"))
    assert encode(record) == stored("cohort-1.0.json")  # and encoding it again writes the same document


def test_what_write_dataset_stores_today_decodes_equal_to_the_record_it_encoded(tmp_path, monkeypatch):
    cohort = cs.open_cohort(write_example_cohort(tmp_path / "slides", 2, n_cells=10, n_features=3))
    import cellspec_sc.cohort._dataset as dataset

    built: list[CohortRecord] = []
    original = dataset.cohort_record
    monkeypatch.setattr(dataset, "cohort_record", lambda *a: built.append(original(*a)) or built[-1])
    out = cohort.write_dataset(tmp_path / "dataset")
    document = json.loads((out / "cohort.json").read_text(encoding="utf-8"))
    assert next(iter(document)) == "cellspec_cohort" and document["cellspec_cohort"] == FORMAT.version
    back = decode(document, where=out)
    assert back.tables["images"].equals(built[0].tables["images"].reset_index(drop=True))
    assert back.equals(decode(encode(built[0]), where=out))


def test_a_newer_major_version_is_refused_naming_both_versions():
    document = {**stored("cohort-1.0.json"), "cellspec_cohort": "2.0"}
    with pytest.raises(cs.FormatError, match=r"dataset/cohort.json: the cohort record is version 2\.0, newer than "
                                             r"the 1\.0 this cellspec_sc reads"):
        decode(document, where="dataset")
    newer_minor = decode({**stored("cohort-1.0.json"), "cellspec_cohort": "1.7"}, where="dataset")
    assert newer_minor.features == "strict"  # a newer minor version adds only what older readers may pass over


def test_a_record_without_a_version_or_a_field_is_refused():
    document = stored("cohort-1.0.json")
    with pytest.raises(cs.FormatError, match="has no cellspec_cohort"):
        decode({k: v for k, v in document.items() if k != "cellspec_cohort"}, where="dataset")
    with pytest.raises(cs.CellspecError, match="lacks sources; not written by write_dataset"):
        decode({k: v for k, v in document.items() if k != "sources"}, where="dataset")
    with pytest.raises(cs.CellspecError, match="not an object"):
        decode([document], where="dataset")


def test_open_cohort_refuses_a_dataset_whose_record_is_of_a_newer_major_version(tmp_path):
    out = cs.open_cohort(write_example_cohort(tmp_path / "slides", 2, n_cells=10)).write_dataset(tmp_path / "ds")
    document = json.loads((out / "cohort.json").read_text(encoding="utf-8"))
    document["cellspec_cohort"] = "2.0"
    _replace_listed(out, "cohort.json", json.dumps(document).encode())
    with pytest.raises(cs.FormatError, match="version 2.0, newer than the 1.0"):
        cs.open_cohort(out)


def _replace_listed(root: Path, name: str, data: bytes) -> None:
    """Rewrite ``name`` and its line in MANIFEST.sha256, and DONE (the digest of the manifest)."""
    (root / name).write_bytes(data)
    manifest = root / "MANIFEST.sha256"
    lines = [f"{hashlib.sha256(data).hexdigest()}  {name}" if line.endswith(f"  {name}") else line
             for line in manifest.read_text(encoding="utf-8").splitlines()]
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "DONE").write_text(hashlib.sha256(manifest.read_bytes()).hexdigest() + "\n", encoding="ascii")
