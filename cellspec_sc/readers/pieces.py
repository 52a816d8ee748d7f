"""Cut a delimited text file into pieces at line boundaries and work on them on every core, in file order.

pyarrow's streaming CSV reader parses one block after another, so it keeps one core busy. A file cut at
newlines (the readers, like pyarrow with ``newlines_in_values=False``, allow no line break inside a
value) can be parsed as independent pieces: :func:`ordered_map` hands them to a pool of threads
(pyarrow and numpy release the GIL while they parse and copy) and gives the results back in file order,
with only a few pieces in flight so that memory stays bounded.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
>>> _ = path.write_bytes(b"a,b\\n1,2\\n3,4\\n5,6\\n")
>>> [path.read_bytes()[a:b] for a, b in line_pieces(path, data_start(path), piece_bytes=5)]
[b'1,2\\n3,4\\n', b'5,6\\n']
"""

from __future__ import annotations

import mmap
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import pyarrow as pa

T = TypeVar("T")
R = TypeVar("R")

# Bytes of text per piece: big enough that the per-piece Python work (a few calls per column) is small
# beside the parse, small enough that the pieces in flight cost little memory and both cores get work.
PIECE_BYTES = 1 << 23
# A file smaller than PIECE_BYTES x threads is cut into one piece per thread, none below this: a 4 MB export is
# parsed on both cores (half its wall time), while a tiny file stays one piece parsed in the caller's thread.
MIN_PIECE_BYTES = 1 << 20


def data_start(path: Path) -> int:
    """The byte offset just after the header line."""
    with open(path, "rb") as handle:
        handle.readline()
        return handle.tell()


def data_lines(path: Path) -> int:
    """Lines after the header (a last line without a newline counts): at least the data rows, unless lines end
    in a bare CR."""
    with open(path, "rb") as handle:
        handle.readline()
        lines, last = 0, b"\n"
        while chunk := handle.read(1 << 24):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (last != b"\n")


def line_pieces(path: Path, start: int, piece_bytes: int | None = None) -> list[tuple[int, int]]:
    """Byte ranges ``[a, b)`` covering ``start`` to the end of the file, each ending just after a newline
    (the last one at the end of the file), about ``piece_bytes`` long (default :data:`PIECE_BYTES`, or for a
    smaller file an equal share per thread of :func:`workers`, at least :data:`MIN_PIECE_BYTES`)."""
    size = path.stat().st_size
    if size <= start:
        return []
    piece_bytes = piece_bytes or min(PIECE_BYTES, max(MIN_PIECE_BYTES, -(-(size - start) // workers())))
    if size - start <= piece_bytes:
        return [(start, size)]
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
        pieces, a = [], start
        while a < size:
            newline = view.find(b"\n", min(a + piece_bytes, size) - 1)
            b = size if newline < 0 else newline + 1
            pieces.append((a, b))
            a = b
    return pieces


def piece_bytes(path: Path, span: tuple[int, int]) -> bytes:
    """The bytes of one piece (read with one positioned read)."""
    a, b = span
    with open(path, "rb") as handle:
        return os.pread(handle.fileno(), b - a, a)


def workers() -> int:
    """Threads for parsing: the CPUs this process may use, as pyarrow counts them (``pa.set_cpu_count(1)``
    makes parsing single-threaded)."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)  # not macOS
    return max(1, min(pa.cpu_count(), usable))


def ordered_map(fn: Callable[[T], R], items: Sequence[T], threads: int | None = None) -> Iterator[R]:
    """``fn(item)`` for every item, computed on ``threads`` threads (default :func:`workers`) and yielded in
    the order of ``items``, with at most two per thread in flight. With one thread or one item, runs in the
    caller's thread. When the consumer stops early (an error), the items not started are cancelled."""
    threads = min(threads or workers(), len(items))
    if threads <= 1:
        yield from map(fn, items)
        return
    pending: deque[Future[R]] = deque()
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="cellspec-parse") as pool:
        try:
            for item in items:
                pending.append(pool.submit(fn, item))
                if len(pending) >= 2 * threads:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
