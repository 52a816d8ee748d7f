"""Allocating slide-sized matrices whose pages are cheap to touch for the first time.

numpy asks the kernel for transparent huge pages on every large allocation
(``madvise(MADV_HUGEPAGE)``). Where the kernel's THP defrag setting is
``madvise`` (the default of many distributions) and memory is fragmented, for
example by the page cache right after reading a big file, each first touch of
a 2 MB page waits for the kernel to compact memory. Measured on the 2-core
development VM: filling a fresh 1.6 GB ``np.empty`` took 3.2-3.6 s, the same
matrix in an anonymous ``mmap`` (4 kB pages) 0.64 s. Readers and the example
simulator allocate their matrices here; the result is an ordinary writable
C-order ndarray (its ``base`` is the mapping, released with the array).

>>> m = empty_matrix(3, 2)
>>> m.shape, m.dtype, m.flags.c_contiguous, m.flags.writeable
((3, 2), dtype('float64'), True, True)
"""

from __future__ import annotations

import mmap

import numpy as np

_MAPPED_FROM = 1 << 26  # below 64 MB the allocator is fine


def empty_matrix(rows: int, columns: int, order: str = "C") -> np.ndarray:
    """An uninitialised float64 matrix in ``order`` ``"C"`` (rows contiguous) or ``"F"`` (columns
    contiguous); large ones in an anonymous mapping without huge pages.

    >>> empty_matrix(3, 2, order="F").flags.f_contiguous
    True
    """
    nbytes = rows * columns * 8
    if nbytes < _MAPPED_FROM:
        return np.empty((rows, columns), dtype=np.float64, order=order)
    mapping = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    flat = np.frombuffer(mapping, dtype=np.float64)
    return flat.reshape(columns, rows).T if order == "F" else flat.reshape(rows, columns)
