"""X as the measurement matrix: a dense view, and the fingerprints ``to_anndata`` records of the matrix and of
every table column, so that ``from_anndata`` can tell what changed since.

>>> dense(np.eye(2)).sum()
np.float64(2.0)
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import xxhash

from cellspec_sc.errors import InputError
from cellspec_sc.model.digest import column_digest
from cellspec_sc.progress import progress
from cellspec_sc.validation.matrix_stats import row_blocks

T = TypeVar("T")


def dense(matrix: Any) -> np.ndarray:
    """A sparse or array-like matrix as a numpy array (no copy when it is one already)."""
    if hasattr(matrix, "toarray"):
        return matrix.toarray()
    return np.asarray(matrix)

FINGERPRINT = "xxh3_128x2"  # what to_anndata records: X's two row halves digested at once, on two cores
_PARALLEL_BYTES = 1 << 24  # the parts of a matrix at least this big are digested in threads at once


def measurement_fingerprint(matrix: Any, algorithm: str = FINGERPRINT) -> str:
    """A digest of the float64 values of a matrix (C order) and its shape: detects ``X`` changed in place.

    - ``"xxh3_128x<N>"`` gives ``"xxh3_128x<N>:<hex>"``: the xxh3-128 of the shape and of the xxh3-128 of
      each of N row parts (rows ``i * n // N`` to ``(i + 1) * n // N``), digested at once in threads
      (xxhash lets go of the GIL). What :func:`~cellspec_sc.to_anndata` records, with N = 2.
    - ``"xxh3_128"`` gives ``"xxh3_128:<hex>"``, one xxh3-128 of the shape and all values in a row:
      what versions before recorded.
    - ``"sha256"`` gives the bare hex SHA-256 of the same bytes, recorded earlier still as
      ``measurements_sha256``.

    A C-contiguous float64 matrix (or part) is digested in one call, without a copy; any other
    (another layout or dtype, a view with strides, a dask array, never loaded whole) a row block at a
    time. A sparse matrix is made dense first.

    >>> m = np.arange(6.0).reshape(3, 2)
    >>> measurement_fingerprint(m)[:11], measurement_fingerprint(m) == measurement_fingerprint(np.asfortranarray(m))
    ('xxh3_128x2:', True)
    """
    if hasattr(matrix, "toarray"):
        matrix = dense(matrix)
    shape = np.asarray(matrix.shape, dtype=np.int64).tobytes()
    parts = split_parts(algorithm)
    if parts:
        return f"{algorithm}:{xxhash.xxh3_128(shape + b''.join(_part_digests(matrix, parts))).hexdigest()}"
    if algorithm not in ("xxh3_128", "sha256"):
        raise InputError(f"X's fingerprint is recorded as {algorithm!r}, which this version of cellspec_sc "
                         f"does not compute (it knows {FINGERPRINT!r}, 'xxh3_128x<N>', 'xxh3_128', 'sha256')")
    digest = xxhash.xxh3_128(shape) if algorithm == "xxh3_128" else hashlib.sha256(shape)
    _feed(digest, matrix)
    return f"xxh3_128:{digest.hexdigest()}" if algorithm == "xxh3_128" else digest.hexdigest()


def split_parts(algorithm: str) -> int:
    """The number of row parts an ``"xxh3_128x<N>"`` fingerprint names (0 for any other algorithm).

    >>> split_parts("xxh3_128x2"), split_parts("xxh3_128"), split_parts("sha256")
    (2, 0, 0)
    """
    head, _, count = algorithm.partition("xxh3_128x")
    return int(count) if not head and count.isdigit() and int(count) > 0 else 0


def recorded_algorithm(fingerprint: str) -> str:
    """The algorithm of a recorded ``"<algorithm>:<hex>"`` fingerprint.

    >>> recorded_algorithm("xxh3_128x2:00ff")
    'xxh3_128x2'
    """
    return str(fingerprint).partition(":")[0]


def _part_digests(matrix: Any, parts: int) -> list[bytes]:
    """The xxh3-128 of each of ``parts`` row parts, in threads at once for a numpy matrix of
    :data:`_PARALLEL_BYTES` or more (a dask array computes its chunks with its own threads)."""
    bounds = [i * matrix.shape[0] // parts for i in range(parts + 1)]
    pieces = [matrix[start:stop] for start, stop in itertools.pairwise(bounds)]
    if parts == 1 or not isinstance(matrix, np.ndarray) or matrix.nbytes < _PARALLEL_BYTES:
        return [_feed(xxhash.xxh3_128(), piece).digest() for piece in pieces]
    later = [in_thread(lambda p=piece: _feed(xxhash.xxh3_128(), p).digest()) for piece in pieces[1:]]
    return [_feed(xxhash.xxh3_128(), pieces[0]).digest(), *(part.result() for part in later)]


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


def fingerprint_in_background(matrix: Any, algorithm: str = FINGERPRINT) -> Future[str]:
    """:func:`measurement_fingerprint` of ``matrix`` computed in threads while the caller goes on:
    ``.result()`` gives it, or raises what it raised. The caller must not change ``matrix`` before the
    result is in.

    >>> fingerprint_in_background(np.zeros((2, 2))).result() == measurement_fingerprint(np.zeros((2, 2)))
    True
    """
    return in_thread(lambda: measurement_fingerprint(matrix, algorithm))


def holds_written_values(matrix: Any, meta: Mapping[str, Any], fingerprint: Future[str] | None = None) -> bool:
    """Whether ``matrix`` has the fingerprint ``to_anndata`` recorded, by the algorithm of the record
    (also a record's older SHA-256). ``fingerprint``: the matrix's own by that algorithm, already started
    (:func:`fingerprint_in_background`)."""
    if "measurements_fingerprint" in meta:
        recorded = str(meta["measurements_fingerprint"])
        mine = fingerprint.result() if fingerprint is not None else \
            measurement_fingerprint(matrix, recorded_algorithm(recorded))
        return mine == recorded
    return measurement_fingerprint(matrix, "sha256") == meta.get("measurements_sha256")


def is_dask(matrix: Any) -> bool:
    """Whether ``matrix`` is a dask array (``cellspec_sc.read(path, lazy=True)``)."""
    return type(matrix).__module__.startswith("dask.")


def column_fingerprints(frame: pd.DataFrame, like: Mapping[str, str] | None = None) -> dict[str, str]:
    """A digest of each column's values (``"xxh3:<hex>"``, :func:`cellspec_sc.model.digest.column_digest`:
    NA-aware, doubles by their bits), to detect edited columns.

    ``like``: fingerprints recorded earlier; a column recorded in the older form (SHA-256 of pandas'
    row hashes, without the ``xxh3:`` prefix) is fingerprinted that way, so records written before
    still compare.

    >>> column_fingerprints(pd.DataFrame({"a": [1.0]}))["a"][:5]
    'xxh3:'
    """
    like = like or {}
    out = {}
    for name in frame.columns:
        column = frame[name]
        if str(like.get(str(name), "xxh3:")).startswith("xxh3:"):
            out[str(name)] = "xxh3:" + column_digest(column)
        else:
            hashes = pd.util.hash_pandas_object(column, index=False).to_numpy(dtype=np.uint64)
            out[str(name)] = hashlib.sha256(hashes.tobytes()).hexdigest()[:32]
    return out