"""``cs.read(url, lazy=True)`` against moto's S3 server on 127.0.0.1 (the ``s3`` fixture): the measurements stay on
the bucket as a dask array of one block per row group, every file is hashed as it streams, and a block whose
object changed after the read is refused."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pyarrow.parquet as pq
import pytest

import cellspec_sc as cs
from cellspec_sc.errors import InputError
from cellspec_sc.io import ChangedSinceRead, Transfer, read_remote_lazy
from cellspec_sc.io._refusals import ChecksumMismatch
from dirhelpers import reseal

ROWS_PER_GROUP = 7


@pytest.fixture
def x():
    return cs.example(n_cells=60, n_features=30, adjacency=True, region_layers=("tissue",))


@pytest.fixture
def uploaded(s3, tmp_path, x):
    """(URL, bucket, key, local directory): x written with row groups of 7 rows (as another writer might), its
    files uploaded one by one, the manifest then DONE last."""
    path = cs.write(x, tmp_path / "obj")
    pq.write_table(pq.read_table(path / "cells.parquet"), path / "cells.parquet", row_group_size=ROWS_PER_GROUP)
    reseal(path)
    bucket, key = s3.bucket(), "obj"
    names = [line.split("  ", 1)[1] for line in (path / "MANIFEST.sha256").read_text().splitlines()]
    for name in [*names, "MANIFEST.sha256", "DONE"]:
        s3.client().put_object(Bucket=bucket, Key=f"{key}/{name}", Body=(path / name).read_bytes())
    return f"s3://{bucket}/{key}", bucket, key, path


def test_a_lazy_read_from_a_bucket_has_a_block_per_row_group_and_equals_the_eager_reads(s3, uploaded, x):
    url, _, _, path = uploaded
    y = cs.read(url, lazy=True, storage_options=s3.options)
    assert isinstance(y.measurements, da.Array)
    assert y.measurements.chunks[0] == (ROWS_PER_GROUP,) * 8 + (4,)
    assert y.equals(x) and y.equals(cs.read(path, lazy=True))
    assert cs.read(url, storage_options=s3.options).equals(y)
    block = y.measurements.blocks[3].compute()
    assert np.array_equal(block, x.measurements[21:28], equal_nan=True)


def test_the_cells_file_is_streamed_once_to_hash_it_and_not_kept(s3, uploaded, monkeypatch):
    monkeypatch.setattr("cellspec_sc.io._remote.piece_plan", lambda fs: (1024, 4))  # many pieces per file
    url, bucket, key, path = uploaded
    transfer = Transfer()
    y = read_remote_lazy(url, s3.options, transfer=transfer)
    sizes = {p.name: p.stat().st_size for p in path.iterdir()}
    assert transfer.bytes == sum(sizes.values())  # each file once (the table and the blocks are not counted)
    assert transfer.requests > sizes["cells.parquet"] // 1024
    assert isinstance(y.measurements, da.Array)


def test_a_changed_byte_of_the_cells_file_is_refused_before_anything_is_returned(s3, uploaded):
    url, bucket, key, _ = uploaded
    client = s3.client()
    data = bytearray(client.get_object(Bucket=bucket, Key=f"{key}/cells.parquet")["Body"].read())
    data[len(data) // 2] ^= 0xFF
    client.put_object(Bucket=bucket, Key=f"{key}/cells.parquet", Body=bytes(data))
    with pytest.raises(ChecksumMismatch) as caught:
        cs.read(url, lazy=True, storage_options=s3.options)
    assert caught.value.file == "cells.parquet" and caught.value.directory == url


def test_a_block_of_an_object_replaced_after_the_read_is_refused(s3, uploaded):
    url, bucket, key, _ = uploaded
    y = cs.read(url, lazy=True, storage_options=s3.options)
    s3.client().put_object(Bucket=bucket, Key=f"{key}/cells.parquet", Body=b"replaced")
    with pytest.raises(ChangedSinceRead, match="changed or was removed after read"):
        y.measurements.blocks[0].compute()


def test_a_lazy_read_of_the_tsv_variant_from_a_bucket_is_refused(s3, x):
    url = f"s3://{s3.bucket()}/run1"
    cs.write(x, url, format="tsv", storage_options=s3.options)
    with pytest.raises(InputError, match="needs the Parquet variant"):
        cs.read(url, lazy=True, storage_options=s3.options)
