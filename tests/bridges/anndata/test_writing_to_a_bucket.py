"""``.h5ad`` files and AnnData ``.zarr`` stores written to a URL (moto's S3 server on 127.0.0.1, the ``s3``
fixture) and read back from the bucket by anndata itself; a SpatialData store to a URL is refused, saying why."""

from __future__ import annotations

import io
import json

import anndata
import pytest
import zarr

import cellspec_sc as cs
from cellspec_sc.bridges.anndata import write_anndata_zarr, write_h5ad
from cellspec_sc.bridges.spatialdata import write_spatialdata
from cellspec_sc.cli.main import main
from cellspec_sc.errors import InputError
from cellspec_sc.io import TargetExists


def store_of(url: str, s3) -> zarr.storage.FsspecStore:
    return zarr.storage.FsspecStore.from_url(url, storage_options=s3.options, read_only=True)


def test_an_anndata_zarr_store_in_a_bucket_reads_back_in_anndata_as_the_object(s3, x):
    url = f"s3://{s3.bucket()}/x.zarr"
    assert write_anndata_zarr(x, url, storage_options=s3.options) == url
    adata = anndata.read_zarr(store_of(url, s3))
    assert cs.from_anndata(adata).equals(x)


def test_the_root_metadata_of_a_store_is_uploaded_last(s3, x, monkeypatch):
    import cellspec_sc.io._remote_files as remote_files

    order: list[str] = []
    put = remote_files.storage_call

    def noting(url, doing, call, **kw):
        if doing.startswith("uploading "):
            order.append(doing.removeprefix("uploading "))
        return put(url, doing, call, **kw)

    monkeypatch.setattr(remote_files, "storage_call", noting)
    write_anndata_zarr(x, f"s3://{s3.bucket()}/x.zarr", storage_options=s3.options)
    assert order[-1] == "zarr.json" and "obs/zarr.json" in order[:-1] and "X/zarr.json" in order[:-1]


def test_a_store_is_uploaded_under_a_claim_of_its_prefix_removed_at_the_end(s3, x, monkeypatch):
    import cellspec_sc.io._remote_files as remote_files

    bucket = s3.bucket()
    claimed_while_uploading: list[bool] = []
    put = remote_files.storage_call

    def noting(url, doing, call, **kw):
        if doing.startswith("uploading "):
            claimed_while_uploading.append("x.zarr/.cellspec-upload" in s3.keys(bucket))
        return put(url, doing, call, **kw)

    monkeypatch.setattr(remote_files, "storage_call", noting)
    write_anndata_zarr(x, f"s3://{bucket}/x.zarr", storage_options=s3.options)
    assert claimed_while_uploading and all(claimed_while_uploading)
    assert "x.zarr/.cellspec-upload" not in s3.keys(bucket)


@pytest.mark.parametrize("other", ["uploading", "finished"])
def test_a_store_writer_that_finds_another_writer_there_uploads_nothing(s3, x, monkeypatch, other):
    """Another writer claims the prefix (is uploading) or has published its whole store between this writer's
    check and its claim: this writer is refused and the other writer's objects are all that is there."""
    import cellspec_sc.io._remote as remote

    bucket = s3.bucket()
    theirs = {"uploading": ["x.zarr/.cellspec-upload"], "finished": ["x.zarr/X/zarr.json", "x.zarr/zarr.json"]}[other]
    create = remote._create

    def another_writer_first(location, name, data, loser):
        for key in theirs:
            s3.client().put_object(Bucket=bucket, Key=key, Body=b'{"objects": [], "folders": []}')
        return create(location, name, data, loser)

    monkeypatch.setattr(remote, "_create", another_writer_first)
    said = "another writer is uploading here" if other == "uploading" else "another writer meanwhile"
    with pytest.raises(TargetExists, match=said):
        write_anndata_zarr(x, f"s3://{bucket}/x.zarr", storage_options=s3.options)
    assert s3.keys(bucket) == theirs


def test_an_interrupted_store_upload_is_replaced_only_with_overwrite(s3, x, monkeypatch):
    import cellspec_sc.io._remote_files as remote_files

    bucket = s3.bucket()
    url = f"s3://{bucket}/x.zarr"
    uploads = 0
    put = remote_files.storage_call

    def failing_third_upload(target, doing, call, **kw):
        nonlocal uploads
        if doing.startswith("uploading "):
            uploads += 1
            if uploads == 3:
                raise OSError("connection lost")
        return put(target, doing, call, **kw)

    monkeypatch.setattr(remote_files, "storage_call", failing_third_upload)
    with pytest.raises(OSError, match="connection lost"):
        write_anndata_zarr(x, url, storage_options=s3.options)
    monkeypatch.setattr(remote_files, "storage_call", put)
    left = s3.keys(bucket)
    assert "x.zarr/.cellspec-upload" in left and "x.zarr/zarr.json" not in left and len(left) == 3
    with pytest.raises(TargetExists, match="already holds 3 object"):
        write_anndata_zarr(x, url, storage_options=s3.options)
    write_anndata_zarr(x, url, storage_options=s3.options, overwrite=True)
    assert "x.zarr/.cellspec-upload" not in s3.keys(bucket)
    assert cs.from_anndata(anndata.read_zarr(store_of(url, s3))).equals(x)


def test_an_h5ad_file_in_a_bucket_is_one_object_anndata_reads(s3, x):
    bucket = s3.bucket()
    url = f"s3://{bucket}/x.h5ad"
    assert write_h5ad(x, url, storage_options=s3.options) == url
    assert s3.keys(bucket) == ["x.h5ad"]
    body = s3.client().get_object(Bucket=bucket, Key="x.h5ad")["Body"].read()
    assert cs.from_anndata(anndata.read_h5ad(io.BytesIO(body))).equals(x)


def test_overwrite_rules_for_files_and_stores_in_a_bucket(s3, x):
    bucket = s3.bucket()
    h5ad, store = f"s3://{bucket}/x.h5ad", f"s3://{bucket}/x.zarr"
    write_h5ad(x, h5ad, storage_options=s3.options)
    write_anndata_zarr(x, store, storage_options=s3.options)
    other = cs.example(3)
    with pytest.raises(TargetExists, match="already exists"):
        write_h5ad(other, h5ad, storage_options=s3.options)
    with pytest.raises(TargetExists, match="already holds"):
        write_anndata_zarr(other, store, storage_options=s3.options)
    write_h5ad(other, h5ad, storage_options=s3.options, overwrite=True)
    write_anndata_zarr(other, store, storage_options=s3.options, overwrite=True)
    assert cs.from_anndata(anndata.read_zarr(store_of(store, s3))).equals(other)
    s3.client().put_object(Bucket=bucket, Key="notes.h5ad", Body=b"my notes")
    with pytest.raises(TargetExists, match="is not an .h5ad file"):
        write_h5ad(x, f"s3://{bucket}/notes.h5ad", storage_options=s3.options, overwrite=True)
    s3.client().put_object(Bucket=bucket, Key="photos.zarr/zarr.json", Body=json.dumps({"attributes": {}}).encode())
    with pytest.raises(TargetExists, match="does not hold an AnnData store"):
        write_anndata_zarr(x, f"s3://{bucket}/photos.zarr", storage_options=s3.options, overwrite=True)
    assert s3.keys(bucket, "photos.zarr") == ["photos.zarr/zarr.json"]


def test_an_h5ad_appearing_while_uploading_is_not_replaced(s3, x, monkeypatch):
    """Another writer's object lands between this writer's check and its upload: the conditional upload refuses."""
    import cellspec_sc.io._remote_files as remote_files

    bucket = s3.bucket()
    call = remote_files.storage_call

    def another_writer_first(url, doing, do, **kw):
        if doing == "uploading":
            s3.client().put_object(Bucket=bucket, Key="x.h5ad", Body=b"the other writer's file")
        return call(url, doing, do, **kw)

    monkeypatch.setattr(remote_files, "storage_call", another_writer_first)
    with pytest.raises(TargetExists, match="appeared while this writer was writing"):
        write_h5ad(x, f"s3://{bucket}/x.h5ad", storage_options=s3.options)
    assert s3.client().get_object(Bucket=bucket, Key="x.h5ad")["Body"].read() == b"the other writer's file"


def test_convert_writes_an_h5ad_to_a_bucket(s3, tmp_path, capsys):
    x = cs.example(2)
    local = cs.write(x, tmp_path / "run1")
    bucket = s3.bucket()
    url = f"s3://{bucket}/run1.h5ad"
    assert main(["convert", str(local), url, "--storage-options", json.dumps(s3.options)]) == 0
    assert f"wrote {url}" in capsys.readouterr().out
    body = s3.client().get_object(Bucket=bucket, Key="run1.h5ad")["Body"].read()
    assert cs.from_anndata(anndata.read_h5ad(io.BytesIO(body))).equals(x)


@pytest.mark.parametrize("name, said", [("x.h5ad", "already exists"), ("x.zarr", "already holds"),
                                        ("x.spatialdata.zarr", "to a local path only")])
def test_convert_refuses_a_url_target_before_it_reads_the_source(s3, tmp_path, capsys, name, said):
    """SOURCE is a folder that is no cellspec directory: had it been read first, the message would be about it."""
    bucket = s3.bucket()
    for key in ("x.h5ad", "x.zarr/zarr.json"):
        s3.client().put_object(Bucket=bucket, Key=key, Body=b"someone's data")
    (tmp_path / "not-read").mkdir()
    code = main(["convert", str(tmp_path / "not-read"), f"s3://{bucket}/{name}",
                 "--storage-options", json.dumps(s3.options)])
    err = capsys.readouterr().err
    assert code != 0 and said in err and "not-read" not in err, err
    assert s3.keys(bucket) == ["x.h5ad", "x.zarr/zarr.json"]


def test_a_spatialdata_store_to_a_url_is_refused_saying_how_to_do_it(s3, x):
    bucket = s3.bucket()
    with pytest.raises(InputError, match="write it to a local path, then copy the store"):
        write_spatialdata(x, f"s3://{bucket}/x.spatialdata.zarr")
    assert s3.keys(bucket) == []
