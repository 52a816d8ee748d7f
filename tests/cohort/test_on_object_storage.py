"""Cohorts whose directories are on a bucket (moto's S3 server on 127.0.0.1, the ``s3`` fixture), worked on by a
dask.distributed LocalCluster whose workers read straight from the bucket (no shared file system): every result
is compared with the same cohort opened from disk."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cellspec_sc as cs
from cellspec_sc.cohort import CohortError
from cellspec_sc.io import ChangedSinceRead
from stores import upload_example_cohort, without_directory


@pytest.fixture
def uploaded(s3, tmp_path):
    """(the local cohort folder, the bucket prefix holding the same three directories)."""
    return upload_example_cohort(tmp_path / "slides", f"s3://{s3.bucket()}/cohort", s3.options)


def test_a_glob_a_prefix_and_a_list_of_urls_open_the_same_directories(s3, uploaded):
    _, prefix = uploaded
    names = [f"{prefix}/slide0{k}" for k in (1, 2, 3)]
    assert cs.open_cohort(f"{prefix}/*", storage_options=s3.options).directories == names
    assert cs.open_cohort(prefix, storage_options=s3.options).directories == names
    assert cs.open_cohort(names[::-1], storage_options=s3.options).directories == names[::-1]


def test_summary_validate_and_map_on_workers_reading_from_the_bucket_match_the_local_cohort(s3, uploaded, client):
    root, prefix = uploaded
    remote = cs.open_cohort(f"{prefix}/*", storage_options=s3.options)
    local = cs.open_cohort(root)
    assert remote.n_cells == local.n_cells == 360
    pd.testing.assert_frame_equal(without_directory(remote.summary(client)),
                                  without_directory(local.summary(client)))
    assert remote.validate(client).ok
    sums = remote.map(lambda x: float(np.nansum(x.measurements)), client)
    assert sums == [float(np.nansum(cs.read(d).measurements)) for d in sorted(root.iterdir())]


def test_a_member_loads_as_the_directory_reads_and_a_sub_cohort_keeps_its_images(s3, uploaded):
    root, prefix = uploaded
    remote = cs.open_cohort(f"{prefix}/*", storage_options=s3.options)
    first = cs.read(root / "slide01")
    assert remote.members[0].load().equals(first)
    image = str(first.images["image_id"].iloc[0])
    sub = remote.select(images=[image])
    narrowed = sub.members[0].load()
    assert list(narrowed.cells["image_id"].astype(str).unique()) == [image]
    kept = (first.cells["image_id"].astype(str) == image).to_numpy()
    assert np.array_equal(narrowed.measurements, first.measurements[kept], equal_nan=True)


def test_a_directory_rewritten_after_opening_is_refused_on_the_worker(s3, uploaded):
    _, prefix = uploaded
    remote = cs.open_cohort(f"{prefix}/*", storage_options=s3.options)
    cs.write(cs.example(7, n_cells=50), f"{prefix}/slide02", storage_options=s3.options, overwrite=True)
    with pytest.raises(CohortError) as caught:
        remote.summary()
    assert "slide02" in str(caught.value) and "changed after the cohort was opened" in str(caught.value)
    with pytest.raises(ChangedSinceRead):
        remote.members[1].load()


def test_local_paths_and_urls_do_not_mix(s3, uploaded):
    root, prefix = uploaded
    with pytest.raises(CohortError, match="not both"):
        cs.open_cohort([str(root / "slide01"), f"{prefix}/slide02"], storage_options=s3.options)


def polars_options(s3) -> dict[str, str]:
    """The same endpoint and keys in the words of Polars' own object store."""
    return {"aws_endpoint_url": s3.endpoint, "aws_access_key_id": s3.options["key"],
            "aws_secret_access_key": s3.options["secret"], "aws_region": "us-east-1", "aws_allow_http": "true"}


def test_write_dataset_to_a_bucket_read_by_duckdb_and_polars_from_the_same_url(s3, uploaded, client, tmp_path):
    import duckdb
    import fsspec
    import polars as pl

    root, prefix = uploaded
    remote = cs.open_cohort(f"{prefix}/*", storage_options=s3.options)
    url = f"s3://{s3.bucket()}/dataset"
    assert remote.write_dataset(url, client=client, storage_options=s3.options) == url
    local = cs.open_cohort(root).write_dataset(tmp_path / "dataset", client=client)
    bucket, key = url.removeprefix("s3://").split("/", 1)
    names = [k.removeprefix(key + "/") for k in s3.keys(bucket, key + "/")]
    assert names == sorted(p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file())
    manifest = s3.client().get_object(Bucket=bucket, Key=f"{key}/MANIFEST.sha256")["Body"].read().decode()
    local_manifest = (local / "MANIFEST.sha256").read_text()
    assert [v.split("  ")[1] for v in manifest.splitlines() if v.endswith(".parquet")] == \
        [v.split("  ")[1] for v in local_manifest.splitlines() if v.endswith(".parquet")]
    truth = pd.concat([cs.read(d).cells.assign(v=cs.read(d).measurements[:, 0]) for d in sorted(root.iterdir())])
    feature = remote.feature_ids[0]

    connection = duckdb.connect()
    connection.register_filesystem(fsspec.filesystem("s3", **s3.options))
    n, total = connection.sql(f"SELECT count(*), sum(\"{feature}\") FROM read_parquet('{url}/cells/**/*.parquet', "
                              "hive_partitioning = true)").fetchall()[0]
    assert n == len(truth) and total == pytest.approx(float(np.nansum(truth["v"])), rel=1e-12)

    frame = pl.scan_parquet(f"{url}/cells/**/*.parquet", hive_partitioning=True,
                            storage_options=polars_options(s3)).select(pl.len(), pl.col(feature).sum()).collect()
    assert frame.row(0) == (len(truth), pytest.approx(float(np.nansum(truth["v"])), rel=1e-12))
    with pytest.raises(CohortError, match="is a cohort dataset"):
        cs.open_cohort(url, storage_options=s3.options)

