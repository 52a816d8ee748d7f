"""Crafted numbers, nesting and paths end in a CellspecError naming the file and the rule, never in a raw
ValueError, RecursionError or OSError, and nothing is left half-written."""

from __future__ import annotations

import json
import os

import pytest

import cellspec_sc as cs
from cellspec_sc.bridges.anndata import read_h5ad, write_h5ad
from cellspec_sc.errors import CellspecError
from dirhelpers import reseal


def test_a_spec_version_of_thousands_of_digits_is_refused_as_unsupported(tmp_path):
    d = cs.write(cs.example(n_cells=5), tmp_path / "d")
    document = json.loads((d / "cellspec.json").read_text())
    document["spec_version"] = "1." + "9" * 5000 + ".0"
    (d / "cellspec.json").write_text(json.dumps(document))
    reseal(d)
    with pytest.raises(CellspecError, match="spec_version"):
        cs.read(d)


def test_deeply_nested_provenance_in_an_h5ad_record_is_refused(tmp_path):
    import anndata as ad

    path = write_h5ad(cs.example(n_cells=5), tmp_path / "a.h5ad")
    adata = ad.read_h5ad(path)
    adata.uns["cellspec"]["provenance"] = "[" * 100_000 + "]" * 100_000
    adata.write_h5ad(path)
    with pytest.raises(CellspecError, match="provenance"):
        read_h5ad(path)
    with pytest.raises(CellspecError, match="provenance.*nested"):  # also when the change is allowed
        cs.from_anndata(ad.read_h5ad(path), allow_modified=True)


@pytest.mark.parametrize("name", ["n" * 256, "/".join(["d" * 200] * 25)])
def test_a_target_name_or_path_too_long_is_refused_before_anything_is_written(tmp_path, name):
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(CellspecError, match="too long"):
        cs.write(cs.example(n_cells=5), tmp_path / name)
    assert sorted(os.listdir(tmp_path)) == before


def test_a_target_that_is_not_valid_text_is_refused_before_anything_is_written(tmp_path):
    target = os.path.join(os.fsdecode(bytes(tmp_path)), os.fsdecode(b"run-\xff"))
    with pytest.raises(CellspecError, match="UTF-8"):
        cs.write(cs.example(n_cells=5), target)
    assert os.listdir(tmp_path) == []
