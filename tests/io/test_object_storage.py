"""Cellspec directories on object storage, against a real S3 API on 127.0.0.1 (moto's server mode, the ``s3``
fixture): round trips, the write protocol (files, manifest, DONE last, a conditional claim), what
``overwrite=True`` may remove, and every failure of the store as its own CellspecError naming the URL."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import cellspec_sc as cs
from cellspec_sc.errors import InputError
from cellspec_sc.io import (
    UPLOAD_CLAIM,
    AccessDenied,
    BucketNotFound,
    MissingCredentials,
    StorageUnreachable,
    TargetExists,
    Transfer,
)
from cellspec_sc.io._refusals import ChecksumMismatch, IncompleteDirectory, ListedFileMissing
from cellspec_sc.io._remote import read_remote
from stores import KILLED_WRITER, assert_one_of_two_writers_wins

ROOT = Path(__file__).resolve().parents[2]


def url_in(s3, name: str = "run1") -> str:
    return f"s3://{s3.bucket()}/{name}"


def bucket_and_key(url: str) -> tuple[str, str]:
    bucket, _, key = url.removeprefix("s3://").partition("/")
    return bucket, key


@pytest.mark.parametrize("format", ["parquet", "tsv"])
def test_a_directory_written_to_a_bucket_reads_back_bit_for_bit_as_from_disk(s3, tmp_path, format):
    x = cs.example(3, adjacency=True)
    url = url_in(s3)
    assert cs.write(x, url, format=format, storage_options=s3.options) == url
    on_disk = cs.read(cs.write(x, tmp_path / "run1", format=format))
    from_bucket = cs.read(url, storage_options=s3.options)
    assert from_bucket.equals(on_disk)
    assert np.array_equal(from_bucket.measurements, on_disk.measurements, equal_nan=True)
    if format == "parquet":
        assert from_bucket.equals(x)


def test_the_bucket_holds_exactly_the_files_of_the_local_directory_with_the_same_bytes(s3, tmp_path):
    x = cs.example(1)
    url = url_in(s3)
    cs.write(x, url, storage_options=s3.options)
    local = cs.write(x, tmp_path / "run1")
    bucket, key = bucket_and_key(url)
    names = [k.removeprefix(key + "/") for k in s3.keys(bucket, key + "/")]
    assert names == sorted(p.name for p in local.iterdir())  # no claim left behind
    body = s3.client().get_object(Bucket=bucket, Key=f"{key}/MANIFEST.sha256")["Body"].read()
    assert body == (local / "MANIFEST.sha256").read_bytes()


def test_each_file_is_fetched_once_and_hashed_as_it_streams(s3, monkeypatch):
    monkeypatch.setattr("cellspec_sc.io._remote.piece_plan", lambda fs: (4096, 4))  # many pieces per file
    x = cs.example(2, n_cells=2000)
    url = url_in(s3)
    cs.write(x, url, storage_options=s3.options)
    bucket, key = bucket_and_key(url)
    listed = s3.client().list_objects_v2(Bucket=bucket, Prefix=key + "/")["Contents"]
    sizes = {o["Key"].rsplit("/", 1)[1]: o["Size"] for o in listed}
    transfer = Transfer()
    assert read_remote(url, s3.options, transfer=transfer).equals(x)
    # every listed file once, DONE and the manifest once each, plus the final DONE/manifest re-check
    once = sum(sizes.values())
    assert transfer.bytes == once
    assert transfer.requests > sizes["cells.parquet"] // 4096


def test_the_pieces_follow_the_store_clients_block_size_and_concurrency_from_storage_options(s3, monkeypatch):
    import cellspec_sc.io._remote as remote

    x = cs.example(2, n_cells=2000)
    url = url_in(s3)
    cs.write(x, url, storage_options=s3.options)
    bucket, key = bucket_and_key(url)
    sizes = {o["Key"].rsplit("/", 1)[1]: o["Size"]
             for o in s3.client().list_objects_v2(Bucket=bucket, Prefix=key + "/")["Contents"]}
    fetching, most, lock, fetch = [0], [0], threading.Lock(), remote._range

    def counted(*args):
        with lock:
            fetching[0] += 1
            most[0] = max(most[0], fetching[0])
        try:
            return fetch(*args)
        finally:
            with lock:
                fetching[0] -= 1

    monkeypatch.setattr(remote, "_range", counted)
    monkeypatch.setattr(remote, "FETCH_THREADS", 1)  # one file at a time: what is in flight is one file's
    transfer = Transfer()
    options = {**s3.options, "default_block_size": 4096, "max_concurrency": 3}
    assert read_remote(url, options, transfer=transfer).equals(x)
    listed = [n for n in sizes if n not in ("DONE", "MANIFEST.sha256")]
    assert transfer.requests == 2 + sum(-(-sizes[n] // 4096) for n in listed)  # DONE and the manifest: one each
    assert transfer.bytes == sum(sizes.values()) and 1 <= most[0] <= 3


def test_a_changed_byte_in_the_bucket_is_refused_naming_the_file(s3):
    url = url_in(s3)
    cs.write(cs.example(), url, storage_options=s3.options)
    bucket, key = bucket_and_key(url)
    client = s3.client()
    data = bytearray(client.get_object(Bucket=bucket, Key=f"{key}/cells.parquet")["Body"].read())
    data[len(data) // 2] ^= 0xFF
    client.put_object(Bucket=bucket, Key=f"{key}/cells.parquet", Body=bytes(data))
    with pytest.raises(ChecksumMismatch) as caught:
        cs.read(url, storage_options=s3.options)
    assert caught.value.file == "cells.parquet" and caught.value.directory == url
    assert hashlib.sha256(data).hexdigest() in str(caught.value)


def test_a_prefix_without_done_is_refused(s3):
    url = url_in(s3)
    cs.write(cs.example(), url, storage_options=s3.options)
    bucket, key = bucket_and_key(url)
    s3.client().delete_object(Bucket=bucket, Key=f"{key}/DONE")
    with pytest.raises(IncompleteDirectory) as caught:
        cs.read(url, storage_options=s3.options)
    assert caught.value.file == "DONE"
    bucket_key = f"{key}/cells.parquet"
    s3.client().put_object(Bucket=bucket, Key=f"{key}/DONE", Body=b"0" * 64 + b"\n")
    with pytest.raises(cs.FormatError):
        cs.read(url, storage_options=s3.options)
    assert bucket_key in s3.keys(bucket)


def test_a_listed_file_missing_from_the_bucket_is_refused(s3):
    url = url_in(s3)
    cs.write(cs.example(), url, storage_options=s3.options)
    bucket, key = bucket_and_key(url)
    s3.client().delete_object(Bucket=bucket, Key=f"{key}/cells.parquet")
    with pytest.raises(ListedFileMissing) as caught:
        cs.read(url, storage_options=s3.options)
    assert caught.value.file == "cells.parquet"


def test_overwrite_false_is_refused_when_done_exists_and_nothing_changes(s3):
    url = url_in(s3)
    first, second = cs.example(1), cs.example(2)
    cs.write(first, url, storage_options=s3.options)
    bucket, key = bucket_and_key(url)
    before = {k: s3.client().get_object(Bucket=bucket, Key=k)["ETag"] for k in s3.keys(bucket)}
    with pytest.raises(TargetExists, match="DONE is present"):
        cs.write(second, url, storage_options=s3.options)
    assert {k: s3.client().get_object(Bucket=bucket, Key=k)["ETag"] for k in s3.keys(bucket)} == before
    assert cs.read(url, storage_options=s3.options).equals(first)


def test_two_concurrent_writers_without_overwrite_one_wins_the_other_gets_target_exists(s3):
    url = url_in(s3)
    assert_one_of_two_writers_wins(url, s3.options)


def test_a_directory_published_between_the_look_and_the_claim_is_not_replaced(s3, monkeypatch):
    """Another writer finishes its whole upload after this writer saw an empty prefix and before it claims the
    prefix: the claim finds objects it did not see, is withdrawn, and nothing of the other directory changes."""
    import cellspec_sc.io._remote as remote

    url = url_in(s3)
    bucket, _ = bucket_and_key(url)
    first, second = cs.example(1), cs.example(2)
    create = remote._create

    def another_writer_finishes_first(location, name, data, loser):
        if name == UPLOAD_CLAIM and not s3.keys(bucket):
            monkeypatch.setattr(remote, "_create", create)
            cs.write(first, url, storage_options=s3.options)
        return create(location, name, data, loser)

    monkeypatch.setattr(remote, "_create", another_writer_finishes_first)
    with pytest.raises(TargetExists, match="published here by another writer meanwhile"):
        cs.write(second, url, storage_options=s3.options)
    assert UPLOAD_CLAIM not in {k.rsplit("/", 1)[-1] for k in s3.keys(bucket)}
    assert cs.read(url, storage_options=s3.options).equals(first)


def test_overwrite_true_replaces_a_complete_directory_and_removes_what_it_listed(s3):
    url = url_in(s3)
    cs.write(cs.example(1, adjacency=True), url, storage_options=s3.options)
    replacement = cs.example(2)
    cs.write(replacement, url, storage_options=s3.options, overwrite=True)
    bucket, key = bucket_and_key(url)
    assert [k.removeprefix(key + "/") for k in s3.keys(bucket)] == \
        ["DONE", "MANIFEST.sha256", "cells.parquet", "cellspec.json"]  # the old adjacency.parquet is gone
    assert cs.read(url, storage_options=s3.options).equals(replacement)


def test_overwrite_true_refuses_a_prefix_holding_other_objects_and_deletes_nothing(s3):
    url = url_in(s3)
    cs.write(cs.example(1), url, storage_options=s3.options)
    bucket, key = bucket_and_key(url)
    s3.client().put_object(Bucket=bucket, Key=f"{key}/notes.txt", Body=b"mine")
    before = s3.keys(bucket)
    with pytest.raises(TargetExists, match="not a complete cellspec directory"):
        cs.write(cs.example(2), url, storage_options=s3.options, overwrite=True)
    assert s3.keys(bucket) == before
    other = url_in(s3, "photos")
    b2, k2 = bucket_and_key(other)
    s3.client().put_object(Bucket=b2, Key=f"{k2}/cells.parquet", Body=b"not ours")
    with pytest.raises(TargetExists):
        cs.write(cs.example(2), other, storage_options=s3.options, overwrite=True)
    assert s3.keys(b2) == [f"{k2}/cells.parquet"]


def test_an_upload_killed_midway_leaves_no_done_and_the_next_overwrite_cleans_it(s3):
    url = url_in(s3)
    bucket, key = bucket_and_key(url)
    writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, url, json.dumps(s3.options)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert writer.stdout.readline().startswith("uploaded cells.parquet")
    finally:
        writer.kill()
        writer.wait(30)
    left = [k.removeprefix(key + "/") for k in s3.keys(bucket)]
    assert left == [UPLOAD_CLAIM, "cells.parquet"]
    with pytest.raises(IncompleteDirectory, match="upload is in progress here or was interrupted"):
        cs.read(url, storage_options=s3.options)
    with pytest.raises(TargetExists, match="unfinished upload"):
        cs.write(cs.example(5), url, storage_options=s3.options)
    replacement = cs.example(5)
    cs.write(replacement, url, storage_options=s3.options, overwrite=True)
    assert [k.removeprefix(key + "/") for k in s3.keys(bucket)] == \
        ["DONE", "MANIFEST.sha256", "cells.parquet", "cellspec.json"]
    assert cs.read(url, storage_options=s3.options).equals(replacement)


def test_a_denied_request_is_access_denied_naming_the_url(s3):
    url = url_in(s3)
    cs.write(cs.example(), url, storage_options=s3.options)
    stranger = {**s3.options, "key": "unknown-key", "secret": "unknown-secret"}
    with s3.denying():
        with pytest.raises(AccessDenied) as caught:
            cs.read(url, storage_options=stranger)
        assert caught.value.url == url and "access denied" in str(caught.value)
        with pytest.raises(AccessDenied):
            cs.write(cs.example(), url + "-copy", storage_options=stranger)


def test_an_unknown_bucket_is_bucket_not_found(s3):
    with pytest.raises(BucketNotFound) as caught:
        cs.read("s3://no-such-bucket-here/run1", storage_options=s3.options)
    assert caught.value.url == "s3://no-such-bucket-here/run1"


def test_missing_credentials_are_named(s3, monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    options = {"client_kwargs": s3.options["client_kwargs"], "skip_instance_cache": True}
    with pytest.raises(MissingCredentials) as caught:
        cs.read(url_in(s3), storage_options=options)
    assert "no credentials" in str(caught.value)


def test_a_server_stopped_mid_read_fails_within_bounded_time():
    from s3server import LocalS3

    server = LocalS3.start()
    try:
        url = f"s3://{server.bucket()}/run1"
        cs.write(cs.example(2, n_cells=20_000), url, storage_options=server.options)
        transfer, outcome = Transfer(), []

        def read() -> None:
            try:
                read_remote(url, server.options, transfer=transfer)
            except Exception as err:  # noqa: BLE001 - the test looks at what it was
                outcome.append(err)

        import cellspec_sc.io._remote as remote

        plan, remote.piece_plan = remote.piece_plan, lambda fs: (64 * 1024, 4)
        try:
            reader = threading.Thread(target=read)
            reader.start()
            while transfer.bytes == 0 and reader.is_alive():
                time.sleep(0.001)
        finally:
            server.stop()
            remote.piece_plan = plan
        started = time.monotonic()
        reader.join(120)
        assert not reader.is_alive()
        assert time.monotonic() - started < 60
    finally:
        server.server = None
    assert len(outcome) == 1 and isinstance(outcome[0], StorageUnreachable), outcome
    assert outcome[0].url.startswith(url)


def test_a_bucket_itself_is_not_a_directory_target(s3):
    with pytest.raises(InputError, match="prefix inside a bucket"):
        cs.write(cs.example(), f"s3://{s3.bucket()}", storage_options=s3.options)


def test_storage_options_on_a_local_path_are_refused(tmp_path):
    with pytest.raises(InputError, match="storage_options"):
        cs.write(cs.example(), tmp_path / "run1", storage_options={"anon": True})
