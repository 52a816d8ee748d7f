"""What a cohort fetches from a bucket (moto's S3 server on 127.0.0.1, the ``s3`` fixture): the bytes its work
needs, counted in this process (no dask.distributed client here, so the work runs where it is counted)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cellspec_sc as cs
from stores import without_directory


@pytest.fixture
def wide_on_bucket(s3, tmp_path):
    """(the URL of a 20,000 x 100 directory on the bucket, the bytes of its objects, the same directory on disk)."""
    url = f"s3://{s3.bucket()}/wide.cellspec"
    wide = cs.example(n_cells=20_000, n_features=100)
    cs.write(wide, url, storage_options=s3.options)
    bucket = url.split("/")[2]
    on_bucket = sum(s3.client().head_object(Bucket=bucket, Key=key)["ContentLength"] for key in s3.keys(bucket))
    return url, on_bucket, cs.write(wide, tmp_path / "wide.cellspec")


def counted_fetches(monkeypatch) -> dict[str, list[int]]:
    """Bytes of every whole or ranged GET (``cat_file``), and (path, start, end) of every read through an open
    file."""
    import s3fs.core

    fetched: dict[str, list] = {"cat_file": [], "file": []}
    real_cat, real_range = s3fs.core.S3FileSystem._cat_file, s3fs.core.S3File._fetch_range

    async def cat(fs, path, *args, **kwargs):
        data = await real_cat(fs, path, *args, **kwargs)
        fetched["cat_file"].append(len(data))
        return data

    def ranged(handle, start, end):
        fetched["file"].append((handle.path, start, end))
        return real_range(handle, start, end)

    monkeypatch.setattr(s3fs.core.S3FileSystem, "_cat_file", cat)
    monkeypatch.setattr(s3fs.core.S3File, "_fetch_range", ranged)
    s3fs.core.S3FileSystem.clear_instance_cache()  # an instance binds its sync methods when it is made
    return fetched


def test_a_summary_from_the_bucket_fetches_each_object_once_and_decodes_the_bytes_it_hashed(s3, monkeypatch,
                                                                                           wide_on_bucket):
    import dask

    url, on_bucket, local = wide_on_bucket
    cohort = cs.open_cohort([url], storage_options=s3.options)
    fetched = counted_fetches(monkeypatch)
    with dask.config.set(scheduler="synchronous"):  # in this process, where the fetches are counted
        summary = cohort.summary()
    pd.testing.assert_frame_equal(without_directory(summary), without_directory(cs.open_cohort([local]).summary()))
    assert fetched["file"] == []  # no ranged read of the cells file after it was hashed
    assert sum(fetched["cat_file"]) == on_bucket  # DONE, the manifest and every listed file, each once


def test_a_kept_file_is_fetched_in_one_request_whatever_the_store_clients_piece_size(s3, monkeypatch, wide_on_bucket):
    import dask

    url, on_bucket, _ = wide_on_bucket
    small_pieces = {**s3.options, "default_block_size": 5 << 20}  # the 16 MB cells file would take 4 pieces
    cohort = cs.open_cohort([url], storage_options=small_pieces)
    fetched = counted_fetches(monkeypatch)
    with dask.config.set(scheduler="synchronous"):
        cohort.summary()
    bucket = url.split("/")[2]
    assert len(fetched["cat_file"]) == len(s3.keys(bucket)) == 4  # DONE, manifest, cellspec.json, cells.parquet
    assert sum(fetched["cat_file"]) == on_bucket


def test_validating_and_loading_a_member_from_the_bucket_fetch_each_object_once(s3, monkeypatch, wide_on_bucket):
    import dask

    url, on_bucket, local = wide_on_bucket
    cohort = cs.open_cohort([url], storage_options=s3.options)
    image = str(cohort.images["image_id"].iloc[0])
    fetched = counted_fetches(monkeypatch)
    with dask.config.set(scheduler="synchronous"):
        report = cohort.validate()
    assert report.ok and fetched["file"] == [] and sum(fetched["cat_file"]) == on_bucket
    member = cohort.select(images=[image]).members[0]  # narrowed to one image: loaded by parts, not by read()
    fetched["cat_file"].clear()
    fetched["file"].clear()  # select counted the image's rows by ranged reads of image_id
    narrowed = member.load()
    whole = cs.read(local)
    kept = (whole.cells["image_id"].astype(str) == image).to_numpy()
    assert np.array_equal(narrowed.measurements, whole.measurements[kept], equal_nan=True)
    assert fetched["file"] == [] and sum(fetched["cat_file"]) == on_bucket


def test_a_cells_file_too_large_to_keep_is_read_again_by_ranges_without_a_read_ahead_per_column(s3, monkeypatch,
                                                                                                 wide_on_bucket):
    import dask

    from cellspec_sc.cohort import _members

    url, on_bucket, local = wide_on_bucket
    monkeypatch.setattr(_members, "HELD_BYTES", 0)
    cohort = cs.open_cohort([url], storage_options=s3.options)
    fetched = counted_fetches(monkeypatch)
    with dask.config.set(scheduler="synchronous"):
        summary = cohort.summary()
    pd.testing.assert_frame_equal(without_directory(summary), without_directory(cs.open_cohort([local]).summary()))
    assert sum(fetched["cat_file"]) == on_bucket  # hashed as it streamed, each object once
    # then the row groups: a 50 MiB read-ahead at each seek between column chunks fetched the file several times over
    assert 0 < sum(end - start for _, start, end in fetched["file"]) <= on_bucket
    # the footer once, not once per feature batch and row group
    size = cohort.members[0].stamps["cells.parquet"][0]
    assert [path for path, _, end in fetched["file"] if end == size] == [url.removeprefix("s3://") + "/cells.parquet"]


def test_a_worker_keeps_at_most_a_quarter_of_each_threads_share_of_its_memory_limit(client):
    from cellspec_sc.cohort._members import HELD_BYTES, held_budget

    # the fixture's workers: 1 GiB and one thread each
    budgets = [client.submit(held_budget, workers=[address], pure=False).result() for address in client.nthreads()]
    assert budgets == [256 << 20, 256 << 20]
    assert held_budget() == HELD_BYTES == 512 << 20  # here, in no worker
