"""A Parquet file encoded in memory, in a buffer each thread keeps and reuses, for writers that hash and write
the bytes themselves.

``pyarrow.parquet.ParquetWriter`` hands a Python file object every piece it writes
as a new ``bytes`` (a copy: for a 100-feature row group, a hundred pieces of about
1 MB). Where malloc gives large blocks back to the system at once, as in dask's
worker processes (``MALLOC_TRIM_THRESHOLD_``), each of those copies is fresh
memory: a page fault and the zeroing of every page, about as much kernel time as
the encoding's own. :func:`encoded_parquet` encodes into a native buffer instead
(``pyarrow.FixedSizeBufferWriter``) that the thread keeps for its next file, so
after the first file no page is new; the caller then hashes and writes the bytes
(:class:`~cellspec_sc.io.hashing.HashingFile`). A file that does not fit gets a
bigger buffer and is encoded again. A new buffer has room for a file a quarter
bigger than the one it is made for: the parts of a cohort differ by a few bytes,
and a buffer that grew by those bytes would be all new pages again (on the
2-core VM, 26,000 page faults and 0.07-0.4 s of kernel time per 130 MB part, up to
7 times per worker in a 40-directory write). The memory this costs: the thread
keeps one buffer of about its largest file until it ends (or
:func:`release_buffer`); the room beyond it is address space, no memory, until
a file uses it.

>>> import pyarrow as pa, pyarrow.parquet as pq
>>> view = encoded_parquet(pa.table({"id": ["a", "b"], "v": [1.5, None]}), use_dictionary=["id"])
>>> bytes(view[:4]), bytes(view[-4:])
(b'PAR1', b'PAR1')
>>> pq.read_table(pa.BufferReader(bytes(view))).column("v").to_pylist()
[1.5, None]
"""

from __future__ import annotations

import mmap
import threading
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

_MARGIN = 1 << 20  # footer, page headers, statistics of a small table
ROOM = 1.25  # a new buffer holds a file this much bigger than the one it is made for
_kept = threading.local()


def encoded_parquet(table: pa.Table, **options: Any) -> memoryview:
    """``table`` as one Parquet file of one row group (``ParquetWriter(..., **options)``), as a view of this
    thread's buffer: valid until this thread's next call (copy it to keep it)."""
    need = int(table.nbytes * 1.25) + _MARGIN  # snappy may grow incompressible data by up to 1/6
    while True:
        buffer = _buffer(need)
        sink = pa.FixedSizeBufferWriter(buffer)
        try:
            with pq.ParquetWriter(sink, table.schema, **options) as writer:
                writer.write_table(table, row_group_size=max(table.num_rows, 1))
        except OSError:  # a write into memory only fails when it does not fit
            if len(buffer) > 4 * need:
                raise
            need = 2 * len(buffer)
            continue
        return memoryview(buffer)[:sink.tell()]


def release_buffer() -> None:
    """Give this thread's buffer back to the system (views of it stay valid while they exist)."""
    _kept.__dict__.pop("buffer", None)


def _buffer(size: int) -> pa.Buffer:
    """This thread's buffer, replaced by one of ``ROOM`` x ``size`` bytes (page aligned) when smaller than
    ``size``."""
    buffer = getattr(_kept, "buffer", None)
    if buffer is None or len(buffer) < size:
        release_buffer()
        buffer = _kept.buffer = pa.py_buffer(mmap.mmap(-1, int(size * ROOM)))
    return buffer
