"""Cohorts whose directories are on ``gs://`` or ``az://`` (gcp-storage-emulator and Azurite on 127.0.0.1, the
``gcs`` and ``azure`` fixtures), worked on by a dask.distributed LocalCluster whose worker processes read straight
from the store; every result is compared with the same cohort opened from disk."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import cellspec_sc as cs
from stores import upload_example_cohort, without_directory


@pytest.fixture(params=["gcs", "azure"])
def store(request):
    return request.getfixturevalue(request.param)


@pytest.fixture
def uploaded(store, tmp_path):
    """(the local cohort folder, the prefix on the store holding the same three directories)."""
    return upload_example_cohort(tmp_path / "slides", f"{store.scheme}://{store.bucket()}/cohort", store.options)


def test_workers_reading_from_the_store_give_what_the_local_cohort_gives(store, uploaded, client):
    root, prefix = uploaded
    names = [f"{prefix}/slide0{k}" for k in (1, 2, 3)]
    remote = cs.open_cohort(f"{prefix}/*", storage_options=store.options)
    assert remote.directories == names
    assert cs.open_cohort(prefix, storage_options=store.options).directories == names
    local = cs.open_cohort(root)
    assert remote.n_cells == local.n_cells == 360
    pd.testing.assert_frame_equal(without_directory(remote.summary(client)),
                                  without_directory(local.summary(client)))
    assert remote.validate(client).ok
    sums = remote.map(lambda x: float(np.nansum(x.measurements)), client)
    assert sums == [float(np.nansum(cs.read(d).measurements)) for d in sorted(root.iterdir())]
    assert remote.members[0].load().equals(cs.read(root / "slide01"))


def test_write_dataset_to_the_store_holds_the_rows_of_the_local_dataset(store, uploaded, client, tmp_path):
    import fsspec

    root, prefix = uploaded
    remote = cs.open_cohort(f"{prefix}/*", storage_options=store.options)
    url = f"{store.scheme}://{store.bucket()}/dataset"
    assert remote.write_dataset(url, client=client, storage_options=store.options) == url
    local = cs.open_cohort(root).write_dataset(tmp_path / "dataset", client=client)
    bucket, key = url.split("://", 1)[1].split("/", 1)
    names = [k.removeprefix(key + "/") for k in store.keys(bucket, key + "/")]
    assert names == sorted(p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file())
    assert store.get(bucket, f"{key}/DONE") and store.get(bucket, f"{key}/MANIFEST.sha256")
    # read back by pyarrow through the store's own fsspec implementation, not through cellspec
    filesystem = fsspec.filesystem(store.scheme, **store.options) if store.scheme == "az" else \
        _plain_gcsfs(store.options)
    from_store = pq.read_table(f"{bucket}/{key}/cells", filesystem=filesystem).to_pandas()
    on_disk = pq.read_table(local / "cells").to_pandas()
    columns = sorted(on_disk.columns)
    order = ["image_id", "cell_id"]
    pd.testing.assert_frame_equal(from_store[columns].sort_values(order).reset_index(drop=True),
                                  on_disk[columns].sort_values(order).reset_index(drop=True), check_categorical=False)


def _plain_gcsfs(options):
    from gcsfs.core import GCSFileSystem  # gcsfs's default class asks Google's gRPC API first (tests/stores.py)

    return GCSFileSystem(**options)
