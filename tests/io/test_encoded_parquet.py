"""Parquet files encoded into a buffer each thread reuses: the bytes are the file pyarrow would write, a file
bigger than the first guess is encoded again into a bigger buffer, and the next file reuses the buffer."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cellspec_sc.io import _parquet as encoded
from cellspec_sc.io import encoded_parquet
from cellspec_sc.io._parquet import release_buffer


def _table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    values = rng.normal(size=rows)
    values[::7] = np.nan
    return pa.table({"cell_id": [f"c{i:06d}" for i in range(rows)],
                     "v": pa.array(values, mask=np.arange(rows) % 5 == 0)})


def _address(view: memoryview) -> int:
    return pa.py_buffer(view).address


def test_the_bytes_are_the_file_pyarrow_writes_and_read_back_equal(tmp_path):
    table = _table(20_000, 1)
    options = {"use_dictionary": ["cell_id"], "write_statistics": ["cell_id"],
               "compression": {"cell_id": "snappy", "v": "none"}}
    view = encoded_parquet(table, **options)
    with pq.ParquetWriter(tmp_path / "theirs.parquet", table.schema, **options) as writer:
        writer.write_table(table, row_group_size=table.num_rows)
    assert bytes(view) == (tmp_path / "theirs.parquet").read_bytes()
    back = pq.read_table(pa.BufferReader(bytes(view)))
    assert back.column("cell_id").equals(table.column("cell_id")) and back.column("v").null_count == 4_000
    ours, theirs = (t.column("v").to_numpy(zero_copy_only=False) for t in (back, table))  # NA as NaN
    assert np.array_equal(ours, theirs, equal_nan=True) and np.isnan(ours).sum() == 4_000 + 2_286
    meta = pq.ParquetFile(pa.BufferReader(bytes(view))).metadata
    assert meta.num_row_groups == 1
    assert [meta.row_group(0).column(j).compression for j in range(2)] == ["SNAPPY", "UNCOMPRESSED"]


def test_a_file_bigger_than_the_first_guess_is_encoded_again_into_a_bigger_buffer(monkeypatch):
    release_buffer()
    monkeypatch.setattr(encoded, "_MARGIN", 0)  # a 3-row table: the footer alone is bigger than 1.25x its data
    table = pa.table({"v": [1.0, 2.0, 3.0]})
    view = encoded_parquet(table)
    assert len(view) > 1.25 * table.nbytes
    assert pq.read_table(pa.BufferReader(bytes(view))).equals(table)


def test_the_next_file_of_the_thread_reuses_its_buffer_and_another_thread_has_its_own():
    release_buffer()
    first = encoded_parquet(_table(5_000, 2))
    address, content = _address(first), bytes(first)
    first.release()
    second = encoded_parquet(_table(5_000, 3))
    assert _address(second) == address and bytes(second) != content  # same memory, the new file
    elsewhere = []
    thread = threading.Thread(target=lambda: elsewhere.append(_address(encoded_parquet(_table(5_000, 4)))))
    thread.start()
    thread.join()
    assert elsewhere[0] != address
    second.release()
    bigger = encoded_parquet(_table(50_000, 5))  # does not fit: a new, bigger buffer
    assert _address(bigger) != address and pq.read_table(pa.BufferReader(bytes(bigger))).num_rows == 50_000


def test_a_new_buffer_has_room_for_a_slightly_bigger_file_so_the_next_parts_do_not_fault_in_new_pages():
    release_buffer()
    first = encoded_parquet(_table(40_000, 6))
    address = _address(first)
    first.release()
    assert len(encoded._kept.buffer) == int((int(_table(40_000, 6).nbytes * 1.25) + encoded._MARGIN) * encoded.ROOM)
    for rows in (40_100, 44_000, 46_000):  # a few bytes to 15 % more than the first: the same memory
        view = encoded_parquet(_table(rows, 7))
        assert _address(view) == address and pq.read_table(pa.BufferReader(bytes(view))).num_rows == rows
        view.release()
    much = encoded_parquet(_table(80_000, 8))  # twice as big: a new buffer
    assert _address(much) != address and pq.read_table(pa.BufferReader(bytes(much))).num_rows == 80_000
