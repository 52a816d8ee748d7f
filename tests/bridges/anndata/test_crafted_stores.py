"""Values of a stored AnnData that size work are bounded by the data present: a crafted fingerprint part count, or
array shapes that claim far more than the store's bytes hold, are refused (exit 2, naming the rule) in a child
whose memory is bounded, not read until the machine gives out."""

from __future__ import annotations

import json
from pathlib import Path

import anndata as ad
import pytest

import cellspec_sc as cs
from bounded import cellspec_bounded
from cellspec_sc.bridges.anndata import write_anndata_zarr, write_h5ad
from cellspec_sc.bridges.anndata._record import text_fingerprint
from cellspec_sc.errors import InputError


def with_fingerprint(path: Path, tag: str) -> Path:
    adata = ad.read_h5ad(path)
    meta = json.loads(adata.uns["cellspec"]["meta"])
    meta["measurements_fingerprint"] = f"{tag}:{'0' * 32}"
    adata.uns["cellspec"]["meta"] = json.dumps(meta)
    adata.uns["cellspec"]["meta_fingerprint"] = text_fingerprint(adata.uns["cellspec"]["meta"])  # crafted whole
    adata.write_h5ad(path)
    return path


@pytest.mark.parametrize("parts", [10**7, 10**9])
def test_a_crafted_fingerprint_part_count_is_refused_at_once(tmp_path, parts):
    source = with_fingerprint(write_h5ad(cs.example(n_cells=200), tmp_path / "fp.h5ad"), f"xxh3_128x{parts}")
    ended = cellspec_bounded(["convert", str(source), str(tmp_path / "out")], seconds=30)
    assert ended.code == 2, ended.err
    assert f"xxh3_128x{parts}" in ended.err and "log1p" not in ended.err
    assert not (tmp_path / "out").exists()


def claim_rows(store: Path, array: str, rows: int) -> None:
    """The array's own metadata and the root's consolidated copy claim ``rows`` rows."""
    meta = store / array / "zarr.json"
    document = json.loads(meta.read_text())
    document["shape"][0] = rows
    meta.write_text(json.dumps(document))
    root = json.loads((store / "zarr.json").read_text())
    root["consolidated_metadata"]["metadata"][array]["shape"][0] = rows
    (store / "zarr.json").write_text(json.dumps(root))


def test_a_zarr_store_claiming_far_more_rows_than_it_holds_is_refused_before_it_is_allocated(tmp_path):
    store = write_anndata_zarr(cs.example(n_cells=500), tmp_path / "a.zarr")
    claim_rows(store, "X", 10**8)  # 15 GB of fill values from a store of under 1 MB
    ended = cellspec_bounded(["convert", str(store), str(tmp_path / "out")])
    assert ended.code == 2, ended.err
    assert "X" in ended.err and "max_inflation" in ended.err and "MemoryError" not in ended.err


def test_an_h5ad_claiming_far_more_rows_than_it_holds_is_refused_before_it_is_allocated(tmp_path):
    import h5py

    path = write_h5ad(cs.example(n_cells=500), tmp_path / "a.h5ad")
    with h5py.File(path, "r+") as f:
        n_features = f["X"].shape[1]
        del f["X"]
        x = f.create_dataset("X", shape=(10**8, n_features), dtype="f8", chunks=(1000, n_features))
        x.attrs["encoding-type"], x.attrs["encoding-version"] = "array", "0.2.0"
    ended = cellspec_bounded(["convert", str(path), str(tmp_path / "out")])
    assert ended.code == 2, ended.err
    assert "X" in ended.err and "max_inflation" in ended.err and "MemoryError" not in ended.err


def test_a_genuine_store_is_read_and_a_higher_bound_is_an_argument(tmp_path):
    x = cs.example(n_cells=300)
    from cellspec_sc.bridges.anndata import read_anndata_zarr, read_h5ad

    assert read_anndata_zarr(write_anndata_zarr(x, tmp_path / "a.zarr")).equals(x)
    assert read_h5ad(write_h5ad(x, tmp_path / "a.h5ad")).equals(x)
    claim_rows(tmp_path / "a.zarr", "X", 10**6)  # 150 MB claimed from under 1 MB: over the bound
    with pytest.raises(InputError, match="max_inflation=100 ") as refused:
        read_anndata_zarr(tmp_path / "a.zarr")
    assert "'X'" in str(refused.value)
    with pytest.raises(InputError) as read_on:  # a higher bound reads on, to anndata's own refusal of the shape
        read_anndata_zarr(tmp_path / "a.zarr", max_inflation=10_000)
    assert "max_inflation" not in str(read_on.value)
