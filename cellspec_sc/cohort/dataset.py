"""``Cohort.write_dataset``: the whole cohort as one hive-partitioned Parquet dataset.

Each worker task takes one directory: it hashes every file the directory lists
(against the manifest seen when the cohort was opened), then reads its row
groups one at a time and writes each one's rows (cells columns, then one float64
column per cohort feature, NA as null) with
``pyarrow.parquet.ParquetWriter``: one file per partition under
``cells/<column>=<value>/`` (folder names by pyarrow's hive partitioning,
:mod:`cellspec_sc.cohort.hive`), one row group per file, encoded into a buffer
the worker thread reuses (:func:`~cellspec_sc.io.encoded.encoded_parquet`). The
task hashes each file as it writes it (:class:`~cellspec_sc.io.hashing.HashingFile`:
the bytes on their way to disk; the file is never read back). On a local disk file system
the parts are written around the page cache (``O_DIRECT``,
:class:`~cellspec_sc.io.direct.DirectFile`): the kernel's page cache and
writeback work would otherwise compete with the workers for the cores; elsewhere
the task asks the kernel to start writing each file to disk
(:func:`~cellspec_sc.io.staging.start_writeback`) and does not wait. One task
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
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dask

from cellspec_sc.cohort.dataset_read import COHORT_FILE, DATA_FOLDER, FORMAT_VERSION, TABLES
from cellspec_sc.cohort.failures import CohortError, Failure, guarded
from cellspec_sc.cohort.hive import partition_groups
from cellspec_sc.cohort.members import Member, verify_member
from cellspec_sc.cohort.parts import part_table
from cellspec_sc.cohort.run import run
from cellspec_sc.io import (HashingFile, TargetKind, column_types_of, dump_document, encoded_parquet, fsync_dir,
                            fsync_file, fsync_tree, publishing, rows_of, start_writeback, suits_direct_io,
                            write_manifest)
from cellspec_sc.model import package_version, utc_now
from cellspec_sc.spec import SPEC_VERSION

if TYPE_CHECKING:
    from cellspec_sc.cohort.cohort import Cohort

COHORT_DATASET = TargetKind("a cohort dataset", True, lambda path: path.is_dir() and (path / COHORT_FILE).is_file())


def write_dataset(cohort: Cohort, path: str | Path, *, partition_by: Sequence[str] = ("sample_id",),
                  client: Any = None, progress: bool | None = None, overwrite: bool = False) -> Path:
    """Write ``cohort`` as a dataset at ``path``; returns the path. ``overwrite=True`` replaces an existing
    cohort dataset (never another kind of folder) once the new one is complete."""
    partition_by = tuple(partition_by)
    _check_partitions(cohort, partition_by)
    with publishing(path, COHORT_DATASET, overwrite=overwrite) as payload:
        payload.mkdir()
        files = _write_parts(cohort, payload, partition_by, client, progress, suits_direct_io(payload))
        document = _document(cohort, partition_by, files, Path(path))
        (payload / COHORT_FILE).write_bytes(dump_document(document, path))
        fsync_tree(payload)  # the workers did not wait for the disk: everything is on it before DONE
        write_manifest(payload, {COHORT_FILE: None, **{f: digest for rows in files for f, digest in rows}})
    return Path(path)


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
    with ThreadPoolExecutor(1, thread_name_prefix="cellspec-fsync") as syncing:

        def arrived(_: int, rows: Any) -> None:
            if not isinstance(rows, Failure):
                syncs.append(syncing.submit(_fsync_files, stage, rows))

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
    manifest is raised before anything of the directory is written."""
    verify_member(member)
    return [item for k in range(len(member.parts))
            for item in write_part(member, k, stage, features, partition_by, direct)]


def write_part(member: Member, k: int, stage: str, features: list[str], partition_by: tuple[str, ...],
               direct: bool = False) -> list[tuple[str, str]]:
    """Write part ``k`` of ``member`` into ``stage``, one file per partition in the order the partitions
    first appear; [(file relative to stage, sha256 of the bytes written)]. ``direct``: around the page cache
    (:class:`~cellspec_sc.io.direct.DirectFile`); each file's (remaining) writeback starts as soon as it is
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


def _document(cohort: Cohort, partition_by: tuple[str, ...], files: list[list[tuple[str, str]]],
              target: Path) -> dict[str, Any]:
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
    return {"cellspec_cohort": FORMAT_VERSION, "spec_version": SPEC_VERSION, "features": cohort.plan.mode,
            "partition_by": list(partition_by), "column_types": column_types, "table_types": table_types,
            **{t: rows_of(tables[t], table_types[t]) for t in TABLES}, "provenance": provenance,
            "sources": sources}

