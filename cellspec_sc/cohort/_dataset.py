"""``Cohort.write_dataset``: the whole cohort as one hive-partitioned Parquet dataset.

Each worker task takes one directory: it hashes every file the directory lists
(against the manifest seen when the cohort was opened), then reads its row
groups one at a time and writes each one's rows (cells columns, then one float64
column per cohort feature, NA as null) with
``pyarrow.parquet.ParquetWriter``: one file per partition under
``cells/<column>=<value>/`` (folder names by pyarrow's hive partitioning,
see below), one row group per file, encoded into a buffer
the worker thread reuses (:func:`~cellspec_sc.io._parquet.encoded_parquet`). The
task hashes each file as it writes it (:class:`~cellspec_sc.io._hashing.HashingFile`:
the bytes on their way to disk; the file is never read back). On a local disk file system
the parts are written around the page cache (``O_DIRECT``,
:class:`~cellspec_sc.io._direct.DirectFile`): the kernel's page cache and
writeback work would otherwise compete with the workers for the cores; elsewhere
the task asks the kernel to start writing each file to disk
(:func:`~cellspec_sc.io._staging.start_writeback`) and does not wait. One task
per directory, not one per row group plus one to check and one to gather: every
task costs the scheduler and the worker's event loop CPU (and gathering results
from another worker a transfer), which on a machine whose cores all run tasks is
taken from the tasks. The client fsyncs each directory's files as that
directory's result arrives, in a thread, while the workers write the others
(an fsync waits for the disk but takes next to no CPU), so that the end of the
run does not wait for the disk. Only when every directory succeeded does it
fsync the whole staged tree once more (every file and folder; the files are
clean by then), write ``cohort.json``, ``MANIFEST.sha256`` and ``DONE`` (last)
and publish the staged folder with one rename, like a cellspec directory;
otherwise nothing is published and :class:`CohortError` names every failed
directory. The output must be on a file system every worker and the
client can reach (a shared file system on a cluster).

>>> import cellspec_sc as cs, tempfile, pathlib
>>> from cellspec_sc.cohort.example import write_example_cohort
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> c = cs.open_cohort(write_example_cohort(root, 2, n_cells=20))
>>> out = c.write_dataset(root / "dataset")
>>> sorted(p.name for p in out.iterdir())
['DONE', 'MANIFEST.sha256', 'cells', 'cohort.json']
>>> back = cs.open_cohort(out)
>>> back.n_cells, back.directories == c.directories
(40, True)

**Layout** (see docs/cohorts.md)::

    <out>/
      cells/<col>=<value>/part-<directory>-<row group>-<i>.parquet   hive-partitioned cells + features
      cohort.json       dictionary, images, channels, column types, provenance of every source
                        (:mod:`cellspec_sc.cohort._record`)
      MANIFEST.sha256   sha256 of cohort.json and every Parquet file
      DONE              written last: sha256 of MANIFEST.sha256

**Opening it again** (:func:`read_dataset`): each source directory becomes a member again: its Parquet files
(in the order written), its images and channels, its provenance. Only metadata is read.

**The hive folders.** A cohort dataset keeps each partition column in the folder names
(``cells/sample_id=S1/part-....parquet``), as pyarrow, DuckDB, Polars and Spark
read them: NA as ``__HIVE_DEFAULT_PARTITION__``; in values, ASCII characters other
than letters, digits and ``-._~`` percent-encoded (made by pyarrow's own hive
partitioning), printable non-ASCII characters kept as they are (UTF-8), as Hive
and Spark write them. Spark decodes each ``%XX`` as one character, so pyarrow's
percent-encoded UTF-8 bytes (``Z%C3%BCrich``) would read back in Spark as
``ZÃ¼rich``; pyarrow, DuckDB and Polars read both forms. :func:`partition_groups` splits a
table into its partitions in the order their values first appear; a partition
whose rows are contiguous (the usual case: cells come image by image) is a
zero-copy slice, only scattered rows are gathered into a copy.

>>> import pyarrow as pa
>>> t = pa.table({"sample_id": ["a b", "a b", None, "a b"], "v": [1, 2, 3, 4]})
>>> [(folder, rows.column("v").to_pylist()) for folder, rows in partition_groups(t, ("sample_id",))]
[('sample_id=a%20b', [1, 2, 4]), ('sample_id=__HIVE_DEFAULT_PARTITION__', [3])]
>>> [folder for folder, _ in partition_groups(pa.table({"sample_id": ["Zürich/ä", "x\\u2028"]}), ("sample_id",))]
['sample_id=Zürich%2Fä', 'sample_id=x%E2%80%A8']
>>> constants_of("cells/sample_id=a%20b/part-00000-000000-0.parquet")
(('sample_id', 'a b'),)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

import dask
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from cellspec_sc._background import in_turn
from cellspec_sc.cohort._features import FeaturePlan
from cellspec_sc.cohort._members import Member, footer_parts, part_table, stamp_of, verified
from cellspec_sc.cohort._record import COHORT_FILE, CohortRecord, decode, encode
from cellspec_sc.cohort._run import CohortError, Failure, guarded, run
from cellspec_sc.io import (
    DEFAULT_MAX_INFLATION,
    DONE,
    HashingFile,
    Location,
    RemoteUpload,
    TargetKind,
    UnlistedDataFile,
    column_types_of,
    dump_document,
    encoded_parquet,
    files_lost_by_replacing,
    fsync_dir,
    fsync_file,
    fsync_tree,
    is_url,
    publishing,
    read_manifest,
    start_writeback,
    storage_call,
    suits_direct_io,
    verify_listed,
    write_manifest,
)
from cellspec_sc.model import package_version, utc_now
from cellspec_sc.spec import SPEC_VERSION

if TYPE_CHECKING:
    from cellspec_sc.cohort._cohort import Cohort

DATA_FOLDER = "cells"
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_ENCODED_NON_ASCII = re.compile(r"(?:%[89A-Fa-f][0-9A-Fa-f])+")  # a run of percent-encoded UTF-8 bytes >= 0x80
COHORT_DATASET = TargetKind("a cohort dataset", True,
                            lambda path: path.is_dir() and (path / COHORT_FILE).is_file(),
                            files_lost_by_replacing)


def write_dataset(cohort: Cohort, path: str | Path, *, partition_by: Sequence[str] = ("sample_id",),
                  client: Any = None, progress: bool | None = None, overwrite: bool = False,
                  storage_options: dict[str, Any] | None = None) -> Path | str:
    """Write ``cohort`` as a dataset at ``path``; returns the path. ``overwrite=True`` replaces an existing
    cohort dataset (never another kind of folder) once the new one is complete. A URL on object storage
    is written by :func:`write_dataset_remote`."""
    partition_by = tuple(partition_by)
    _check_partitions(cohort, partition_by)
    if is_url(path):
        return write_dataset_remote(cohort, str(path), partition_by, client, progress, overwrite, storage_options)
    with publishing(path, COHORT_DATASET, overwrite=overwrite) as payload:
        payload.mkdir()
        files = _write_parts(cohort, payload, partition_by, client, progress, suits_direct_io(payload))
        record = cohort_record(cohort, partition_by, files, Path(path))
        (payload / COHORT_FILE).write_bytes(dump_document(encode(record), path))
        fsync_tree(payload)  # the workers did not wait for the disk: everything is on it before DONE
        write_manifest(payload, {COHORT_FILE: None, **{f: digest for rows in files for f, digest in rows}})
    return Path(path)


def write_dataset_remote(cohort: Cohort, url: str, partition_by: tuple[str, ...], client: Any,
                         progress: bool | None, overwrite: bool, options: dict[str, Any] | None) -> str:
    """The dataset written to a prefix on object storage: each worker checks its directory and uploads its
    parts (hashed from the encoded bytes, never read back), then the client uploads cohort.json, the
    manifest and DONE last, under the claim of :class:`~cellspec_sc.io.RemoteUpload` (what
    ``overwrite=True`` may replace, and what an interrupted upload leaves, as for a directory)."""
    location = Location.of(url, options)
    with RemoteUpload(location, overwrite=overwrite, objects=[COHORT_FILE], folders=(f"{DATA_FOLDER}/",)) as upload:
        task = dask.delayed(guarded(upload_member), pure=False)
        tasks = [task(m, location.url, location.storage_options, cohort.feature_ids, partition_by)
                 for m in cohort.members]
        files = run(tasks, cohort.directories, "writing dataset", client=client, progress_bar=progress)
        failures = [r for r in files if isinstance(r, Failure)]
        if failures:
            raise CohortError(f"write_dataset: {len(failures)} of {len(files)} directories failed; nothing was "
                              "published", failures)
        record = cohort_record(cohort, partition_by, files, Path(location.url))
        document = dump_document(encode(record), location.url)
        upload.put(COHORT_FILE, document)
        upload.finish({COHORT_FILE: hashlib.sha256(document).hexdigest(),
                       **{f: digest for rows in files for f, digest in rows}})
    return location.url


def upload_member(member: Member, url: str, options: dict[str, Any], features: list[str],
                  partition_by: tuple[str, ...]) -> list[tuple[str, str]]:
    """:func:`write_member` to a prefix on object storage: the member checked, then each partition file of each
    part encoded in memory, hashed and uploaded; [(file relative to the prefix, sha256)] in part order."""
    with verified(member):
        return _upload_parts(member, url, options, features, partition_by)


def _upload_parts(member: Member, url: str, options: dict[str, Any], features: list[str],
                  partition_by: tuple[str, ...]) -> list[tuple[str, str]]:
    location = Location.of(url, options)
    cells = [c for c in member.table_types if c["name"] not in partition_by]
    written = []
    for k, part in enumerate(member.parts):
        table = part_table(member, part, features)
        if table.num_rows == 0:
            continue
        for folder, rows in partition_groups(table, partition_by):
            name = "/".join(filter(None, (DATA_FOLDER, folder, f"part-{member.index:05d}-{k:06d}-0.parquet")))
            encoded = encoded_parquet(rows, **_writer_options(cells, features))
            data = bytes(encoded)
            encoded.release()
            target = location.child(name)
            storage_call(target, f"uploading {name}", lambda t=target, d=data: location.fs.pipe_file(t, d))
            written.append((name, hashlib.sha256(data).hexdigest()))
    return written


def _check_partitions(cohort: Cohort, partition_by: tuple[str, ...]) -> None:
    first = cohort.members[0] if cohort.members else None
    for member in cohort.members:
        if member.table_types != first.table_types:
            raise CohortError(f"write_dataset: the cells columns of {member.label} ({_names(member)}) differ from "
                              f"those of {first.label} ({_names(first)}); one dataset has one schema")
        types = {c["name"]: c["type"] for c in member.table_types}
        for column in partition_by:
            if types.get(column) != "character":
                what = "has no column" if column not in types else f"holds {types[column]} in column"
                raise CohortError(f"partition_by: {member.label} {what} {column!r}; partition columns are "
                                  "character cells columns (e.g. sample_id, image_id)")


def _names(member: Member) -> str:
    return ", ".join(f"{c['name']}: {c['type']}" for c in member.table_types)


def _write_parts(cohort: Cohort, stage: Path, partition_by: tuple[str, ...], client: Any,
                 progress: bool | None, direct: bool) -> list[list[tuple[str, str]]]:
    """Run the write tasks; [(relative file, sha256), ...] per member, or raise naming every failure. Each
    member's files are fsynced here, in a thread, as soon as its result arrives."""
    task = dask.delayed(guarded(write_member), pure=False)
    tasks = [task(m, str(stage), cohort.feature_ids, partition_by, direct) for m in cohort.members]
    syncs: list[Future[None]] = []
    with in_turn(name="cellspec-fsync") as syncing:

        def arrived(_: int, rows: Any) -> None:
            if not isinstance(rows, Failure):
                syncs.append(syncing(_fsync_files, stage, rows))

        results = run(tasks, cohort.directories, "writing dataset", client=client, progress_bar=progress,
                      on_result=arrived)
    failures = [r for r in results if isinstance(r, Failure)]
    if failures:
        raise CohortError(f"write_dataset: {len(failures)} of {len(results)} directories failed; nothing was "
                          "written", failures)
    for synced in syncs:
        synced.result()  # an fsync that failed is raised: the data may not be on disk
    return results


def _fsync_files(stage: Path, rows: list[tuple[str, str]]) -> None:
    """fsync a member's files, then the folders holding them (their new names) as far as they are now."""
    for name, _ in rows:
        fsync_file(stage / name)
    for folder in dict.fromkeys((stage / name).parent for name, _ in rows):
        fsync_dir(folder)


def write_member(member: Member, stage: str, features: list[str], partition_by: tuple[str, ...],
                 direct: bool = False) -> list[tuple[str, str]]:
    """Check every file ``member`` lists against its manifest (each hashed once), then write each of its parts
    (:func:`write_part`); [(file relative to stage, sha256)] in part order. A file that does not match its
    manifest is raised before anything of the directory is written. A member on a store is decoded from the
    bytes that were hashed (:func:`~cellspec_sc.cohort._members.verified`)."""
    with verified(member):
        return [item for k in range(len(member.parts))
                for item in write_part(member, k, stage, features, partition_by, direct)]


def write_part(member: Member, k: int, stage: str, features: list[str], partition_by: tuple[str, ...],
               direct: bool = False) -> list[tuple[str, str]]:
    """Write part ``k`` of ``member`` into ``stage``, one file per partition in the order the partitions
    first appear; [(file relative to stage, sha256 of the bytes written)]. ``direct``: around the page cache
    (:class:`~cellspec_sc.io._direct.DirectFile`); each file's (remaining) writeback starts as soon as it is
    complete; the fsync comes once, at publication."""
    table = part_table(member, member.parts[k], features)
    if table.num_rows == 0:
        return []
    cells = [c for c in member.table_types if c["name"] not in partition_by]
    written = []
    for folder, rows in partition_groups(table, partition_by):
        name = "/".join(filter(None, (DATA_FOLDER, folder, f"part-{member.index:05d}-{k:06d}-0.parquet")))
        path = Path(stage) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        encoded = encoded_parquet(rows, **_writer_options(cells, features))
        with HashingFile(path, direct=direct) as sink:
            sink.write_unchanged(encoded)  # the buffer stays as it is until the next part is encoded
        encoded.release()
        start_writeback(path)
        written.append((name, sink.hexdigest()))
    return written


def _writer_options(cells: list[dict[str, str]], features: list[str]) -> dict[str, Any]:
    """Statistics and Snappy for the cells columns (``column_types`` entries), dictionaries for those that are
    not doubles (coordinates and areas are nearly all distinct: the encoder would fill a dictionary page and
    give up); measured doubles plain and uncompressed: Snappy finds next to nothing to take out of measured
    doubles, and on a dask worker its scratch memory is new pages for every page it compresses (malloc gives
    them back at once there), about 0.05 s of kernel time per 100 MB part.

    >>> o = _writer_options([{"name": "cell_id", "type": "character"}, {"name": "x", "type": "double"}], ["f"])
    >>> o["use_dictionary"], o["write_statistics"], o["compression"]
    (['cell_id'], ['cell_id', 'x'], {'cell_id': 'snappy', 'x': 'snappy', 'f': 'none'})
    """
    names = [c["name"] for c in cells]
    return {"use_dictionary": [c["name"] for c in cells if c["type"] != "double"], "write_statistics": names,
            "compression": {**dict.fromkeys(names, "snappy"), **dict.fromkeys(features, "none")}}


def cohort_record(cohort: Cohort, partition_by: tuple[str, ...], files: list[list[tuple[str, str]]],
                  target: Path) -> CohortRecord:
    """The cohort.json record of ``cohort`` written as a dataset: ``files`` per member, [(file, sha256)]."""
    tables = {"dictionary": cohort.dictionary, "images": cohort.images, "channels": cohort.channels}
    table_types = {t: column_types_of(frame, t, target) for t, frame in tables.items()}
    first = cohort.members[0].table_types if cohort.members else []
    column_types = first + [{"name": f, "type": "double"} for f in cohort.feature_ids]
    provenance = {**cohort.provenance, "created_utc": utc_now(),
                  "writer": {"package": "cellspec_sc", "version": package_version(),
                             "function": "cellspec_sc.Cohort.write_dataset"}}
    sources = provenance.pop("sources")
    for source, member, rows in zip(sources, cohort.members, files, strict=True):
        source["files"] = [f for f, _ in rows]
        source["extensions"] = member.extensions
        source["images"] = sorted(member.images["image_id"].dropna().astype(str)) if "image_id" in member.images \
            else []
    return CohortRecord(spec_version=SPEC_VERSION, features=cohort.plan.mode, partition_by=partition_by,
                        column_types=column_types, table_types=table_types, tables=tables, provenance=provenance,
                        sources=sources)


# -- opening a written dataset ----------------------------------------------------------------------------------------


def read_dataset(root: Path, max_inflation: float = DEFAULT_MAX_INFLATION
                 ) -> tuple[list[Member], FeaturePlan, tuple[str, ...]]:
    """The members, feature plan and partition columns of the cohort stored in the dataset at ``root``
    (manifest, DONE and cohort.json checked; the dataset is exactly its manifest: every listed file present with
    its hash, nothing else; each part file's footer read and bounded by ``max_inflation``)."""
    entries = read_manifest(root)
    if COHORT_FILE not in entries:
        raise UnlistedDataFile(root, COHORT_FILE, "is not listed in MANIFEST.sha256")
    _refuse_unlisted(root, entries)
    verify_listed(root, entries, deferred=[f for f in entries if f != COHORT_FILE]).check()
    record = _load(root)
    done = (root / DONE).read_bytes().decode("ascii", errors="replace").strip().lower()
    tables = record.tables
    column_types = record.column_types
    feature_ids = [str(f) for f in tables["dictionary"]["feature_id"]]
    table_types = column_types[:len(column_types) - len(feature_ids)]
    stored = [c for c in column_types if c["name"] not in record.partition_by]  # in folder names instead
    members = []
    for index, source in enumerate(record.sources):
        label = source["directory"]
        files = list(source["files"]) + ([COHORT_FILE] if index == 0 else [])
        missing = [f for f in files if f not in entries]
        if missing:
            raise UnlistedDataFile(root, missing[0], "is named by cohort.json but not listed in MANIFEST.sha256")
        parts = tuple(p for f in source["files"]
                      for p in footer_parts(root, f, stored, feature_ids, constants_of(f), max_inflation)[1])
        own = {t: _rows_of(tables[t], label) for t in ("images", "channels")}
        members.append(Member(label=label, root=root.resolve(), index=index, spec_version=source["spec_version"],
                              table_types=table_types, feature_ids=feature_ids, dictionary=tables["dictionary"],
                              provenance=source["provenance"], entries={f: entries[f] for f in files}, done=done,
                              stamps={f: stamp_of(root / f) for f in files}, parts=parts,
                              extensions=source.get("extensions", {}), **own))
    missing = record.provenance.get("missing_features", {})
    plan = FeaturePlan(record.features, tables["dictionary"], missing)
    return members, plan, record.partition_by


def _refuse_unlisted(root: Path, entries: Mapping[str, str]) -> None:
    """Refuse any file of the dataset its manifest does not list (a part copied in would be read as more cells)."""
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            relative = (Path(folder) / name).relative_to(root).as_posix()
            if relative not in entries and relative not in (DONE, "MANIFEST.sha256"):
                raise UnlistedDataFile(root, relative, "present but not listed in MANIFEST.sha256: a cohort dataset "
                                                       "is exactly the files its manifest lists")


def _rows_of(frame: Any, label: str) -> Any:
    return frame[(frame["directory"] == label).to_numpy()].drop(columns="directory").reset_index(drop=True)


def _load(root: Path) -> CohortRecord:
    try:
        document = json.loads((root / COHORT_FILE).read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CohortError(f"{root}: {COHORT_FILE}: not UTF-8 JSON ({err})") from None
    return decode(document, where=root)


# -- hive folders ----------------------------------------------------------------------------------------------------


def hive_value(text: str) -> str | None:
    """A hive path segment's value (URI-decoded; the default partition is NA)."""
    return None if text == HIVE_NULL else unquote(text)


def constants_of(file: str) -> tuple[tuple[str, str | None], ...]:
    """The (column, value) pairs of a file's hive path (below the dataset's data folder)."""
    folders = PurePosixPath(file).parts[1:-1]
    return tuple((name, hive_value(value)) for name, _, value in (f.partition("=") for f in folders))


def partition_groups(table: pa.Table, columns: tuple[str, ...]) -> Iterator[tuple[str, pa.Table]]:
    """(hive folder, its rows without the partition columns) for each partition of ``table`` (string
    ``columns``), in the order of first appearance; rows keep their order. No columns: one group, folder ""."""
    body = table.drop_columns(list(columns))
    if not columns:
        yield "", body
        return
    codes = _first_seen_codes(table, columns)
    order = np.argsort(codes, kind="stable")
    scheme = ds.partitioning(pa.schema([(c, pa.string()) for c in columns]), flavor="hive")
    start = 0
    for count in np.bincount(codes):
        rows = order[start:start + count]
        start += count
        first = int(rows[0])
        contiguous = int(rows[-1]) - first + 1 == count
        piece = body.slice(first, count) if contiguous else body.take(pa.array(rows))
        yield _folder(scheme, {c: table.column(c)[first].as_py() for c in columns}), piece


def _first_seen_codes(table: pa.Table, columns: tuple[str, ...]) -> np.ndarray:
    """One integer per row naming its combination of ``columns`` values, numbered by first appearance."""
    per_column = [pc.dictionary_encode(table.column(c).combine_chunks(), null_encoding="encode").indices
                  .to_numpy(zero_copy_only=False) for c in columns]
    if len(per_column) == 1:
        return per_column[0].astype(np.intp)  # dictionary_encode numbers values as they first appear
    _, first, inverse = np.unique(np.stack(per_column, axis=1), axis=0, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.intp)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank[inverse.ravel()]


def _folder(scheme: ds.Partitioning, values: dict[str, str | None]) -> str:
    expressions = [pc.field(c).is_null() if v is None else pc.field(c) == v for c, v in values.items()]
    condition = expressions[0]
    for e in expressions[1:]:
        condition = condition & e
    return _non_ascii_as_text(scheme.format(condition)[0])


def _non_ascii_as_text(folder: str) -> str:
    """``folder`` with its percent-encoded printable non-ASCII characters written as text. Non-printable ones
    (line and paragraph separators, which would split a manifest line) stay encoded."""
    return _ENCODED_NON_ASCII.sub(
        lambda run: "".join(c if c.isprintable() else quote(c, safe="") for c in unquote(run.group())), folder)
