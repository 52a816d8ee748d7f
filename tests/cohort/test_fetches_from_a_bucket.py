"""What a cohort fetches from a bucket (moto's S3 server on 127.0.0.1, the ``s3`` fixture): the bytes its work
needs, counted in this process (no dask.distributed client here, so the work runs where it is counted)."""

from __future__ import annotations

import pandas as pd

import cellspec_sc as cs
from stores import without_directory


def test_a_summary_from_the_bucket_fetches_about_the_directory_once_not_a_read_ahead_per_column(s3, monkeypatch,
                                                                                               tmp_path):
    import dask
    import s3fs.core

    url = f"s3://{s3.bucket()}/wide.cellspec"
    wide = cs.example(n_cells=20_000, n_features=100)
    cs.write(wide, url, storage_options=s3.options)
    cs.write(wide, tmp_path / "wide.cellspec")
    on_bucket = sum(s3.client().head_object(Bucket=url.split("/")[2], Key=key)["ContentLength"]
                    for key in s3.keys(url.split("/")[2]))
    cohort = cs.open_cohort([url], storage_options=s3.options)
    fetched: list[int] = []
    real_fetch = s3fs.core.S3File._fetch_range

    def counted(handle, start, end):
        fetched.append(end - start)
        return real_fetch(handle, start, end)

    monkeypatch.setattr(s3fs.core.S3File, "_fetch_range", counted)
    with dask.config.set(scheduler="synchronous"):  # in this process, where the fetches are counted
        summary = cohort.summary()
        local = cs.open_cohort([tmp_path / "wide.cellspec"]).summary()
    pd.testing.assert_frame_equal(without_directory(summary), without_directory(local))
    # a 50 MiB read-ahead at each seek between column chunks fetched the matrix file several times over
    assert 0 < sum(fetched) <= on_bucket
