"""The fingerprint of ``X`` that ``to_anndata`` records in ``uns["cellspec"]``, so that ``from_anndata`` can tell an
``X`` changed in place (``sc.pp.log1p``, ``adata.X *= 2``, one value) from the one it wrote.

Every value counts (a sample would miss one edited value), so it is a digest at the speed of memory: xxh3-128 of
the float64 values in C order. What is recorded now, ``"xxh3_128x4:<hex>"``, digests four row parts separately so
that two threads can share the work (xxhash lets go of the GIL while it digests); earlier records
(``"xxh3_128:<hex>"``, one digest of everything in a row, and the bare SHA-256 of ``measurements_sha256``) are
computed by their own algorithm when they are checked.

>>> m = np.arange(6.0).reshape(3, 2)
>>> holds_written_values(m, {"measurements_fingerprint": measurement_fingerprint(m, "xxh3_128")})
True
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

import numpy as np
import xxhash

from cellspec_sc.errors import InputError
from cellspec_sc.model import row_blocks
from cellspec_sc.progress import progress

T = TypeVar("T")

FINGERPRINT = "xxh3_128x4"  # what to_anndata records: four row parts, digested by two threads as they come free
SHARED_BYTES = 1 << 24  # a numpy matrix this big has its parts shared out between two threads


def measurement_fingerprint(matrix: Any, algorithm: str = FINGERPRINT) -> str:
    """A digest of the float64 values of a matrix (C order) and its shape: detects ``X`` changed in place.

    - ``"xxh3_128x<N>"`` gives ``"xxh3_128x<N>:<hex>"``: the xxh3-128 of the shape (int64) followed by the
      xxh3-128 digests of N row parts (rows ``i * n // N`` up to ``(i + 1) * n // N``). What
      :func:`~cellspec_sc.to_anndata` records, with N = 4.
    - ``"xxh3_128"`` gives ``"xxh3_128:<hex>"``, one xxh3-128 of the shape and all values in a row:
      what versions before recorded.
    - ``"sha256"`` gives the bare hex SHA-256 of the same bytes, recorded earlier still as
      ``measurements_sha256``.

    A C-contiguous float64 matrix (or part) is digested in one call, without a copy; any other
    (another layout or dtype, a view with strides, a dask array, never loaded whole) a row block at a
    time. A sparse matrix is made dense first.

    >>> m = np.arange(6.0).reshape(3, 2)
    >>> measurement_fingerprint(m)[:11], measurement_fingerprint(m) == measurement_fingerprint(np.asfortranarray(m))
    ('xxh3_128x4:', True)
    """
    if hasattr(matrix, "toarray"):
        matrix = matrix.toarray()
    if split_parts(algorithm):
        return Fingerprinting(matrix, algorithm).result() if shared_out(matrix) else \
            RowParts(matrix, algorithm).digest_alone()
    if algorithm not in ("xxh3_128", "sha256"):
        raise InputError(f"X's fingerprint is recorded as {algorithm!r}, which this version of cellspec_sc "
                         f"does not compute (it knows {FINGERPRINT!r}, 'xxh3_128x<N>', 'xxh3_128', 'sha256')")
    shape = _shape_bytes(matrix)
    digest = xxhash.xxh3_128(shape) if algorithm == "xxh3_128" else hashlib.sha256(shape)
    _feed(digest, matrix)
    return f"xxh3_128:{digest.hexdigest()}" if algorithm == "xxh3_128" else digest.hexdigest()


def split_parts(algorithm: str) -> int:
    """The number of row parts an ``"xxh3_128x<N>"`` fingerprint names (0 for any other algorithm).

    >>> split_parts("xxh3_128x4"), split_parts("xxh3_128"), split_parts("sha256")
    (4, 0, 0)
    """
    head, _, count = algorithm.partition("xxh3_128x")
    return int(count) if not head and count.isdigit() and int(count) > 0 else 0


def recorded_algorithm(fingerprint: str) -> str:
    """The algorithm of a recorded ``"<algorithm>:<hex>"`` fingerprint.

    >>> recorded_algorithm("xxh3_128x4:00ff")
    'xxh3_128x4'
    """
    return str(fingerprint).partition(":")[0]


def shared_out(matrix: Any) -> bool:
    """Whether the row parts of ``matrix`` are shared out between two threads: a numpy matrix of
    :data:`SHARED_BYTES` or more (a dask array computes its chunks with its own threads)."""
    return isinstance(matrix, np.ndarray) and matrix.nbytes >= SHARED_BYTES


class RowParts:
    """The row parts of an ``"xxh3_128x<N>"`` fingerprint, each digested once by whichever thread takes it."""

    def __init__(self, matrix: Any, algorithm: str):
        parts = split_parts(algorithm)
        bounds = [i * matrix.shape[0] // parts for i in range(parts + 1)]
        self.pieces = [matrix[start:stop] for start, stop in itertools.pairwise(bounds)]
        self.digests: list[bytes] = [b""] * parts
        self.head = f"{algorithm}:"
        self.shape = _shape_bytes(matrix)
        self._next = itertools.count()  # next() of a count is atomic: no part is taken twice

    def take(self) -> None:
        """Digest the parts no thread has taken yet, one at a time, until none is left."""
        while (i := next(self._next)) < len(self.pieces):
            self.digests[i] = _feed(xxhash.xxh3_128(), self.pieces[i]).digest()

    def fingerprint(self) -> str:
        """The fingerprint, once every thread that takes parts is done."""
        return self.head + xxhash.xxh3_128(self.shape + b"".join(self.digests)).hexdigest()

    def digest_alone(self) -> str:
        self.take()
        return self.fingerprint()


class Fingerprinting:
    """:func:`measurement_fingerprint` under way in a background thread while the caller goes on;
    :meth:`result` gives it, or raises what it raised. The caller must not change ``matrix`` before.

    The row parts of a large numpy matrix are taken by whichever thread is free: the background thread
    from the start, and the caller too once it asks for the result. So while the caller works (restoring
    obs and var) it keeps a core to itself, and once it waits both cores digest what is left.

    >>> Fingerprinting(np.zeros((2, 2))).result() == measurement_fingerprint(np.zeros((2, 2)))
    True
    """

    def __init__(self, matrix: Any, algorithm: str = FINGERPRINT):
        self._parts = RowParts(matrix, algorithm) if split_parts(algorithm) and shared_out(matrix) else None
        work = self._parts.take if self._parts is not None else lambda: measurement_fingerprint(matrix, algorithm)
        self._worker = in_thread(work)

    def result(self) -> str:
        if self._parts is None:
            return self._worker.result()
        self._parts.take()
        self._worker.result()  # the part it is digesting, or what it raised
        return self._parts.fingerprint()


def holds_written_values(matrix: Any, meta: Mapping[str, Any], fingerprint: Fingerprinting | None = None) -> bool:
    """Whether ``matrix`` has the fingerprint ``to_anndata`` recorded, by the algorithm of the record
    (also a record's older SHA-256). ``fingerprint``: the matrix's own by that algorithm, already started."""
    if "measurements_fingerprint" in meta:
        recorded = str(meta["measurements_fingerprint"])
        mine = fingerprint.result() if fingerprint is not None else \
            measurement_fingerprint(matrix, recorded_algorithm(recorded))
        return mine == recorded
    return measurement_fingerprint(matrix, "sha256") == meta.get("measurements_sha256")


def in_thread(work: Callable[[], T], name: str = "cellspec-fingerprint") -> Future[T]:
    """``work()`` run in a new thread while the caller goes on: ``.result()`` gives what it returned,
    or raises what it raised.

    >>> in_thread(lambda: 6 * 7).result()
    42
    """
    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(work())
        except BaseException as err:  # handed to the caller by .result()
            future.set_exception(err)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


def _shape_bytes(matrix: Any) -> bytes:
    return np.asarray(matrix.shape, dtype=np.int64).tobytes()


def _feed(digest: Any, matrix: Any) -> Any:
    """``digest`` updated with the float64 bytes of ``matrix`` in C order, and returned.

    Bytes that lie so in memory go in one call: a thread that digested block by block beside a busy
    caller waited for the GIL after every block (up to 5 ms each), which cost more than the digest."""
    if isinstance(matrix, np.ndarray) and matrix.dtype == np.float64 and matrix.flags.c_contiguous:
        digest.update(memoryview(matrix.reshape(-1).view(np.uint8)))
        return digest
    with progress(matrix.shape[0], "fingerprinting the measurements", size=np.prod(matrix.shape)) as bar:
        for _, block in row_blocks(matrix):
            block = np.ascontiguousarray(block, dtype=np.float64)
            digest.update(memoryview(block.reshape(-1).view(np.uint8)))
            bar.update(block.shape[0])
    return digest
