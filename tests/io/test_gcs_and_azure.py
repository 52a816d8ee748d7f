"""Cellspec directories on ``gs://`` and ``az://``, against Google Cloud Storage's and Azure Blob Storage's APIs on
127.0.0.1 (gcp-storage-emulator through gcsfs, Azurite through adlfs: the ``gcs`` and ``azure`` fixtures,
tests/stores.py): the round trip, the write protocol, the overwrite rules, the refusals and the commands, as
tests/io/test_object_storage.py proves them on S3."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cellspec_sc as cs
from cellspec_sc.cli.main import main
from cellspec_sc.io import UPLOAD_CLAIM, AccessDenied, BucketNotFound, TargetExists
from cellspec_sc.io._refusals import ChecksumMismatch, IncompleteDirectory
from stores import KILLED_WRITER, assert_one_of_two_writers_wins

ROOT = Path(__file__).resolve().parents[2]
DIRECTORY_FILES = ["DONE", "MANIFEST.sha256", "cells.parquet", "cellspec.json"]


@pytest.fixture(params=["gcs", "azure"])
def store(request):
    return request.getfixturevalue(request.param)


def new_prefix(store, name: str = "run1") -> tuple[str, str, str]:
    """(URL, bucket, key) of a prefix in a new bucket."""
    bucket = store.bucket()
    return f"{store.scheme}://{bucket}/{name}", bucket, name


def names_below(store, bucket: str, key: str) -> list[str]:
    return [k.removeprefix(key + "/") for k in store.keys(bucket, key + "/")]


@pytest.mark.parametrize("format", ["parquet", "tsv"])
def test_a_directory_written_to_the_store_reads_back_bit_for_bit_as_from_disk(store, tmp_path, format):
    x = cs.example(3, adjacency=True)
    url, bucket, key = new_prefix(store)
    assert cs.write(x, url, format=format, storage_options=store.options) == url
    local = cs.write(x, tmp_path / "run1", format=format)
    from_bucket = cs.read(url, storage_options=store.options)
    assert from_bucket.equals(cs.read(local))
    assert np.array_equal(from_bucket.measurements, cs.read(local).measurements, equal_nan=True)
    if format == "parquet":
        assert from_bucket.equals(x)
        assert cs.read(url, lazy=True, storage_options=store.options).equals(x)  # row groups fetched on compute
    assert names_below(store, bucket, key) == sorted(p.name for p in local.iterdir())  # no claim left
    for name in ("MANIFEST.sha256", "DONE", "cellspec.json"):
        assert store.get(bucket, f"{key}/{name}") == (local / name).read_bytes()


def test_a_prefix_without_done_or_with_a_changed_byte_is_refused(store):
    url, bucket, key = new_prefix(store)
    cs.write(cs.example(), url, storage_options=store.options)
    data = bytearray(store.get(bucket, f"{key}/cells.parquet"))
    data[len(data) // 2] ^= 0xFF
    store.put(bucket, f"{key}/cells.parquet", bytes(data))
    with pytest.raises(ChecksumMismatch) as caught:
        cs.read(url, storage_options=store.options)
    assert caught.value.file == "cells.parquet" and caught.value.directory == url
    store.delete(bucket, f"{key}/DONE")
    with pytest.raises(IncompleteDirectory) as caught:
        cs.read(url, storage_options=store.options)
    assert caught.value.file == "DONE"


def test_overwrite_false_is_refused_and_overwrite_true_removes_only_what_the_directory_listed(store):
    url, bucket, key = new_prefix(store)
    first = cs.example(1, adjacency=True)
    cs.write(first, url, storage_options=store.options)
    before = {k: store.get(bucket, k) for k in store.keys(bucket)}
    with pytest.raises(TargetExists, match="DONE is present"):
        cs.write(cs.example(2), url, storage_options=store.options)
    assert {k: store.get(bucket, k) for k in store.keys(bucket)} == before
    replacement = cs.example(2)
    cs.write(replacement, url, storage_options=store.options, overwrite=True)
    assert names_below(store, bucket, key) == DIRECTORY_FILES  # the old adjacency.parquet is gone
    assert cs.read(url, storage_options=store.options).equals(replacement)
    store.put(bucket, f"{key}/notes.txt", b"mine")
    with pytest.raises(TargetExists, match="not a complete cellspec directory"):
        cs.write(first, url, storage_options=store.options, overwrite=True)
    assert names_below(store, bucket, key) == [*DIRECTORY_FILES, "notes.txt"]


def test_an_upload_killed_midway_is_refused_by_readers_and_cleaned_by_the_next_overwrite(store):
    url, bucket, key = new_prefix(store)
    writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, url, json.dumps(store.options)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert writer.stdout.readline().startswith("uploaded cells.parquet")
    finally:
        writer.kill()
        writer.wait(30)
    assert names_below(store, bucket, key) == [UPLOAD_CLAIM, "cells.parquet"]
    with pytest.raises(IncompleteDirectory, match="upload is in progress here or was interrupted"):
        cs.read(url, storage_options=store.options)
    with pytest.raises(TargetExists, match="unfinished upload"):
        cs.write(cs.example(5), url, storage_options=store.options)
    replacement = cs.example(5)
    cs.write(replacement, url, storage_options=store.options, overwrite=True)
    assert names_below(store, bucket, key) == DIRECTORY_FILES
    assert cs.read(url, storage_options=store.options).equals(replacement)


def test_two_concurrent_writers_without_overwrite_one_wins_the_other_gets_target_exists(store):
    if store.scheme == "gs":
        pytest.skip("gcp-storage-emulator ignores ifGenerationMatch=0, the conditional create gcsfs sends (real GCS "
                    "honours it), so two writers cannot be told apart against it")
    url, _, _ = new_prefix(store)
    assert_one_of_two_writers_wins(url, store.options)


def test_info_and_validate_from_the_store_say_what_they_say_from_disk(store, tmp_path, capsys):
    x = cs.example(2, n_cells=300, adjacency=True)
    local = cs.write(x, tmp_path / "run1")
    url, _, _ = new_prefix(store)
    options = ["--storage-options", json.dumps(store.options)]
    assert main(["convert", str(local), url, *options]) == 0
    assert f"wrote {url} (cellspec directory): 300 cells" in capsys.readouterr().out
    assert main(["validate", url, *options]) == 0
    assert "cellspec validation: OK" in capsys.readouterr().out
    assert main(["info", url, *options]) == 0
    remote = capsys.readouterr().out
    assert main(["info", str(local)]) == 0
    assert remote == capsys.readouterr().out


def test_an_unknown_bucket_is_bucket_not_found_naming_the_url(store):
    url = f"{store.scheme}://no-such-bucket-here/run1"
    with pytest.raises(BucketNotFound) as caught:
        cs.read(url, storage_options=store.options)
    assert caught.value.url.startswith(url)
    with pytest.raises(BucketNotFound) as caught:
        cs.write(cs.example(), url, storage_options=store.options)
    assert caught.value.url.startswith(url)


def test_a_wrong_azure_account_key_is_access_denied(azure):
    url, _, _ = new_prefix(azure)
    cs.write(cs.example(), url, storage_options=azure.options)
    wrong = {"connection_string": azure.options["connection_string"].replace("AccountKey=E", "AccountKey=X")}
    with pytest.raises(AccessDenied) as caught:
        cs.read(url, storage_options=wrong)
    assert caught.value.url == url and "access denied" in str(caught.value)
    with pytest.raises(AccessDenied):
        cs.write(cs.example(), url + "-copy", storage_options=wrong)


def zarr_store(store, url: str):
    """A read-only zarr store of ``url`` through the store's fsspec implementation (for gs://, gcsfs's plain
    class, in the asynchronous mode zarr needs: tests/stores.py)."""
    import zarr

    if store.scheme != "gs":
        return zarr.storage.FsspecStore.from_url(url, storage_options=store.options, read_only=True)
    from gcsfs.core import GCSFileSystem

    return zarr.storage.FsspecStore(GCSFileSystem(asynchronous=True, **store.options),
                                    path=url.removeprefix("gs://"), read_only=True)


def test_an_anndata_zarr_store_written_to_the_store_reads_back_in_anndata(store):
    import anndata

    from cellspec_sc.bridges.anndata import write_anndata_zarr

    x = cs.example(2)
    url, _, _ = new_prefix(store, "x.zarr")
    assert write_anndata_zarr(x, url, storage_options=store.options) == url
    assert cs.from_anndata(anndata.read_zarr(zarr_store(store, url))).equals(x)
