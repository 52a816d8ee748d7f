"""One member of a cohort: what the client knows of a cellspec directory, and reading it on a worker.

A :class:`Member` holds a directory's metadata (cellspec.json tables, the
manifest entries and DONE as they were when the cohort was opened, the size,
modification time and inode of every listed file) and its :class:`Part` list:
the Parquet row groups that hold its cells. Workers receive members (paths,
row ranges and metadata, a few kB), never matrices.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> x = cs.example()
>>> m = open_directory(cs.write(x, pathlib.Path(tempfile.mkdtemp()) / "slide"), 0)
>>> m.n_cells, [p.file for p in m.parts], m.feature_ids[:1]
(80, ['cells.parquet'], ['cell:DAPI:mean'])

**Parts.** Every read of a part (a Parquet row group) checks before and after that the file is the one the
cohort opened (size, modification time, inode), so a result never mixes two versions of a
directory. A task holds the rows of one row group at a time; columns are
decoded in batches of about 8 MB (:func:`cellspec_sc.io._parquet.fill_row_group`).

>>> block = feature_block(m, m.parts[0], ["cell:area", "not there"])
>>> block.shape, bool((block[:, 0] == x.measurements[:, x.feature_ids.index("cell:area")]).all())
((80, 2), True)
>>> cells_frame(m).equals(x.cells)
True

**The member as a CellSpec.** ``member_object(m)`` reads the cells table (every part), and walks the parts
once to gather the :class:`~cellspec_sc.model._matrix_stats.MatrixStats`
validation needs. With ``eager=False`` (one ~8 MB column batch of a row group
in memory at a time, its stats taken while it is in the cache) the measurements
stay a dask array of one block per part (what validation needs: shape and
dtype; values only through the stats); with ``eager=True`` they are filled into
one matrix, as ``cs.read`` does. :func:`load_member` is the member validated, as ``cs.read`` gives it.

>>> y, stats, stored = member_object(m, eager=True)
>>> y.equals(x.replace(provenance=y.provenance)), stored
(True, {})
>>> m.load().equals(y)
True
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cellspec_sc.cohort._run import CohortError
from cellspec_sc.errors import InputError
from cellspec_sc.io import (
    ARROW_TYPES,
    DAMAGED_DATA_ERRORS,
    DEFAULT_MAX_INFLATION,
    DONE,
    DONE_MAX_BYTES,
    JSON_TABLES,
    KNOWN_KEYS,
    METADATA,
    ChangedSinceRead,
    Location,
    NotACellspecDirectory,
    RemoteFile,
    Transfer,
    UndecodableData,
    UnlistedDataFile,
    UnreadableFile,
    arrow_to_frame,
    check_footer,
    check_outlines_listed,
    check_present,
    check_stored_columns,
    conform,
    damage_text,
    feature_ids_of,
    fetch_listed,
    fetch_small,
    fill_row_group,
    frame_of_rows,
    gather_row_group_stats,
    is_url,
    listed_format,
    load_document,
    object_stamp,
    object_stamps,
    open_parquet,
    parse_document,
    read,
    read_entries,
    read_manifest,
    stats_for,
    stream_checked,
    verify_listed,
)
from cellspec_sc.model import CellSpec, MatrixStats, empty_matrix, sealed
from cellspec_sc.validation import validate

Stamp = tuple[int, int, int] | tuple[int, str]  # size, modification time (ns), inode; on a store: size, ETag
# the data files of a member on a store that a task keeps in memory after hashing them, at most this many bytes
# in all (what streaming one file may already hold in flight), and at most a quarter of a dask worker's memory
# limit per thread (:func:`held_budget`): its row groups are then decoded from the bytes that were hashed
# instead of being fetched again by ranged reads; larger files are read again by ranges
HELD_BYTES = 512 << 20
_HELD: ContextVar[dict[tuple[str, str], pa.Buffer] | None] = ContextVar("cellspec_held_files", default=None)
FOOTERS_KEPT = 64  # Parquet footers of objects on a store kept per process, the most recently read
_FOOTERS: OrderedDict[tuple[str, Stamp], pq.FileMetaData] = OrderedDict()
_FOOTERS_LOCK = threading.Lock()


@dataclass(frozen=True)
class Part:
    """Row group ``row_group`` of ``file`` (relative to the member's root): ``rows`` stored rows, of which
    ``kept`` belong to the member's images. ``constants``: columns stored in the path (hive partitions)."""

    file: str
    row_group: int
    rows: int
    kept: int
    constants: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True)
class Member:
    """A cellspec directory (or one source of a written cohort dataset) as the cohort sees it."""

    label: str
    root: Path
    index: int
    spec_version: str
    table_types: list[dict[str, str]]
    feature_ids: list[str]
    dictionary: pd.DataFrame
    images: pd.DataFrame
    channels: pd.DataFrame
    provenance: dict[str, Any]
    entries: dict[str, str]
    done: str | None
    stamps: dict[str, Stamp]
    parts: tuple[Part, ...]
    extensions: dict[str, Any] = field(default_factory=dict)
    image_filter: frozenset[str] | None = None
    storage_options: dict[str, Any] | None = None  # a member on object storage: root is its URL

    @property
    def remote(self) -> bool:
        return isinstance(self.root, str)

    def file(self, name: str) -> Path | RemoteFile:
        """A listed file of the member: a path, or an object on the store read by ranged reads."""
        if self.remote:
            return RemoteFile(f"{self.root}/{name}", self.stamps[name][0], self.storage_options or {})
        return self.root / name

    @property
    def n_cells(self) -> int:
        """Cells of the member (rows of its images)."""
        return sum(p.kept for p in self.parts)

    @property
    def offsets(self) -> list[int]:
        """First kept row of each part within the member."""
        out, start = [], 0
        for p in self.parts:
            out.append(start)
            start += p.kept
        return out

    def load(self) -> CellSpec:
        """The member as a validated CellSpec, read in this process (:func:`load_member`)."""
        return load_member(self)

    def with_images(self, images: frozenset[str], parts: tuple[Part, ...]) -> Member:
        """The member narrowed to ``images``, stored in ``parts``."""
        keep = self.images["image_id"].isin(images).to_numpy() if "image_id" in self.images else []
        channels = self.channels[self.channels["image_id"].isin(images).to_numpy()] \
            if "image_id" in self.channels else self.channels
        return replace(self, images=self.images[keep].reset_index(drop=True),
                       channels=channels.reset_index(drop=True), image_filter=images, parts=parts)


def stamp_of(path: Path) -> Stamp:
    info = os.stat(path)
    return info.st_size, info.st_mtime_ns, info.st_ino


def check_stamp(member: Member, file: str) -> None:
    """Refuse a file that changed (size, time or inode; on a store: size or ETag) since the cohort was opened."""
    if member.remote:
        now_remote = object_stamp(Location.of(member.root, member.storage_options), file)
        if now_remote is None:
            raise ChangedSinceRead(member.root, file, "was removed after the cohort was opened")
        if now_remote != member.stamps[file]:
            raise ChangedSinceRead(member.root, file, "changed after the cohort was opened; open the cohort again")
        return
    try:
        now = stamp_of(member.root / file)
    except FileNotFoundError:
        raise ChangedSinceRead(member.root, file, "was removed after the cohort was opened") from None
    if now != member.stamps[file]:
        raise ChangedSinceRead(member.root, file, "changed after the cohort was opened; open the cohort again")


def verify_member(member: Member) -> None:
    """Every file the member lists still has the SHA-256 recorded when the cohort was opened (each hashed
    once) and did not change while it was hashed; DONE is unchanged. Raises the refusal naming the file."""
    if member.remote:
        _verify_remote(member, held_budget=0)
        return
    for file in member.stamps:
        check_stamp(member, file)
    if member.done is not None and _done_text(member.root) != member.done:
        raise ChangedSinceRead(member.root, DONE, "changed after the cohort was opened (the directory was "
                                                  "rewritten); open the cohort again")
    verify_listed(member.root, member.entries).check()
    for file in member.stamps:
        check_stamp(member, file)


@contextmanager
def verified(member: Member) -> Iterator[None]:
    """:func:`verify_member`, then the block; on a store, the data files the member's parts are read from are
    kept in memory as they were hashed (:data:`HELD_BYTES` at most), and every read of them in the block
    decodes those bytes: each such file is fetched once, with no ranged read or look at the object after.
    The bytes are the ones that matched the manifest seen at open, so no later change of the object can
    reach the block's results."""
    if not member.remote:
        verify_member(member)
        yield
        return
    held = _verify_remote(member, held_budget())
    token = _HELD.set({**(_HELD.get() or {}), **{(member.root, name): data for name, data in held.items()}})
    try:
        yield
    finally:
        _HELD.reset(token)


def held_budget() -> int:
    """Bytes of a member's files a task may keep in memory (:func:`verified`): :data:`HELD_BYTES`, or a quarter of
    each thread's share of the memory limit of the dask worker running the task, when that is less (a worker
    with many threads and little memory keeps less; the file streaming in and the batch decoded from it come
    on top).

    >>> held_budget() == HELD_BYTES  # not on a dask worker
    True
    """
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):  # not in a task of a dask worker
        return HELD_BYTES
    limit = getattr(getattr(worker, "memory_manager", None), "memory_limit", None)
    threads = getattr(getattr(worker, "state", None), "nthreads", None) or 1
    return min(HELD_BYTES, int(limit) // (4 * threads)) if limit else HELD_BYTES


def _held(member: Member, file: str) -> pa.Buffer | None:
    """The bytes of ``file`` kept by :func:`verified` in this block, else None."""
    held = _HELD.get()
    return None if held is None or not member.remote else held.get((member.root, file))


def _verify_remote(member: Member, held_budget: int) -> dict[str, Any]:
    """:func:`verify_member` on a store: the listing unchanged, each listed object streamed once and hashed;
    returns {name: buffer of its bytes} of the data files read by parts that were kept (in file order while they fit in
    ``held_budget`` bytes in all)."""
    location = Location.of(member.root, member.storage_options)
    stamps = object_stamps(location)
    done = read_entries(location, {n: s for n, (s, _) in stamps.items()}, Transfer())
    if done != member.entries or any(stamps.get(f) != member.stamps[f] for f in member.stamps):
        raise ChangedSinceRead(member.root, DONE, "the directory changed after the cohort was opened; open the "
                                                  "cohort again")
    read_by_parts = {p.file for p in member.parts}
    held: dict[str, pa.Buffer] = {}
    for name, digest in member.entries.items():
        size = member.stamps[name][0]
        if name in read_by_parts and size <= held_budget:
            # one request for the whole object: a cohort's parallelism is its tasks, one per worker thread,
            # and ranged pieces in flight per file would multiply the requests (and, on a store that reads
            # the whole object for each ranged request, its work) for bytes the task keeps whole anyway
            held[name] = _fetched_whole(location, name, digest, size)
            held_budget -= size
        else:
            stream_checked(location, name, digest, size, Transfer())
    return held


def _fetched_whole(location: Location, name: str, digest: str, size: int) -> pa.Buffer:
    """The object ``name`` fetched in one request and hashed; a buffer over the bytes as they arrived (no copy)."""
    pieces: list[bytes] = []
    stream_checked(location, name, digest, size, Transfer(), lambda _start, piece: pieces.append(piece),
                   plan=(max(1, size), 1))
    return pa.py_buffer(pieces[0] if pieces else b"")


def _done_text(root: Path) -> str:
    return (root / DONE).read_bytes().decode("ascii", errors="replace").strip().lower()


def find_member(members: list[Member], directory: str | Path) -> Member:
    """The member opened from ``directory`` (the same text, or the same folder)."""
    for member in members:
        if member.label == str(directory):
            return member
    resolved = Path(directory).resolve()
    for member in members:
        if Path(member.label).resolve() == resolved:
            return member
    raise CohortError(f"{directory} is not a directory of this cohort; directories: "
                      f"{', '.join(m.label for m in members[:10])}")


def footer_parts(root: Path | str, file: str, types: list[dict[str, str]], feature_ids: list[str],
                 constants: tuple = (), max_inflation: float = DEFAULT_MAX_INFLATION,
                 located: Path | RemoteFile | None = None) -> tuple[list[dict[str, str]], tuple[Part, ...]]:
    """The cells column types of a Parquet file and one part per row group (every row kept), after checking
    its footer as ``read`` does: decodable, row counts that add up and are bounded (``max_inflation``), the
    columns of ``types`` (cells columns, then ``feature_ids`` as double). ``located``: the file on a store."""
    path = located if located is not None else root / file
    handle = open_parquet(path, root, file)
    meta = handle.metadata
    check_footer(meta, path, root, file, max_inflation)
    table_types = check_stored_columns(handle.schema_arrow, types, feature_ids, root, file)
    return table_types, tuple(Part(file, i, meta.row_group(i).num_rows, meta.row_group(i).num_rows, constants)
                              for i in range(meta.num_row_groups))


def open_directory(path: str | Path, index: int, label: str | None = None,
                   max_inflation: float = DEFAULT_MAX_INFLATION) -> Member:
    """The member for a cellspec directory: its manifest, DONE and cellspec.json checked (cellspec.json
    hashed, it is small), the Parquet footer read and bounded (``max_inflation``, as in ``read``); the
    cells are not read."""
    if is_url(path):
        raise InputError(f"{path}: open a directory on object storage with open_remote_directory")
    root = Path(path)
    if not root.is_dir():
        raise NotACellspecDirectory(root, None, "is not a directory")
    try:
        return _open_directory(root, index, label or str(path), max_inflation)
    except OSError as err:
        raise UnreadableFile(root, Path(err.filename).name if err.filename else None, err.strerror or str(err)) \
            from None


def _open_directory(root: Path, index: int, label: str, max_inflation: float) -> Member:
    entries = read_manifest(root)
    done = _done_text(root)
    if METADATA not in entries:
        raise UnlistedDataFile(root, METADATA, "is not listed in MANIFEST.sha256")
    stamps = {name: stamp_of(root / name) for name in entries}
    verify_listed(root, {METADATA: entries[METADATA]}).check()
    document = load_document(root / METADATA, root)
    if listed_format(root, entries) != "parquet":
        raise InputError(f"{root}: cohorts read the Parquet variant; this directory holds cells.tsv.gz "
                         "(convert it with `cellspec convert DIR NEW_DIR`)")
    types = document["column_types"]
    tables = {t: frame_of_rows(document[t], t, types.get(t), root) for t in JSON_TABLES}
    check_outlines_listed(root, tables["images"], entries)
    feature_ids = feature_ids_of(tables["dictionary"], root)
    table_types, parts = footer_parts(root, "cells.parquet", types["cells"], feature_ids, max_inflation=max_inflation)
    return Member(label=label, root=root.resolve(), index=index, spec_version=document["spec_version"],
                  table_types=table_types, feature_ids=feature_ids, provenance=document["provenance"],
                  entries=entries, done=done, stamps=stamps, parts=parts,
                  extensions={k: v for k, v in document.items() if k not in KNOWN_KEYS}, **tables)


def open_remote_directory(url: str, index: int, label: str | None = None, storage_options: dict | None = None,
                          max_inflation: float = DEFAULT_MAX_INFLATION) -> Member:
    """:func:`open_directory` for a directory on object storage: one listing, DONE, the manifest and
    cellspec.json fetched and checked, the Parquet footer read by ranged reads; the cells are not read."""
    location = Location.of(url, storage_options)
    stamps = object_stamps(location)
    present = {n: s for n, (s, _) in stamps.items()}
    transfer = Transfer()
    entries = read_entries(location, present, transfer)
    check_present(location.url, entries, present)
    if METADATA not in entries:
        raise UnlistedDataFile(location.url, METADATA, "is not listed in MANIFEST.sha256")
    document = parse_document(fetch_listed(location, METADATA, entries[METADATA], present[METADATA],
                                           transfer).data.to_pybytes(), location.url)
    if listed_format(location.url, entries) != "parquet":
        raise InputError(f"{location.url}: cohorts read the Parquet variant; this directory holds cells.tsv.gz")
    types = document["column_types"]
    tables = {t: frame_of_rows(document[t], t, types.get(t), location.url) for t in JSON_TABLES}
    feature_ids = feature_ids_of(tables["dictionary"], location.url)
    listed = {name: stamps[name] for name in entries}
    cells = RemoteFile(location.child("cells.parquet"), present["cells.parquet"], location.storage_options)
    table_types, parts = footer_parts(location.url, "cells.parquet", types["cells"], feature_ids,
                                      max_inflation=max_inflation, located=cells)
    done = fetch_small_text(location)
    return Member(label=label or location.url, root=location.url, index=index, spec_version=document["spec_version"],
                  table_types=table_types, feature_ids=feature_ids, provenance=document["provenance"],
                  entries=entries, done=done, stamps=listed, parts=parts,
                  extensions={k: v for k, v in document.items() if k not in KNOWN_KEYS},
                  storage_options=dict(location.storage_options), **tables)


def fetch_small_text(location: Location) -> str:
    return fetch_small(location, DONE, DONE_MAX_BYTES, Transfer()).decode("ascii", errors="replace").strip().lower()


def _handle(member: Member, part: Part) -> pq.ParquetFile:
    # pre_buffer=False: each column chunk read into a buffer of its own size, which the memory pool reuses;
    # pre-buffering coalesces a row group into reads of tens of MB, new memory on every read (page faults and
    # zeroing of huge pages: 2-3x the CPU of the whole read on a dask worker)
    try:
        held = _held(member, part.file)
        if held is not None:
            return pq.ParquetFile(pa.BufferReader(held), pre_buffer=False)
        if member.remote:
            return _remote_handle(member.file(part.file), member.stamps[part.file])
        return pq.ParquetFile(member.root / part.file, pre_buffer=False)
    except DAMAGED_DATA_ERRORS as err:
        raise UndecodableData(member.root, part.file, f"not a readable Parquet file: {damage_text(err)}") from None


def _remote_handle(file: RemoteFile, stamp: Stamp) -> pq.ParquetFile:
    # the file reads exactly the ranges asked for; pre-buffering coalesces a row group's into a few requests.
    # The footer is read once per process for the object as listed (size and ETag): a task reads a file's row
    # groups feature batch by feature batch, and each batch's read would otherwise fetch the footer again
    key = (file.url, stamp)
    with _FOOTERS_LOCK:
        footer = _FOOTERS.get(key)
        if footer is not None:
            _FOOTERS.move_to_end(key)
    handle = pq.ParquetFile(file.open(), pre_buffer=True, metadata=footer)
    if footer is None:
        with _FOOTERS_LOCK:
            _FOOTERS[key] = handle.metadata
            while len(_FOOTERS) > FOOTERS_KEPT:
                _FOOTERS.popitem(last=False)
    return handle


@contextmanager
def reading(member: Member, part: Part) -> Iterator[pq.ParquetFile]:
    """The part's Parquet file, checked unchanged since the cohort was opened before and after the block;
    a decoding error becomes UndecodableData naming the file and row group. A file held in memory
    (:func:`verified`) is the bytes that were hashed: nothing to check."""
    held = _held(member, part.file) is not None
    if not held:
        check_stamp(member, part.file)
    handle = _handle(member, part)
    try:
        yield handle
    except DAMAGED_DATA_ERRORS as err:
        raise UndecodableData(member.root, part.file, f"row group {part.row_group} cannot be decoded: {err}") \
            from None
    if not held:
        check_stamp(member, part.file)


def _every_row_kept(member: Member, part: Part) -> bool:
    return member.image_filter is None or part.kept == part.rows


def _kept_rows(member: Member, part: Part, handle: pq.ParquetFile) -> np.ndarray | None:
    """Mask of the rows of the member's images (None: every row)."""
    if _every_row_kept(member, part):
        return None
    constants = dict(part.constants)
    if "image_id" in constants:
        return np.full(part.rows, constants["image_id"] in member.image_filter)
    ids = handle.read_row_group(part.row_group, columns=["image_id"]).column("image_id")
    return pc.is_in(ids, value_set=pa.array(sorted(member.image_filter), pa.string())).to_numpy(
        zero_copy_only=False)


def count_kept(member: Member, part: Part) -> int:
    """Rows of ``part`` that belong to the member's images (reads only image_id)."""
    mask = _kept_rows(member, part, _handle(member, part))
    return part.rows if mask is None else int(mask.sum())


def cells_table(member: Member, part: Part, columns: list[str] | None = None) -> pa.Table:
    """The cells columns (all, or ``columns``) of one part as Arrow, in column_types order and types (hive
    columns restored)."""
    constants = dict(part.constants)
    types = [c for c in member.table_types if columns is None or c["name"] in columns]
    stored = [c["name"] for c in types if c["name"] not in constants]
    with reading(member, part) as handle:
        raw = handle.read_row_group(part.row_group, columns=stored)
        mask = _kept_rows(member, part, handle)
        out = {}
        for c in types:
            name, kind = c["name"], c["type"]
            if name in constants:  # partition columns are character (write_dataset refuses others)
                out[name] = pa.array([constants[name]] * part.rows, pa.string())
            else:
                out[name] = conform(raw.column(name), kind, part.file, name, member.root)
    table = pa.table(out) if out else pa.table({"_": pa.nulls(part.rows)}).select([])
    return table if mask is None else table.filter(pa.array(mask))


def cells_frame(member: Member) -> pd.DataFrame:
    """The member's whole cells table (every part) in canonical pandas dtypes."""
    tables = [cells_table(member, p) for p in member.parts]
    if not tables:
        table = pa.table({c["name"]: pa.array([], ARROW_TYPES[c["type"]]) for c in member.table_types})
    else:
        table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    return arrow_to_frame(table, member.table_types)


def feature_block(member: Member, part: Part, features: list[str], nulls: np.ndarray | None = None,
                  out: np.ndarray | None = None) -> np.ndarray:
    """The kept rows of ``part`` x ``features`` as float64 (NA and features the member lacks as NaN).

    ``nulls`` (one count per entry of ``features``) gets each column's stored nulls added, so that a
    caller can tell NaN stored as numbers from NA. ``out`` (kept rows x features, any layout, e.g. rows
    of a column-major matrix) is filled and returned instead of a new row-major block.
    """
    own = set(member.feature_ids)
    present = [j for j, f in enumerate(features) if f in own]
    names = [features[j] for j in present]
    whole = len(names) == len(features)
    with reading(member, part) as handle:
        block, counts = _decoded(handle, part, names, _kept_rows(member, part, handle), out if whole else None)
    if nulls is not None:
        nulls[present] += counts
    if whole:
        return block
    if out is None:
        out = np.full((block.shape[0], len(features)), np.nan)
    else:
        out.fill(np.nan)
    out[:, present] = block
    return out


def add_part_stats(member: Member, part: Part, features: list[str], nulls: np.ndarray, stats: MatrixStats,
                   start: int) -> None:
    """Add the kept rows of ``part`` x ``features`` to ``stats`` (rows from ``start``) and their stored nulls to
    ``nulls``, as ``stats.add(start, feature_block(member, part, features, nulls))`` would, without building the
    block when every row is kept and the member has every feature (each column batch's stats taken while it
    is in the cache)."""
    own = set(member.feature_ids)
    if not _every_row_kept(member, part) or any(f not in own for f in features):
        stats.add(start, feature_block(member, part, features, nulls))
        return
    with reading(member, part) as handle:
        gather_row_group_stats(handle, part.row_group, features, nulls, stats, start)


def part_table(member: Member, part: Part, features: list[str]) -> pa.Table:
    """The kept rows of ``part`` as stored: cells columns, then ``features`` (null where the member
    lacks a feature), values untouched (what :meth:`Cohort.write_dataset` writes)."""
    cells = cells_table(member, part)
    own = set(member.feature_ids)
    present = [f for f in features if f in own]
    with reading(member, part) as handle:
        raw = handle.read_row_group(part.row_group, columns=present)
        mask = _kept_rows(member, part, handle)
    if mask is not None:
        raw = raw.filter(pa.array(mask))
    columns = {name: cells.column(name) for name in cells.column_names}
    for f in features:
        columns[f] = raw.column(f).cast(pa.float64()) if f in own else pa.nulls(cells.num_rows, pa.float64())
    return pa.table(columns)


def _decoded(handle: pq.ParquetFile, part: Part, names: list[str], mask: np.ndarray | None,
             out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The kept rows of columns ``names`` as float64 (null as NaN), in ``out`` when given, and each column's
    null count there."""
    counts = np.zeros(len(names), dtype=np.int64)
    if mask is None:  # the read path's decoder: column batches of ~8 MB straight into the block
        block = empty_matrix(part.rows, len(names)) if out is None else out
        fill_row_group(handle, part.row_group, names, block, counts)
        return block, counts
    table = handle.read_row_group(part.row_group, columns=names).filter(pa.array(mask))
    block = empty_matrix(table.num_rows, len(names)) if out is None else out
    for j, name in enumerate(names):
        column = table.column(name)
        counts[j] = column.null_count
        block[:, j] = column.to_numpy(zero_copy_only=False) if column.type == pa.float64() else np.nan
    return block, counts


def member_object(member: Member, *, eager: bool) -> tuple[CellSpec, MatrixStats, dict[str, int]]:
    """(the member as a CellSpec, the stats of its matrix, NaN stored as numbers per feature)."""
    cells = cells_frame(member)
    features = member.feature_ids
    stats = stats_for(cells, len(features))
    nulls = np.zeros(len(features), dtype=np.int64)
    matrix = empty_matrix(member.n_cells, len(features)) if eager else None
    for part, start in zip(member.parts, member.offsets, strict=True):
        if matrix is None:  # validation: the stats alone, no block of the part's values
            add_part_stats(member, part, features, nulls, stats, start)
            continue
        block = feature_block(member, part, features, nulls)
        stats.add(start, block)
        matrix[start:start + len(block)] = block
    stored = stats.nan - nulls
    stored_nan = {features[j]: int(stored[j]) for j in np.flatnonzero(stored)}
    measurements = sealed(matrix) if matrix is not None else lazy_measurements(member, features)
    x = CellSpec(spec_version=member.spec_version, cells=cells, measurements=measurements,
                 dictionary=member.dictionary, images=member.images, channels=member.channels,
                 provenance=member.provenance, source_dir=member.root, extensions=member.extensions)
    return x, stats, stored_nan


def lazy_measurements(member: Member, features: list[str]) -> Any:
    """The member's rows x ``features`` as a dask array, one block per part (NaN where it lacks a feature)."""
    import dask
    import dask.array as da

    blocks = [da.from_delayed(dask.delayed(feature_block, pure=True)(member, part, features),
                              shape=(part.kept, len(features)), dtype=np.float64) for part in member.parts]
    if not blocks:
        return da.zeros((0, len(features)), dtype=np.float64)
    return da.concatenate(blocks, axis=0) if len(blocks) > 1 else blocks[0]


def load_member(member: Member) -> CellSpec:
    """The member as a validated CellSpec (refuses a directory that changed since the cohort was opened)."""
    if member.remote and member.image_filter is None:
        x = read(member.root, storage_options=member.storage_options)
        for file in member.stamps:  # read() checked the files against the manifest it found: the one opened?
            check_stamp(member, file)
        return x
    if not member.remote and member.image_filter is None and member.root.joinpath("cellspec.json").is_file() \
            and member.done:
        x = read(member.root)
        for file in member.stamps:  # read() checked the files against the manifest it found: the one opened?
            check_stamp(member, file)
        return x
    with verified(member):
        x, stats, stored_nan = member_object(member, eager=True)
    validate(x, stats=stats, source_nonfinite=stored_nan).raise_if_failed(member.label)
    return x
