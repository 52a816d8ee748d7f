"""The record ``to_anndata`` keeps in ``uns["cellspec"]``: one versioned codec, :func:`encode` and :func:`decode`.

AnnData's own slots hold the cells (``obs``), the dictionary (``var``) and the measurements (``X``). Everything
else a cellspec needs to come back exactly is this record:

| key | value |
| --- | --- |
| ``format_version`` | ``"MAJOR.MINOR"`` of this layout (not in version 1.0 records) |
| ``spec_version`` | the cellspec spec version of the object |
| ``provenance`` | JSON text |
| ``images``, ``channels``, ``adjacency`` | tables as JSON text (``adjacency`` only when the object has one) |
| ``meta`` | JSON text: spec types, feature ids, the shape and fingerprint of ``X``, fingerprints of the columns |
| ``measurements_sample`` | every value of a sample of cells and their obs names (not for a lazy ``X``) |

Versions, and what each may hold (this module is the one place that knows them):

- **1.0**, written before ``format_version`` was (a record without it is 1.0): ``meta`` also holds
  ``bridge_version: "1"``. ``X``'s fingerprint is ``measurements_fingerprint`` as ``"xxh3_128x<N>:<hex>"`` or
  ``"xxh3_128:<hex>"``, or, in the earliest records, the bare SHA-256 hex of ``measurements_sha256``; a column's
  fingerprint is ``"xxh3:<hex>"`` or, earliest, 32 bare hex digits (SHA-256 of pandas' row hashes); the sample
  may be missing.
- **1.1**: ``format_version`` first, no ``bridge_version``; ``X``'s fingerprint is
  ``"xxh3_128x<N>:<hex>"`` (N = 4 is written; any N up to :data:`MOST_PARTS` is computed by its definition) or
  ``"xxh3_128:<hex>"``, a column's ``"xxh3:<hex>"``.
- **1.2**, written now: as 1.1, and ``meta`` also holds ``record_fingerprints`` (``{field: "xxh3:<hex>"}`` of the
  text of ``spec_version``, ``provenance``, ``images``, ``channels`` and ``adjacency``, so that an edit of the
  record itself is noticed) and ``spatial_fingerprint`` (``"xxh3:<hex>"`` of ``obsm["spatial"]``, or None);
  ``meta_fingerprint`` beside ``meta`` is the ``"xxh3:<hex>"`` of its text.

A record of a newer major version is refused, naming both versions.

Every value is JSON text (or a plain array) because anndata turns string columns into categoricals, refuses
``None`` in ``uns`` and returns zarr strings as numpy ``StringDType``: a DataFrame or nested dict in ``uns`` is
not safe, and every array costs a zarr file. JSON keeps ``None``, nesting, key order and every double (``repr``
round-trips, ``Infinity`` allowed); ``ensure_ascii`` keeps the text plain ASCII whatever the ids hold. A table is
the JSON object ``{"columns": [...], "types": [...], "data": [[...], ...]}`` with one list of values per column;
NA is ``null`` (for doubles too: NA is how the spec holds NaN).

X's fingerprint counts every value (a sample would miss one edited value), so it is a digest at the speed of
memory: xxh3-128 of the float64 values in C order. ``"xxh3_128x4"`` digests four row parts separately so that two
threads can share the work (xxhash lets go of the GIL while it digests).

>>> import cellspec_sc as cs
>>> x = cs.example()
>>> record = encode(x, Fingerprinting(x.measurements))
>>> record["format_version"], decode(record, where="uns['cellspec']").version
('1.2', (1, 2))
>>> decode_table(encode_table(x.images, "images"), "images").equals(x.images)
True
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import xxhash

from cellspec_sc._background import in_background
from cellspec_sc._codec import RecordFormat
from cellspec_sc.errors import InputError
from cellspec_sc.model import column_digest, row_blocks
from cellspec_sc.progress import progress
from cellspec_sc.spec import SPEC_TYPES, canonical_frame, column_spec_types

if TYPE_CHECKING:
    from cellspec_sc.model import CellSpec

UNS_KEY = "cellspec"
SAMPLE_KEY = "measurements_sample"
RECORD = RecordFormat("the AnnData record of cellspec_sc", "1.2")
RECORD_FIELDS = ("spec_version", "provenance", "images", "channels", "adjacency")  # fingerprinted from 1.2 on
META_FINGERPRINT = "meta_fingerprint"  # of the text of meta itself, beside it (from 1.2 on)
LEGACY = "1.0"  # records written before format_version was

FINGERPRINT = "xxh3_128x4"  # what to_anndata records: four row parts, digested by two threads as they come free
MOST_PARTS = 64  # a record naming more row parts is damaged (4 are written): never make a list of a crafted count
SHARED_BYTES = 1 << 24  # a numpy matrix this big has its parts shared out between two threads
_SPLIT = re.compile(r"xxh3_128x([1-9][0-9]{0,5})")
_COLUMN_PREFIX = "xxh3:"
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")  # X's in version 1.0
_SHA256_COLUMN = re.compile(r"[0-9a-f]{32}")  # a column's in version 1.0: the first half of the hex digest
_META_KEYS = ("cells_types", "dictionary_types", "cells_fingerprints", "dictionary_fingerprints", "feature_ids",
              "measurements_shape")


# -- encode ------------------------------------------------------------------------------------------------------
def encode(x: CellSpec, fingerprint: Fingerprinting, sample: Sample | None = None,
           spatial: np.ndarray | None = None) -> dict[str, Any]:
    """The record of ``x`` (current version, ``format_version`` first), for ``uns["cellspec"]``.

    Parameters
    ----------
    x
        The object converted; ``x.measurements`` is the ``X`` written.
    fingerprint
        ``X``'s fingerprint under way (started before, so that it runs while the columns are fingerprinted).
    sample
        Every value of a sample of cells (:func:`~cellspec_sc.bridges.anndata._matrix.take_sample`); None for a
        lazy ``X``, which is never loaded to sample it.
    spatial
        ``obsm["spatial"]`` as written (its fingerprint is recorded).

    Returns
    -------
    dict
        Plain values anndata writes to ``.h5ad`` and ``.zarr`` and reads back unchanged.
    """
    meta = {
        "cells_types": dict(column_spec_types(x.cells, "cells")),
        "dictionary_types": dict(column_spec_types(x.dictionary, "dictionary")),
        "cells_fingerprints": column_fingerprints(x.cells),
        "dictionary_fingerprints": column_fingerprints(x.dictionary),
        "feature_ids": x.feature_ids,
        "measurements_shape": list(x.measurements.shape),
    }
    meta["measurements_fingerprint"] = fingerprint.result()
    record: dict[str, Any] = {
        "spec_version": str(x.spec_version),
        "provenance": to_json_text(x.provenance),
        "meta": to_json_text(meta),
        "images": encode_table(x.images, "images"),
        "channels": encode_table(x.channels, "channels"),
    }
    if x.adjacency is not None:
        record["adjacency"] = encode_table(x.adjacency, "adjacency")
    meta["record_fingerprints"] = {key: text_fingerprint(record[key]) for key in RECORD_FIELDS if key in record}
    meta["spatial_fingerprint"] = None if spatial is None else array_fingerprint(spatial)
    record["meta"] = to_json_text(meta)
    record[META_FINGERPRINT] = text_fingerprint(record["meta"])
    if sample is not None:
        record[SAMPLE_KEY] = {"obs_names": sample.obs_names, "values": sample.values}
    return RECORD.stamp(record)


def text_fingerprint(text: Any) -> str:
    """``"xxh3:<hex>"`` of a record field's text (zarr gives numpy strings back: compared as text).

    >>> text_fingerprint("abc") == text_fingerprint(np.str_("abc"))
    True
    """
    return _COLUMN_PREFIX + xxhash.xxh3_128(str(text).encode("utf-8", "surrogatepass")).hexdigest()


def array_fingerprint(array: Any) -> str:
    """``"xxh3:<hex>"`` of a numeric array's shape and float64 values in C order (``obsm["spatial"]``).

    >>> array_fingerprint(np.zeros((2, 2))) == array_fingerprint(np.zeros((2, 2), dtype=np.float32))
    True
    """
    values = np.ascontiguousarray(np.asarray(array, dtype=np.float64))
    return _COLUMN_PREFIX + xxhash.xxh3_128(_shape_bytes(values) + values.tobytes()).hexdigest()


def cohort_uns(images: pd.DataFrame, channels: pd.DataFrame, provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The ``uns`` of a cohort's AnnData: its images, channels and provenance as JSON text under ``"cellspec"``.

    Parameters
    ----------
    images, channels
        The cohort's tables.
    provenance
        The cohort's provenance (a JSON-like mapping).

    Returns
    -------
    dict
        ``{"cellspec": {"images": ..., "channels": ..., "cohort": ...}}``.

    Examples
    --------
    >>> import cellspec_sc as cs
    >>> x = cs.example()
    >>> sorted(cohort_uns(x.images, x.channels, {"members": []})["cellspec"])
    ['channels', 'cohort', 'images']
    """
    return {UNS_KEY: {"images": encode_table(images, "images"), "channels": encode_table(channels, "channels"),
                      "cohort": to_json_text(provenance)}}


# -- decode ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sample:
    """Every value (float64) of a sample of cells, and their obs names, as ``to_anndata`` wrote them."""

    obs_names: np.ndarray
    values: np.ndarray


@dataclass(frozen=True)
class StoredRecord:
    """A decoded ``uns["cellspec"]``. Its tables and provenance are decoded when asked for (an adjacency table
    is large), so that X's fingerprint is under way meanwhile."""

    version: tuple[int, int]
    spec_version: str
    cells_types: dict[str, str | None]
    dictionary_types: dict[str, str | None]
    cells_fingerprints: dict[str, str]
    dictionary_fingerprints: dict[str, str]
    feature_ids: list[str]
    shape: tuple[int, ...]
    fingerprint: XFingerprint
    sample: Sample | None
    where: str
    raw: Mapping[str, Any]
    record_fingerprints: dict[str, str] = dataclasses.field(default_factory=dict)
    spatial_fingerprint: str | None = None

    def changed_fields(self) -> list[str]:
        """The record's own fields (``images``, ``provenance`` ...) whose text differs from what was written."""
        return [key for key, recorded in self.record_fingerprints.items()
                if key not in self.raw or text_fingerprint(self.raw[key]) != recorded]

    def table(self, key: str) -> pd.DataFrame:
        """The stored table ``key`` (``images``, ``channels``) with canonical dtypes."""
        if key not in self.raw:
            raise InputError(f"{self.where} has no table {key!r}; it was not written by cellspec_sc.to_anndata")
        return decode_table(self.raw[key], key)

    def adjacency(self) -> pd.DataFrame | None:
        """The stored adjacency table, None when the object had none."""
        return self.table("adjacency") if "adjacency" in self.raw else None

    def provenance(self) -> Any:
        """The stored provenance."""
        return _json_value(self.raw, "provenance", self.where)


def decode(record: Any, *, where: str) -> StoredRecord:
    """The record ``to_anndata`` wrote, of any version this package reads.

    Parameters
    ----------
    record
        ``adata.uns["cellspec"]``.
    where
        Names the record in messages (``"uns['cellspec']"``).

    Returns
    -------
    StoredRecord
        Its version and contents; X's fingerprint in the variant its version holds.

    Raises
    ------
    InputError
        The record is damaged or was not written by ``to_anndata``.
    FormatError
        The record is of a newer major version than this package reads.

    Examples
    --------
    >>> decode({"format_version": "2.0"}, where="uns['cellspec']")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    cellspec_sc.errors.FormatError: uns['cellspec']: the AnnData record of cellspec_sc is version 2.0,
    newer than the 1.2 this cellspec_sc reads; ...
    """
    if not isinstance(record, Mapping):
        raise InputError(f"{where} is a {type(record).__name__}, not the dict written by cellspec_sc.to_anndata")
    version = RECORD.version_of(record, where=where, legacy=lambda _: LEGACY)
    if version >= (1, 2) and str(record.get(META_FINGERPRINT, "")) != text_fingerprint(record.get("meta", "")):
        raise InputError(f"{where}['meta'] does not hold the text to_anndata wrote (its fingerprint differs): the "
                         "record is damaged")
    meta = _json_value(record, "meta", where)
    at = f"{where}['meta']"
    missing = [key for key in _META_KEYS if not isinstance(meta, dict) or key not in meta]
    fingerprint_keys = {"measurements_fingerprint", "measurements_sha256"} if version == (1, 0) else \
        {"measurements_fingerprint"}
    if isinstance(meta, dict) and not fingerprint_keys & set(meta):
        missing.append("measurements_fingerprint")
    if missing:
        raise InputError(f"{at} lacks {missing}; it was not written by cellspec_sc.to_anndata")
    return StoredRecord(
        version=version,
        spec_version=str(record.get("spec_version", "")),
        cells_types=known_types(meta["cells_types"], f"{at}['cells_types']"),
        dictionary_types=known_types(meta["dictionary_types"], f"{at}['dictionary_types']"),
        cells_fingerprints=_column_fingerprints(meta["cells_fingerprints"], version, f"{at}['cells_fingerprints']"),
        dictionary_fingerprints=_column_fingerprints(meta["dictionary_fingerprints"], version,
                                                     f"{at}['dictionary_fingerprints']"),
        feature_ids=_feature_ids(meta["feature_ids"], f"{at}['feature_ids']"),
        shape=_shape(meta["measurements_shape"], f"{at}['measurements_shape']"),
        fingerprint=_x_fingerprint(meta, at),
        sample=_sample(record.get(SAMPLE_KEY)),
        where=where,
        raw=record,
        record_fingerprints=_record_fingerprints(meta.get("record_fingerprints", {}), f"{at}['record_fingerprints']"),
        spatial_fingerprint=_optional_fingerprint(meta.get("spatial_fingerprint"), f"{at}['spatial_fingerprint']"),
    )


def _record_fingerprints(stored: Any, where: str) -> dict[str, str]:
    if not isinstance(stored, Mapping) or not all(
            key in RECORD_FIELDS and isinstance(value, str) and value.startswith(_COLUMN_PREFIX)
            for key, value in stored.items()):
        raise InputError(f"{where} is not the fingerprints of {list(RECORD_FIELDS)} written by cellspec_sc: "
                         "the record is damaged")
    return dict(stored)


def _optional_fingerprint(stored: Any, where: str) -> str | None:
    if stored is not None and not (isinstance(stored, str) and stored.startswith(_COLUMN_PREFIX)):
        raise InputError(f"{where} is {str(stored)[:80]!r}, not a fingerprint written by cellspec_sc: the record "
                         "is damaged")
    return stored


def _json_value(record: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in record:
        raise InputError(f"{where} has no {key!r}; it was not written by cellspec_sc.to_anndata")
    try:
        return from_json_text(record[key])
    except ValueError as err:
        raise InputError(f"{where}[{key!r}] is not valid JSON text ({err})") from None
    except RecursionError:
        raise InputError(f"{where}[{key!r}] is nested deeper than Python can read: the record is damaged or "
                         "crafted") from None


def _feature_ids(ids: Any, where: str) -> list[str]:
    if not isinstance(ids, list):
        raise InputError(f"{where} is a {type(ids).__name__}, not the list of feature ids written by cellspec_sc")
    return [str(i) for i in ids]


def _shape(shape: Any, where: str) -> tuple[int, ...]:
    if not isinstance(shape, list) or len(shape) != 2 or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise InputError(f"{where} is {shape!r}, not the [rows, columns] of X written by cellspec_sc")
    return tuple(shape)


def _sample(stored: Any) -> Sample | None:
    """The sample of cells; None when there is none (written before samples were kept, or from a lazy X)."""
    if not isinstance(stored, Mapping) or not {"obs_names", "values"} <= set(stored):
        return None
    return Sample(obs_names=np.asarray(stored["obs_names"]), values=np.asarray(stored["values"]))


# -- X's fingerprint ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class XFingerprint:
    """X's fingerprint as recorded: the algorithm it was computed by, and the text to compare with.

    >>> m = np.arange(6.0).reshape(3, 2)
    >>> XFingerprint("xxh3_128", measurement_fingerprint(m, "xxh3_128")).matches(m)
    True
    """

    algorithm: str
    recorded: str

    def start(self, matrix: Any) -> Fingerprinting:
        """``matrix``'s own fingerprint by this algorithm, under way in the background."""
        return Fingerprinting(matrix, self.algorithm)

    def matches(self, matrix: Any, started: Fingerprinting | None = None) -> bool:
        """Whether ``matrix`` holds the values recorded (``started``: its fingerprint, already under way)."""
        mine = started.result() if started is not None else measurement_fingerprint(matrix, self.algorithm)
        return mine == self.recorded


def _x_fingerprint(meta: Mapping[str, Any], where: str) -> XFingerprint:
    if "measurements_fingerprint" not in meta:  # version 1.0 only (decode checked): the bare SHA-256
        recorded = str(meta["measurements_sha256"])
        if not _SHA256_HEX.fullmatch(recorded):
            raise InputError(f"{where}['measurements_sha256'] is {recorded[:80]!r}, not a SHA-256 hex digest")
        return XFingerprint("sha256", recorded)
    recorded = str(meta["measurements_fingerprint"])
    algorithm = recorded.partition(":")[0]
    if algorithm != "xxh3_128" and not split_parts(algorithm):
        raise InputError(f"X's fingerprint is recorded as {algorithm[:80]!r}, which this version of cellspec_sc does "
                         f"not compute (it knows {FINGERPRINT!r}, 'xxh3_128x<N>' for N up to {MOST_PARTS}, "
                         "'xxh3_128', 'sha256')")
    return XFingerprint(algorithm, recorded)


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
        raise InputError(f"X's fingerprint is recorded as {algorithm[:80]!r}, which this version of cellspec_sc "
                         f"does not compute (it knows {FINGERPRINT!r}, 'xxh3_128x<N>', 'xxh3_128', 'sha256')")
    shape = _shape_bytes(matrix)
    digest = xxhash.xxh3_128(shape) if algorithm == "xxh3_128" else hashlib.sha256(shape)
    _feed(digest, matrix)
    return f"xxh3_128:{digest.hexdigest()}" if algorithm == "xxh3_128" else digest.hexdigest()


def split_parts(algorithm: str) -> int:
    """The number of row parts an ``"xxh3_128x<N>"`` fingerprint names (0 for any other algorithm, and for an N
    beyond :data:`MOST_PARTS`: a crafted count must not make a list of that many parts).

    >>> split_parts("xxh3_128x4"), split_parts("xxh3_128"), split_parts("sha256"), split_parts("xxh3_128x999999")
    (4, 0, 0, 0)
    """
    match = _SPLIT.fullmatch(algorithm)
    return int(match.group(1)) if match and int(match.group(1)) <= MOST_PARTS else 0


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
        """Every part digested by the caller, and the fingerprint."""
        self.take()
        return self.fingerprint()


class Fingerprinting:
    """:func:`measurement_fingerprint` under way in the background while the caller goes on;
    :meth:`result` gives it, or raises what it raised. The caller must not change ``matrix`` before.

    The row parts of a large numpy matrix are taken by whichever thread is free: the background thread
    from the start, and the caller too once it asks for the result. So while the caller works (restoring
    obs and var) it keeps a core to itself, and once it waits both cores digest what is left.

    >>> Fingerprinting(np.zeros((2, 2))).result() == measurement_fingerprint(np.zeros((2, 2)))
    True
    """

    def __init__(self, matrix: Any, algorithm: str = FINGERPRINT):
        self._parts = RowParts(matrix, algorithm) if split_parts(algorithm) and shared_out(matrix) else None
        if self._parts is not None:
            self._worker = in_background(self._parts.take, name="cellspec-fingerprint")
        else:
            self._worker = in_background(measurement_fingerprint, matrix, algorithm, name="cellspec-fingerprint")

    def result(self) -> str:
        """The fingerprint (the caller digests the parts left meanwhile)."""
        if self._parts is None:
            return self._worker.result()
        self._parts.take()
        self._worker.result()  # the part it is digesting, or what it raised
        return self._parts.fingerprint()


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


# -- the columns' fingerprints -----------------------------------------------------------------------------------
def column_fingerprints(frame: pd.DataFrame) -> dict[str, str]:
    """A digest of each column's values (``"xxh3:<hex>"``, :func:`cellspec_sc.model._compare.column_digest`:
    NA-aware, doubles by their bits), to detect edited columns.

    >>> column_fingerprints(pd.DataFrame({"a": [1.0]}))["a"][:5]
    'xxh3:'
    """
    return {str(name): _COLUMN_PREFIX + column_digest(frame[name]) for name in frame.columns}


def changed_columns(frame: pd.DataFrame, recorded: Mapping[str, str]) -> list[str]:
    """The columns of ``frame`` with a recorded fingerprint whose values are not the ones recorded; each is
    fingerprinted in the variant it was recorded in (the earliest records hold SHA-256 of pandas' row hashes).

    >>> frame = pd.DataFrame({"a": [1.0], "b": ["x"]})
    >>> changed_columns(frame.assign(b=["y"]), column_fingerprints(frame))
    ['b']
    """
    out = []
    for name in frame.columns:
        if str(name) not in recorded:
            continue
        stored = recorded[str(name)]
        if stored.startswith(_COLUMN_PREFIX):
            now = _COLUMN_PREFIX + column_digest(frame[name])
        else:
            hashes = pd.util.hash_pandas_object(frame[name], index=False).to_numpy(dtype=np.uint64)
            now = hashlib.sha256(hashes.tobytes()).hexdigest()[:32]
        if now != stored:
            out.append(str(name))
    return out


def _column_fingerprints(stored: Any, version: tuple[int, int], where: str) -> dict[str, str]:
    """The recorded column fingerprints, each in a variant its version holds."""
    if not isinstance(stored, Mapping):
        raise InputError(f"{where} is a {type(stored).__name__}, not the column fingerprints written by cellspec_sc")
    out = {str(name): str(value) for name, value in stored.items()}
    legacy = version == (1, 0)
    wrong = [name for name, value in out.items()
             if not value.startswith(_COLUMN_PREFIX) and not (legacy and _SHA256_COLUMN.fullmatch(value))]
    if wrong:
        raise InputError(f"{where} holds fingerprints of columns {wrong[:5]} in no form of version "
                         f"{version[0]}.{version[1]}: the record is damaged")
    return out


# -- JSON text and tables ----------------------------------------------------------------------------------------
def to_json_text(value: Any) -> str:
    """JSON text of a JSON-like value, lossless for doubles, ``None`` and non-ASCII text.

    >>> from_json_text(to_json_text({"a": [None, -0.0, "ü"]}))
    {'a': [None, -0.0, 'ü']}
    """
    return json.dumps(value, ensure_ascii=True, allow_nan=True)


def from_json_text(text: Any) -> Any:
    """The value stored by :func:`to_json_text` (accepts numpy string scalars read back from zarr).

    >>> from_json_text(np.str_('{"a": 1}'))
    {'a': 1}
    """
    return json.loads(str(text))


def encode_table(frame: pd.DataFrame, table: str) -> str:
    """A cellspec table as JSON text (see the module docstring).

    >>> encode_table(pd.DataFrame({"image_id": pd.array(["a", None], dtype="string")}), "images")
    '{"columns": ["image_id"], "types": ["character"], "data": [["a", null]]}'
    """
    types = column_spec_types(frame, table)
    data = []
    for name, spec_type in types:
        if spec_type is None:
            raise InputError(f"{table}: column {name!r} has dtype {frame[name].dtype}, which is no cellspec type")
        data.append(_json_values(frame[name], spec_type))
    return to_json_text({"columns": [str(name) for name, _ in types], "types": [t for _, t in types], "data": data})


def _json_values(column: pd.Series, spec_type: str) -> list[Any]:
    na = column.isna().to_numpy(dtype=bool)
    if spec_type == "double":
        values: list[Any] = column.to_numpy(dtype=np.float64, na_value=np.nan).tolist()
    elif spec_type == "integer":
        values = column.to_numpy(dtype=np.int64, na_value=0).tolist()
    elif spec_type == "logical":
        values = column.to_numpy(dtype=bool, na_value=False).tolist()
    else:
        values = [str(v) for v in column.to_numpy(dtype=object, na_value="").tolist()]
    for i in np.flatnonzero(na).tolist():
        values[i] = None
    return values


def known_types(types: Any, where: str) -> dict[str, str | None]:
    """``types`` ({column: spec type, or None for a column without one}) when the spec knows every type; else an
    InputError naming ``where`` (a damaged record must not reach the conversions as an unknown type).

    >>> known_types({"a": "character", "b": None}, "meta")
    {'a': 'character', 'b': None}
    >>> known_types({"a": "ch`racter"}, "meta")
    Traceback (most recent call last):
    ...
    cellspec_sc.errors.InputError: meta gives column 'a' the type 'ch`racter', which the spec does not have ...
    """
    if not isinstance(types, Mapping):
        raise InputError(f"{where} is a {type(types).__name__}, not the column types written by cellspec_sc")
    for name, spec_type in types.items():
        if spec_type is not None and spec_type not in SPEC_TYPES:
            raise InputError(f"{where} gives column {name!r} the type {spec_type!r}, which the spec does not have "
                             f"({', '.join(SPEC_TYPES)}): the record is damaged or was not written by cellspec_sc")
    return dict(types)


def decode_table(text: Any, table: str) -> pd.DataFrame:
    """The table written by :func:`encode_table`, with canonical dtypes.

    >>> decode_table('{"columns": ["image_id"], "types": ["character"], "data": [["a", null]]}', "images").shape
    (2, 1)
    """
    try:
        stored = from_json_text(text)
        names, types, data = list(stored["columns"]), list(stored["types"]), list(stored["data"])
        known_types(dict(zip(map(str, names), types, strict=True)), f"uns['cellspec']['{table}']")
        n_rows = len(data[0]) if data else 0
        columns = {name: _column(values, spec_type, n_rows)
                   for name, spec_type, values in zip(names, types, data, strict=True)}
    except (KeyError, TypeError, ValueError, RecursionError) as err:
        raise InputError(f"uns['cellspec']['{table}'] is damaged or was not written by cellspec_sc ({err})") from None
    frame = pd.DataFrame(columns, index=pd.RangeIndex(n_rows), columns=names)
    return canonical_frame(frame, table, dict(zip(names, types, strict=True)))


def _column(values: list[Any], spec_type: str, n_rows: int) -> pd.Series:
    if len(values) != n_rows:
        raise ValueError(f"a column has {len(values)} values for {n_rows} rows")
    if spec_type == "double":
        return pd.Series(np.array([np.nan if v is None else v for v in values], dtype=np.float64))
    dtype = {"integer": "Int32", "logical": "boolean", "character": "string"}[spec_type]
    return pd.Series(pd.array(values, dtype=dtype))
