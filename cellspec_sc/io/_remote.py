"""Cellspec directories on object storage (``s3://``, ``gs://``, ``az://``): the same format, the same refusals.

A directory on a bucket is the objects below a prefix. Reading lists the prefix once, reads ``DONE`` and
``MANIFEST.sha256``, then streams every listed file in pieces, feeding SHA-256 the bytes as they arrive: each
file is fetched once, into memory (nothing is written to a local disk), checked against its manifest entry
and decoded by the same Parquet, TSV and JSON readers as a local file. :func:`read_header_remote` fetches only
``DONE``, the manifest, ``cellspec.json`` and the Parquet footers (ranged reads).

Writing builds and validates the directory in a private local folder (the local writer, unchanged), then:

1. claims the prefix with a conditional create of ``.cellspec-upload`` (``If-None-Match: *`` on S3), which
   lists every object the upload may leave; of two writers only one gets the claim, the other
   :class:`~cellspec_sc.io._refusals.TargetExists` before it has uploaded anything; the prefix is then listed
   again, and an object the writer did not see at first (another writer finished meanwhile) withdraws the
   claim and refuses the write (:func:`claim_prefix`);
2. with ``overwrite=True``, removes the old directory: ``DONE`` first, so that no reader takes the prefix for
   complete from then on, then exactly the objects its manifest lists;
3. uploads the files in manifest order, then ``MANIFEST.sha256``, then ``DONE`` (again a conditional create),
   and removes the claim.

An upload killed midway leaves a prefix without ``DONE`` (readers refuse it, :class:`IncompleteDirectory`)
and with its claim, which names what it may hold: the next write with ``overwrite=True`` removes those
objects and nothing else. What ``overwrite=True`` may replace is :func:`complete_directory_objects` (DONE
matches the manifest, and the manifest lists exactly the objects present) or such an unfinished upload.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from collections import deque
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cellspec_sc._files import scratch_folder
from cellspec_sc.errors import CellspecError, FormatError, InputError
from cellspec_sc.io._bounded import DEFAULT_LIMITS, DONE_MAX_BYTES, MANIFEST_LINE_MAX_BYTES, ReadLimits
from cellspec_sc.io._directory import (
    FORMATS,
    ON_OBJECT_STORAGE,
    DirectoryHeader,
    _geometry_refs,
    _validate_read,
    feature_ids_of,
    listed_format,
)
from cellspec_sc.io._manifest import (
    DATA_FILES,
    DONE,
    MANIFEST,
    METADATA,
    check_relative_name,
    lost_by_replacing,
    manifest_entries,
    read_manifest,
)
from cellspec_sc.io._metadata import JSON_TABLES, KNOWN_KEYS, frame_of_rows, parse_document
from cellspec_sc.io._parquet import check_row_counts
from cellspec_sc.io._publish import CELLSPEC_DIRECTORY, TargetKind
from cellspec_sc.io._refusals import (
    ChangedSinceRead,
    ChecksumMismatch,
    FileTooLarge,
    IncompleteDirectory,
    ListedFileMissing,
    ManifestInvalid,
    NotACellspecDirectory,
    OutlineMissing,
    TargetExists,
    UndecodableData,
    UnlistedDataFile,
    warn_unlisted,
)
from cellspec_sc.io._storage import BucketNotFound, FetchedFile, Location, Transfer, storage_call
from cellspec_sc.model import CellSpec, HandedOver, sealed

UPLOAD_CLAIM = ".cellspec-upload"  # the claim of an upload in progress: the JSON list of what it may leave
PIECE = 32 << 20  # bytes per ranged read while streaming a file, for a store client that names no block size
PIECES_IN_FLIGHT = 4  # ranged reads in flight per file, for a store client that names no concurrency
IN_FLIGHT_BYTES = 512 << 20  # at most this much of one file fetched ahead of the hashing
FETCH_THREADS = 4


# -- listing and small objects -----------------------------------------------------------------
def listing(location: Location) -> dict[str, int]:
    """{name below the prefix: size} of every object at ``location`` (one listing request per 1,000)."""
    return {name: size for name, (size, _) in object_stamps(location).items()}


def object_stamps(location: Location) -> dict[str, tuple[int, str]]:
    """{name below the prefix: (size, ETag or modification time)} of every object at ``location``: what tells
    a rewritten object from the one listed."""
    fs = location.fs
    fs.invalidate_cache()
    try:
        found = storage_call(location.url, "listing the prefix", lambda: fs.find(location.url, detail=True))
    except FileNotFoundError:  # gcsfs: the bucket itself is missing (a missing prefix lists as empty)
        raise BucketNotFound(location.url, "listing the prefix", "not found") from None
    return {location.relative(path): (int(info.get("size") or 0),
                                      str(info.get("ETag") or info.get("etag") or info.get("mtime") or ""))
            for path, info in found.items() if info.get("type", "file") != "directory"}


def object_stamp(location: Location, name: str) -> tuple[int, str] | None:
    """(size, ETag or modification time) of one object, as :func:`object_stamps` lists it; None when absent."""
    fs, url = location.fs, location.child(name)
    fs.invalidate_cache()
    try:
        info = storage_call(url, f"looking at {name}", lambda: fs.info(url))
    except FileNotFoundError:
        return None
    return int(info.get("size") or 0), str(info.get("ETag") or info.get("etag") or info.get("mtime") or "")


def fetch_small(location: Location, name: str, max_bytes: int, transfer: Transfer) -> bytes:
    """The bytes of a small object (DONE, the manifest), refused past ``max_bytes``."""
    url = location.child(name)
    data = storage_call(url, f"reading {name}", lambda: location.fs.cat_file(url, start=0, end=max_bytes + 1))
    transfer.add(len(data))
    if len(data) > max_bytes:
        raise FileTooLarge(location.url, name, f"is over the limit for this file ({max_bytes} bytes)")
    return data


def read_entries(location: Location, present: Mapping[str, int], transfer: Transfer) -> dict[str, str]:
    """The manifest entries {name: sha256} after the checks of a local read: DONE present and matching the
    manifest, every line well formed, every name a plain relative path."""
    url = location.url
    if not present:
        if location.bucket_missing():  # adlfs lists a missing container as empty
            raise BucketNotFound(url, "listing the prefix", "not found")
        raise NotACellspecDirectory(url, None, "no object is stored below this prefix")
    if DONE not in present:
        detail = ("is missing: an upload is in progress here or was interrupted" if UPLOAD_CLAIM in present
                  else "file is missing (the directory was not completely written)")
        raise IncompleteDirectory(url, DONE, detail)
    if MANIFEST not in present:
        raise ManifestInvalid(url, MANIFEST, "file is missing")
    done_text = fetch_small(location, DONE, DONE_MAX_BYTES, transfer)
    raw = fetch_small(location, MANIFEST, max(1, len(present)) * MANIFEST_LINE_MAX_BYTES, transfer)
    return manifest_entries(url, done_text, raw, lambda name: check_relative_name(url, name, MANIFEST))


def check_present(url: str, entries: Mapping[str, str], present: Mapping[str, int]) -> None:
    """Every listed object is there; an unlisted data file is refused, any other unlisted object ignored."""
    for name in entries:
        if name not in present:
            raise ListedFileMissing(url, name, "listed in MANIFEST.sha256 but missing")
    unlisted = sorted(n for n in present if n not in entries and n not in (DONE, MANIFEST))
    data = [n for n in unlisted if n in DATA_FILES or n == METADATA]
    if data:
        raise UnlistedDataFile(url, data[0], "present but not listed in MANIFEST.sha256")
    if unlisted:
        warn_unlisted(url, unlisted)


def complete_directory_objects(location: Location, present: Mapping[str, int]) -> list[str] | None:
    """The objects of a complete cellspec directory at ``location`` (DONE matches the manifest, and the
    manifest lists exactly the objects present, DONE and the manifest aside), DONE first; None when the
    prefix holds anything else: the rule of a local directory, :func:`~cellspec_sc.io._manifest.lost_by_replacing`."""
    try:
        entries = read_entries(location, present, Transfer())
    except FormatError:
        return None
    if lost_by_replacing(list(present), entries):
        return None
    return [DONE, MANIFEST, *entries]


def unfinished_upload_objects(location: Location, present: Mapping[str, int]) -> list[str] | None:
    """The objects an interrupted upload left (no DONE, its claim names every object present), claim last;
    None when the prefix holds anything else."""
    if DONE in present or UPLOAD_CLAIM not in present:
        return None
    try:
        claim = json.loads(fetch_small(location, UPLOAD_CLAIM, 1 << 20, Transfer()))
        objects, folders = set(claim["objects"]), tuple(claim["folders"])
    except (ValueError, TypeError, KeyError, FormatError):
        return None
    if not all(n in objects or n == UPLOAD_CLAIM or n.startswith(folders) for n in present):
        return None
    return [*(n for n in present if n != UPLOAD_CLAIM), UPLOAD_CLAIM]


# -- read --------------------------------------------------------------------------------------
def fetch_listed(location: Location, name: str, digest: str, size: int, transfer: Transfer,
                 max_bytes: int | None = None) -> FetchedFile:
    """The object ``name`` streamed in pieces into memory, SHA-256 fed from each piece as it arrives; refused
    when its digest is not ``digest`` (each byte is fetched once: a retried piece is fetched again, the
    pieces before it are not)."""
    if max_bytes is not None and size > max_bytes:
        raise FileTooLarge(location.url, name, f"is {size} bytes; the limit for this file is {max_bytes} bytes")
    kept: dict[str, Any] = {}

    def keep(start: int, piece: bytes) -> None:
        if start == 0 and len(piece) == size:  # fetched in one piece: kept as it came, not copied
            kept["data"] = piece
            return
        if "data" not in kept:
            kept["data"] = bytearray(size)
        kept["data"][start:start + len(piece)] = piece

    stream_checked(location, name, digest, size, transfer, keep)
    return FetchedFile(name, pa.py_buffer(kept.get("data", b"")))


def stream_checked(location: Location, name: str, digest: str, size: int, transfer: Transfer,
                   each: Callable[[int, bytes], None] | None = None, plan: tuple[int, int] | None = None) -> None:
    """Fetch the object ``name`` of ``size`` bytes in ranged pieces, hash each as it arrives and hand it to
    ``each(offset, piece)``; ChecksumMismatch when the whole does not hash to ``digest``.

    The pieces are the store client's own transfer plan (:func:`piece_plan`), or ``plan`` (bytes per request,
    requests in flight) when given, a bounded window of them in flight, hashed in file order as they come."""
    url, fs = location.child(name), location.fs
    hasher = hashlib.sha256()
    piece, in_flight = plan if plan is not None else piece_plan(fs)
    piece = max(1, piece)

    def fetch(start: int) -> tuple[int, int, bytes]:
        end = min(size, start + piece)
        data = storage_call(url, f"reading {name} (bytes {start}-{end})", lambda: _range(fs, url, start, end))
        return start, end, data

    starts = range(0, size, piece)
    if len(starts) <= 1 or in_flight <= 1:
        for start in starts:
            _take_piece(location, name, size, *fetch(start), hasher, transfer, each)
    else:
        with ThreadPoolExecutor(min(in_flight, len(starts)), thread_name_prefix="cellspec-piece") as pool:
            window: deque[Future[tuple[int, int, bytes]]] = deque()
            try:
                for start in starts:
                    window.append(pool.submit(fetch, start))
                    if len(window) >= in_flight:
                        _take_piece(location, name, size, *window.popleft().result(), hasher, transfer, each)
                while window:
                    _take_piece(location, name, size, *window.popleft().result(), hasher, transfer, each)
            except BaseException:
                for future in window:
                    future.cancel()
                raise
    actual = hasher.hexdigest()
    if actual != digest:
        raise ChecksumMismatch(location.url, name, f"SHA-256 is {actual}, MANIFEST.sha256 records {digest}")


def piece_plan(fs: Any) -> tuple[int, int]:
    """(bytes per ranged read, reads in flight) when streaming one file from ``fs``: the store client's own
    block size and concurrency where it names them (s3fs: ``default_block_size`` 50 MiB and
    ``max_concurrency`` 10, what its ``cat_file`` fetches a whole object with; both can be set in
    ``storage_options``), else :data:`PIECE` and :data:`PIECES_IN_FLIGHT`; at most
    :data:`IN_FLIGHT_BYTES` in flight.

    >>> class Store:
    ...     default_block_size, max_concurrency = 50 << 20, 10
    >>> piece_plan(Store())
    (52428800, 10)
    >>> piece_plan(object()) == (PIECE, PIECES_IN_FLIGHT)
    True
    """
    piece = int(getattr(fs, "default_block_size", None) or PIECE)
    in_flight = int(getattr(fs, "max_concurrency", None) or PIECES_IN_FLIGHT)
    return piece, max(1, min(in_flight, IN_FLIGHT_BYTES // piece))


def _take_piece(location: Location, name: str, size: int, start: int, end: int, piece: bytes, hasher: Any,
            transfer: Transfer, each: Callable[[int, bytes], None] | None) -> None:
    if len(piece) != end - start:
        raise ChangedSinceRead(location.url, name, f"was {size} bytes when listed, but bytes {start}-{end} "
                                                   f"gave {len(piece)}; read it again")
    hasher.update(piece)
    if each is not None:
        each(start, piece)
    transfer.add(len(piece))


def _range(fs: Any, url: str, start: int, end: int) -> bytes:
    try:
        return fs.cat_file(url, start=start, end=end)
    except FileNotFoundError:
        raise ListedFileMissing(url.rsplit("/", 1)[0], url.rsplit("/", 1)[1], "disappeared while it was read") from None


def read_remote(url: str, storage_options: Mapping[str, Any] | None = None, *, lazy: bool = False,
                layout: str = "C", limits: ReadLimits = DEFAULT_LIMITS, transfer: Transfer | None = None) -> CellSpec:
    """:func:`cellspec_sc.read` of a directory on object storage (see the module docstring); ``lazy=True`` is
    :func:`cellspec_sc.io._remote_lazy.read_remote_lazy`."""
    if lazy:
        return ON_OBJECT_STORAGE["read_lazy"](url, storage_options, limits=limits, transfer=transfer)
    location = Location.of(url, storage_options)
    transfer = transfer if transfer is not None else Transfer()
    present = listing(location)
    entries = read_entries(location, present, transfer)
    check_present(location.url, entries, present)
    try:
        fetched = _fetch_all(location, entries, present, limits, transfer)
        x = _load_fetched(location.url, entries, fetched, limits, layout)
    except FormatError:
        _refuse_if_replaced(location, transfer)
        raise
    _refuse_if_replaced(location, transfer)
    return x


def _fetch_all(location: Location, entries: Mapping[str, str], present: Mapping[str, int], limits: ReadLimits,
               transfer: Transfer) -> dict[str, FetchedFile]:
    def fetch(name: str) -> FetchedFile:
        bound = limits.max_metadata_bytes if name == METADATA else None
        return fetch_listed(location, name, entries[name], present[name], transfer, bound)

    with ThreadPoolExecutor(min(FETCH_THREADS, len(entries)), thread_name_prefix="cellspec-fetch") as pool:
        return dict(zip(entries, pool.map(fetch, entries), strict=True))


def _refuse_if_replaced(location: Location, transfer: Transfer) -> None:
    """A reader that started before a writer replaced the directory got a mix of two: refuse it."""
    try:
        present = listing(location)
        if DONE not in present:
            raise ChangedSinceRead(location.url, DONE, "disappeared while the directory was read: another writer "
                                                       "is replacing it; read it again once it has finished")
        read_entries(location, present, Transfer())
    except ChangedSinceRead:
        raise
    except CellspecError:
        raise ChangedSinceRead(location.url, None, "was replaced by another writer while it was being read; "
                                                   "read it again") from None


def _load_fetched(url: str, entries: Mapping[str, str], fetched: Mapping[str, FetchedFile], limits: ReadLimits,
                  layout: str) -> CellSpec:
    """The object from its fetched files: the steps of a local read (same readers, same checks)."""
    if METADATA not in entries:
        raise UnlistedDataFile(url, METADATA, "is not listed in MANIFEST.sha256")
    document, tables, feature_ids = described(url, entries, fetched[METADATA])
    fmt = listed_format(url, dict(entries))
    suffix, _, reader = FORMATS[fmt]
    types = document["column_types"]
    bounds = {"max_inflation": limits.max_inflation}
    options = {**bounds, **({"wait": False, "layout": layout} if fmt == "parquet" else {})}
    decoded = reader(fetched[f"cells{suffix}"], types["cells"], feature_ids, url, **options)
    name = f"adjacency{suffix}"
    if (name in entries) != ("adjacency" in types):
        raise UnlistedDataFile(url, name, "adjacency file and column_types.adjacency must come together")
    adjacency = reader(fetched[name], types["adjacency"], [], url, **bounds).frame if name in entries else None
    matrix = np.asfortranarray(decoded.matrix) if layout == "F" and fmt == "tsv" else decoded.matrix
    x = CellSpec(spec_version=document["spec_version"], cells=decoded.frame,
                 measurements=HandedOver(matrix) if matrix is decoded.matrix else sealed(matrix),
                 adjacency=adjacency, provenance=document["provenance"], source_dir=_outlines_folder(fetched, tables),
                 extensions={k: v for k, v in document.items() if k not in KNOWN_KEYS}, **tables)
    report = _validate_read(x, decoded)
    report.raise_if_failed(url)
    if hasattr(decoded.stats, "result"):
        decoded.stats.result()
    sealed(decoded.matrix)
    return x


def described(url: str, entries: Mapping[str, str],
              metadata: FetchedFile) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """What a fetched ``cellspec.json`` describes: the document, its JSON tables and the feature ids, every outline
    it names checked to be listed in the manifest (the steps of a local read before the data files)."""
    document = parse_document(metadata.data.to_pybytes(), url)
    types = document["column_types"]
    tables = {t: frame_of_rows(document[t], t, types.get(t), url) for t in JSON_TABLES}
    for ref in _geometry_refs(tables["images"]):
        check_relative_name(url, ref, "images.geometry_ref")
        if ref not in entries:
            raise OutlineMissing(url, ref, "named by images.geometry_ref but not listed in MANIFEST.sha256")
    return document, tables, feature_ids_of(tables["dictionary"], url)


def _outlines_folder(fetched: Mapping[str, FetchedFile], tables: Mapping[str, Any]) -> Path | None:
    """A private local folder holding the outline files (small), so that the object writes again like one read
    from disk; None when the images name none."""
    refs = _geometry_refs(tables["images"])
    if not refs:
        return None
    folder = scratch_folder("outlines")
    for ref in refs:
        target = folder.joinpath(*ref.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(fetched[ref].data.to_pybytes())
    return folder


# -- header ------------------------------------------------------------------------------------
def read_header_remote(url: str, storage_options: Mapping[str, Any] | None = None,
                       transfer: Transfer | None = None) -> DirectoryHeader:
    """:func:`cellspec_sc.io.read_header` on object storage: DONE, the manifest, cellspec.json and the footers of
    the Parquet files (ranged reads of their last bytes); ``transfer`` counts the bytes fetched."""
    location = Location.of(url, storage_options)
    transfer = transfer if transfer is not None else Transfer()
    present = listing(location)
    transfer.total = sum(present.values())
    entries = read_entries(location, present, transfer)
    if METADATA not in entries or METADATA not in present:
        raise UnlistedDataFile(location.url, METADATA, "is not listed in MANIFEST.sha256")
    metadata = fetch_listed(location, METADATA, entries[METADATA], present[METADATA], transfer,
                            DEFAULT_LIMITS.max_metadata_bytes)
    document = parse_document(metadata.data.to_pybytes(), location.url)
    types = document["column_types"]
    tables = {t: frame_of_rows(document[t], t, types.get(t), location.url) for t in JSON_TABLES}
    parquet = "cells.parquet" in entries
    rows = {name: _footer_rows(location, name, present, transfer) for name in ("cells.parquet", "adjacency.parquet")
            if parquet and name in entries}
    return DirectoryHeader(document["spec_version"], tables, document["provenance"], rows.get("cells.parquet"),
                           rows.get("adjacency.parquet"), "adjacency" in types, "parquet" if parquet else "tsv")


def _footer_rows(location: Location, name: str, present: Mapping[str, int], transfer: Transfer) -> int:
    """The row count of a Parquet object's footer, from two ranged reads of its end."""
    url, size = location.child(name), present.get(name)
    if size is None:
        raise ListedFileMissing(location.url, name, "listed in MANIFEST.sha256 but missing")
    fs = location.fs
    if size < 12:
        raise UndecodableData(location.url, name, f"no readable Parquet footer: the file is {size} bytes")
    tail = storage_call(url, f"reading the footer of {name}", lambda: fs.cat_file(url, start=size - 8, end=size))
    transfer.add(len(tail))
    footer_size = int.from_bytes(tail[:4], "little")
    if tail[4:] != b"PAR1" or footer_size > size - 12:
        raise UndecodableData(location.url, name, "no readable Parquet footer (no PAR1 magic at the end)")
    footer = storage_call(url, f"reading the footer of {name}",
                          lambda: fs.cat_file(url, start=size - 8 - footer_size, end=size - 8))
    transfer.add(len(footer))
    try:
        meta = pq.read_metadata(pa.BufferReader(footer + tail))
    except (OSError, ValueError, pa.ArrowException) as err:
        raise UndecodableData(location.url, name, f"no readable Parquet footer: {err}") from None
    check_row_counts(meta, location.url, name)
    return meta.num_rows


# -- write -------------------------------------------------------------------------------------
def write_remote(x: CellSpec, url: str, storage_options: Mapping[str, Any] | None, *,
                 write_local: Callable[..., Path], format: str, overwrite: bool, report: Any) -> str:
    """:func:`cellspec_sc.write` to object storage (see the module docstring); returns the URL."""
    location = Location.of(url, storage_options)
    _check_prefix(location)
    replaceable_objects(location, listing(location), overwrite)  # refused before anything is written
    folder = scratch_folder("upload")
    try:
        staged = write_local(x, folder / "directory", format=format, overwrite=False, report=report)
        entries = read_manifest(staged)
        with RemoteUpload(location, overwrite=overwrite, objects=list(entries)) as upload:
            for name in entries:
                upload.upload_file(staged / name, name)
            upload.finish(entries)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return location.url


class RemoteUpload:
    """One upload of a directory (or a dataset) to a prefix, by the protocol of the module docstring.

    Entering claims the prefix (TargetExists for the loser) and, with ``overwrite=True``, removes what
    :func:`replaceable_objects` allows; ``objects`` and ``folders`` (name prefixes such as ``"cells/"``, for
    files written elsewhere, e.g. by dask workers) are what the claim says the upload may leave.
    :meth:`finish` writes ``MANIFEST.sha256`` for ``{name: sha256}`` and then ``DONE``; leaving the block
    with an exception removes what the upload left, as far as the store lets it (else the next
    ``overwrite=True`` does).
    """

    def __init__(self, location: Location, *, overwrite: bool, objects: list[str], folders: tuple[str, ...] = ()):
        self.location, self.overwrite = location, overwrite
        self.objects, self.folders = objects, folders
        self.finished = False

    def __enter__(self) -> RemoteUpload:
        location = self.location
        _check_prefix(location)
        old = replaceable_objects(location, listing(location), self.overwrite)
        claim_prefix(location, {"objects": sorted({*self.objects, DONE, MANIFEST, *old}),
                                "folders": list(self.folders)}, old)
        _remove(location, [n for n in old if n != UPLOAD_CLAIM])
        return self

    def put(self, name: str, data: bytes) -> None:
        url = self.location.child(name)
        storage_call(url, f"writing {name}", lambda: self.location.fs.pipe_file(url, data))

    def upload_file(self, source: Path, name: str) -> None:
        _upload(self.location, source, name)

    def finish(self, files: Mapping[str, str]) -> None:
        """Write the manifest of ``files`` ({name: sha256}, in order), then DONE (only if absent)."""
        manifest = "".join(f"{digest}  {name}\n" for name, digest in files.items()).encode("utf-8")
        self.put(MANIFEST, manifest)
        done = f"{hashlib.sha256(manifest).hexdigest()}\n".encode("ascii")
        _create(self.location, DONE, done, "another writer published this directory first")
        self.finished = True

    def __exit__(self, kind: Any, *_: Any) -> None:
        if kind is None:
            _remove(self.location, [UPLOAD_CLAIM])
            return
        if self.finished:
            return
        with contextlib.suppress(Exception):  # best effort: what stays is an unfinished upload, refused by
            left = unfinished_upload_objects(self.location, listing(self.location))  # readers, cleaned by
            _remove(self.location, left or [])  # the next overwrite=True


def check_url_target(url: str, storage_options: Mapping[str, Any] | None = None, *, overwrite: bool) -> str:
    """The check of :func:`write_remote` on its own, for the command line to refuse a target before it reads
    its input: TargetExists, InputError (a bucket itself) or a StorageError; returns the URL."""
    location = Location.of(url, storage_options)
    _check_prefix(location)
    replaceable_objects(location, listing(location), overwrite)
    return location.url


def check_url_target_of(kind: TargetKind, url: str, storage_options: Mapping[str, Any] | None = None, *,
                        overwrite: bool) -> str:
    """The check of a writer of ``kind`` for the URL ``url`` on object storage, before anything is read or built:
    TargetExists, InputError (a kind no writer puts on object storage, or a bucket itself) or a StorageError."""
    if kind is CELLSPEC_DIRECTORY:
        return check_url_target(url, storage_options, overwrite=overwrite)
    if kind.url_check is None:
        raise InputError(f"{url}: {kind.name} cannot be written to object storage; write it to a local path")
    kind.url_check(url, storage_options, overwrite)
    return url


def _check_prefix(location: Location) -> None:
    bare = location.fs._strip_protocol(location.url).strip("/")
    if "/" not in bare:
        raise InputError(f"{location.url}: a cellspec directory on object storage is a prefix inside a bucket "
                         f"(for example {location.url}/run1), not the bucket itself")


def replaceable_objects(location: Location, present: Mapping[str, int], overwrite: bool) -> list[str]:
    """What a write with ``overwrite`` removes at ``location`` before uploading: nothing on an empty prefix;
    else TargetExists unless ``overwrite=True`` and the prefix holds a complete cellspec directory or an
    interrupted upload (never other objects)."""
    url = location.url
    if not present:
        return []
    if not overwrite:
        what = ("a cellspec directory (DONE is present)" if DONE in present
                else "an unfinished upload (no DONE)" if UPLOAD_CLAIM in present else f"{len(present)} object(s)")
        raise TargetExists(url, None, f"already holds {what}; pass overwrite=True (CLI: --overwrite) to replace it")
    objects = complete_directory_objects(location, present) or unfinished_upload_objects(location, present)
    if objects is None:
        shown = ", ".join(sorted(present)[:5])
        raise TargetExists(url, None, f"holds objects that are not a complete cellspec directory nor an interrupted "
                                      f"upload of one ({shown}); refusing to replace them")
    return objects


def claim_prefix(location: Location, claim: Mapping[str, list[str]], old: Collection[str]) -> None:
    """Claim the prefix for an upload: ``claim`` ({"objects": names, "folders": name prefixes}, what the upload may
    leave) stored as ``.cellspec-upload`` only if no other claim is there (TargetExists for the loser), then the
    prefix listed again: an object that is neither in ``old`` (what the caller saw, and may replace) nor the claim
    was published by a writer that finished between the caller's look and this claim, so the claim is withdrawn
    and the write refused before anything is replaced. An old claim in ``old`` (an interrupted upload being
    replaced) is removed first."""
    if UPLOAD_CLAIM in old:
        _remove(location, [UPLOAD_CLAIM])
    _create(location, UPLOAD_CLAIM, json.dumps(claim).encode("utf-8"), "another writer is uploading here")
    arrived = sorted(set(listing(location)) - set(old) - {UPLOAD_CLAIM})
    if arrived:
        _remove(location, [UPLOAD_CLAIM])
        raise TargetExists(location.url, arrived[0], "was published here by another writer meanwhile; nothing was "
                                                     "replaced")


def _create(location: Location, name: str, data: bytes, loser: str) -> None:
    """Store ``data`` at ``name`` only if nothing is there (``If-None-Match: *``), else TargetExists."""
    url, fs = location.child(name), location.fs
    try:
        storage_call(url, f"writing {name}", lambda: written_if_absent(fs, url, lambda **mode: fs.pipe_file(
            url, data, **mode)))
    except FileExistsError:
        raise TargetExists(location.url, name, f"{loser}; nothing of it was replaced") from None


def written_if_absent(fs: Any, url: str, write: Callable[..., object]) -> None:
    """``write(mode="create")``: the store's conditional write (``If-None-Match: *`` on S3, ``ifGenerationMatch=0``
    on GCS), FileExistsError when something is at ``url``; where the store's fsspec implementation has no
    conditional create, the nearest check: ``write()`` only if nothing is there when it starts."""
    try:
        write(mode="create")
    except TypeError:
        if fs.exists(url):
            raise FileExistsError(url) from None
        write()


def _upload(location: Location, source: Path, name: str) -> None:
    url = location.child(name)
    storage_call(url, f"uploading {name}", lambda: location.fs.put_file(str(source), url))


def _remove(location: Location, names: list[str]) -> None:
    """Remove the objects ``names``, in order (DONE first when it is listed first)."""
    fs = location.fs
    for name in names:
        url = location.child(name)
        with contextlib.suppress(FileNotFoundError):
            storage_call(url, f"removing {name}", lambda u=url: fs.rm_file(u))
    fs.invalidate_cache()


ON_OBJECT_STORAGE.update(read=read_remote, write=write_remote, read_header=read_header_remote)
