"""A change to what to_anndata wrote is told apart from an analysis result: ids, coordinates, spec columns,
obsm['spatial'] and the record's own metadata (images, channels, provenance, the dictionary) changed since are
refused naming the column or field, unless the caller says the change is intended (``allow_modified=True`` or the
names), which a history step records; new analysis columns stay welcome; a changed X is described by what
changed, not by a guess at its cause; a spec_version this package cannot read is refused as by the directory
reader."""

from __future__ import annotations

import json
import os

import anndata as ad
import numpy as np
import pandas as pd
import pytest

import cellspec_sc as cs
import cellspec_sc.model._provenance as provenance
from cellspec_sc.bridges.anndata import read_anndata_zarr, read_h5ad, write_anndata_zarr, write_h5ad
from cellspec_sc.errors import CellspecError


@pytest.fixture
def x():
    return cs.example(n_cells=60, seed=3)


def history_details(y) -> dict:
    step = y.provenance["history"][-1]
    assert step["step"] == "from_anndata"
    return step["details"]


def test_a_deleted_coordinate_chunk_is_refused_naming_the_column(tmp_path, x):
    store = write_anndata_zarr(x, tmp_path / "a.zarr")
    os.remove(store / "obs" / "x" / "c" / "0")  # every cell's x reads as the fill value 0.0
    with pytest.raises(CellspecError, match=r"'x'.*allow_modified"):
        read_anndata_zarr(store)


def test_deleted_classification_codes_are_refused_naming_the_column(tmp_path, x):
    store = write_anndata_zarr(x, tmp_path / "a.zarr")
    os.remove(store / "obs" / "classification" / "codes" / "c" / "0")
    with pytest.raises(CellspecError, match=r"'classification'"):
        read_anndata_zarr(store)


@pytest.mark.parametrize(("field", "edit"), [
    ("images", lambda t: t.replace("0.5", "5.0", 1)),
    ("channels", lambda t: t.replace("CD3e", "CD3X", 1)),
    ("provenance", lambda t: t.replace("cellspec_sc", "someone_else", 1)),
])
def test_edited_record_metadata_is_refused_naming_the_field(tmp_path, x, field, edit):
    adata = cs.to_anndata(x)
    before = adata.uns["cellspec"][field]
    adata.uns["cellspec"][field] = edit(before)
    assert adata.uns["cellspec"][field] != before
    with pytest.raises(CellspecError, match=f"{field}.*allow_modified"):
        cs.from_anndata(adata)
    y = cs.from_anndata(adata, allow_modified=True)
    assert field in history_details(y)["record_fields_changed"]
    path = write_h5ad(x, tmp_path / "a.h5ad")
    stored = ad.read_h5ad(path)
    stored.uns["cellspec"][field] = edit(stored.uns["cellspec"][field])
    stored.write_h5ad(path)
    with pytest.raises(CellspecError, match=field):
        read_h5ad(path)


def test_changed_spatial_coordinates_are_refused_and_when_allowed_recorded(x):
    adata = cs.to_anndata(x)
    adata.obsm["spatial"] = adata.obsm["spatial"] * 2
    with pytest.raises(CellspecError, match=r"obsm\['spatial'\]"):
        cs.from_anndata(adata)
    y = cs.from_anndata(adata, allow_modified=["obsm['spatial']"])
    assert history_details(y)["record_fields_changed"] == ["obsm['spatial']"]
    assert y.cells["x"].equals(x.cells["x"])  # x and y come from obs, as written


def test_an_edited_spec_column_is_refused_and_allowed_by_name_or_at_all(x, monkeypatch):
    # one clock reading for every history step, so that the two reads below may fall in different seconds
    monkeypatch.setattr(provenance, "utc_now", lambda: "2026-01-01T00:00:00Z")
    adata = cs.to_anndata(x)
    adata.obs["classification"] = adata.obs["classification"].str.lower()
    adata.obs["x"] = adata.obs["x"] + 1.0
    with pytest.raises(CellspecError, match=r"'classification', 'x'|'x', 'classification'"):
        cs.from_anndata(adata)
    with pytest.raises(CellspecError, match=r"\['x'\]"):
        cs.from_anndata(adata, allow_modified=["classification"])
    y = cs.from_anndata(adata, allow_modified=["classification", "x"])
    assert sorted(history_details(y)["cells_columns_changed"]) == ["classification", "x"]
    assert (y.cells["x"] == x.cells["x"] + 1.0).all()
    assert cs.from_anndata(adata, allow_modified=True).equals(y)


def test_an_edited_dictionary_column_is_refused(x):
    adata = cs.to_anndata(x)
    adata.var["unit"] = adata.var["unit"].astype(str).str.upper()
    with pytest.raises(CellspecError, match=r"var.*'unit'"):
        cs.from_anndata(adata)


def test_new_analysis_columns_need_no_argument(x):
    adata = cs.to_anndata(x)
    adata.obs["leiden"] = pd.Categorical(["0", "1"] * 30)
    y = cs.from_anndata(adata)
    assert history_details(y) == {"cells_columns_added": ["leiden"]}


def test_a_changed_x_is_described_by_the_rows_and_columns_that_changed(x):
    adata = cs.to_anndata(x)
    row = int(np.flatnonzero(np.isin(adata.obs_names, adata.uns["cellspec"]["measurements_sample"]["obs_names"]))[0])
    adata.X[row, 2] += 1.0
    with pytest.raises(CellspecError) as refused:
        cs.from_anndata(adata)
    message = str(refused.value)
    assert "log1p" not in message and "scale" not in message
    assert str(adata.obs_names[row]) in message and str(adata.var_names[2]) in message


def test_a_spec_version_this_package_cannot_read_is_refused(x):
    adata = cs.to_anndata(x)
    adata.uns["cellspec"]["spec_version"] = "9.0.0"
    with pytest.raises(CellspecError, match=r"9\.0\.0|major version 9"):
        cs.from_anndata(adata)


def test_the_record_is_version_1_2_and_a_1_1_record_still_reads(x):
    adata = cs.to_anndata(x)
    assert adata.uns["cellspec"]["format_version"] == "1.2"
    meta = json.loads(adata.uns["cellspec"]["meta"])
    for key in ("record_fingerprints", "spatial_fingerprint"):
        meta.pop(key)
    adata.uns["cellspec"]["meta"] = json.dumps(meta)
    del adata.uns["cellspec"]["meta_fingerprint"]
    adata.uns["cellspec"]["format_version"] = "1.1"
    assert cs.from_anndata(adata).equals(x)
