"""A file kept as the pieces it was fetched in reads as the whole file would, wherever the reads fall."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from cellspec_sc.cohort._members import HeldFile


def held(data: bytes, cuts: list[int]) -> HeldFile:
    bounds = [0, *sorted(set(c for c in cuts if 0 < c < len(data))), len(data)]
    kept = HeldFile(len(data))
    for start, end in zip(bounds[:-1], bounds[1:], strict=True):
        kept.add(start, data[start:end])
    return kept


@settings(max_examples=200, deadline=None)
@given(data=st.binary(min_size=0, max_size=300), cuts=st.lists(st.integers(0, 300), max_size=8),
       reads=st.lists(st.tuples(st.integers(0, 320), st.integers(-1, 320)), max_size=10))
def test_reads_at_any_offset_and_length_give_the_bytes_of_the_whole_file(data, cuts, reads):
    reader, plain = held(data, cuts).open(), io.BytesIO(data)
    for offset, length in reads:
        assert reader.seek(offset) == plain.seek(offset)
        assert bytes(reader.read(length)) == plain.read(length)
        assert reader.tell() == plain.tell()
    if len(data) >= 3:  # from the end, as pyarrow finds the footer
        assert reader.seek(-3, 2) == plain.seek(-3, 2)
        assert bytes(reader.read()) == plain.read()


def test_pyarrow_decodes_a_parquet_file_from_its_pieces_as_from_the_whole():
    rng = np.random.default_rng(7)
    table = pa.table({f"f{j}": rng.normal(size=5_000) for j in range(12)})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=1_000)
    data = sink.getvalue().to_pybytes()
    handle = pq.ParquetFile(held(data, [len(data) // 7 * k + 3 for k in range(1, 7)]).open(), pre_buffer=False)
    assert handle.metadata.num_row_groups == 5
    assert handle.read_row_group(3, columns=["f2", "f9"]).equals(table.slice(3_000, 1_000).select(["f2", "f9"]))
    assert handle.read().equals(table)
