"""Allocating slide-sized matrices whose pages are cheap to touch for the first time.

numpy asks the kernel for transparent huge pages on every large allocation
(``madvise(MADV_HUGEPAGE)``). Where the kernel's THP defrag setting is
``madvise`` (the default of many distributions) and memory is fragmented, for
example by the page cache right after reading a big file, each first touch of
a 2 MB page waits for the kernel to compact memory. Measured on the 2-core
development VM: filling a fresh 1.6 GB ``np.empty`` took 3.2-3.6 s, the same
matrix in an anonymous ``mmap`` (4 kB pages) 0.64 s. Readers and the example
simulator allocate their matrices here; the result is an ordinary writable
C-order ndarray.

Even 4 kB pages cost the kernel about 0.4 s of CPU per GB to hand out the first
time (a fault, a page taken back from the page cache, zeroed). So, as an
allocator would (pyarrow's keeps the buffers of one ``read_table`` for the
next), the mapping of the last large matrix released is kept for the next one
of about its size: a second ``read`` of a slide in the same process writes
into pages it already has. The kept pages are marked ``MADV_FREE``: the kernel
takes them back whenever it needs memory, so keeping them holds nothing that
is needed elsewhere (they still count in the process's resident size until
then). :func:`release_kept` gives them back at once.

>>> m = empty_matrix(3, 2)
>>> m.shape, m.dtype, m.flags.c_contiguous, m.flags.writeable
((3, 2), dtype('float64'), True, True)
"""

from __future__ import annotations

import mmap
import threading
import weakref

import numpy as np

_MAPPED_FROM = 1 << 26  # below 64 MB the allocator is fine
_REUSE_WITHIN = 2  # a kept mapping serves a matrix of at least 1/_REUSE_WITHIN of its size

_kept: list[mmap.mmap] = []  # at most one: the mapping of the last large matrix released
_keeping = threading.RLock()  # re-entrant: a collection inside the lock may release another matrix


def empty_matrix(rows: int, columns: int, order: str = "C") -> np.ndarray:
    """An uninitialised float64 matrix in ``order`` ``"C"`` (rows contiguous) or ``"F"`` (columns
    contiguous); large ones in an anonymous mapping without huge pages (the last one released,
    when it fits).

    >>> empty_matrix(3, 2, order="F").flags.f_contiguous
    True
    """
    nbytes = rows * columns * 8
    if nbytes < _MAPPED_FROM:
        return np.empty((rows, columns), dtype=np.float64, order=order)
    flat = np.frombuffer(_Mapping(_mapping_of(nbytes)), dtype=np.float64, count=rows * columns)
    return flat.reshape(columns, rows).T if order == "F" else flat.reshape(rows, columns)


def release_kept() -> int:
    """Unmap the kept mapping (see the module's text); returns the bytes given back.

    >>> _ = release_kept()
    >>> m = empty_matrix(1 << 12, 1 << 11)  # 64 MB
    >>> del m
    >>> release_kept()
    67108864
    >>> release_kept()
    0
    """
    with _keeping:
        kept = _kept[:]
        _kept.clear()
    released = sum(len(mapping) for mapping in kept)
    for mapping in kept:
        mapping.close()
    return released


class _Mapping:
    """Lends an anonymous mapping to numpy; when the last array on it is gone, the mapping is kept
    for the next large matrix instead of being unmapped."""

    def __init__(self, mapping: mmap.mmap):
        self._mapping = mapping
        weakref.finalize(self, _keep, mapping).atexit = False

    def __buffer__(self, flags: int) -> memoryview:
        return memoryview(self._mapping)

    def __release_buffer__(self, view: memoryview) -> None:
        view.release()


def _mapping_of(nbytes: int) -> mmap.mmap:
    """The kept mapping when it holds ``nbytes`` and is at most ``_REUSE_WITHIN`` times that, else a new one."""
    with _keeping:
        kept = _kept.pop() if _kept else None
    if kept is not None and nbytes <= len(kept) <= _REUSE_WITHIN * nbytes:
        return kept
    if kept is not None:
        kept.close()  # before mapping the new one: the two never add up
    return mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)


def _keep(mapping: mmap.mmap) -> None:
    """Keep a released mapping (its pages lazily freed), unmapping the one kept before."""
    try:
        mapping.madvise(mmap.MADV_FREE)
    except (OSError, ValueError, AttributeError):  # no MADV_FREE here: do not hold pages nobody uses
        mapping.close()
        return
    with _keeping:
        older = _kept[:]
        _kept[:] = [mapping]
    for other in older:
        other.close()
