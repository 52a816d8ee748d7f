"""One member of a cohort: what the client knows of a cellspec directory without reading its cells.

A :class:`Member` holds a directory's metadata (cellspec.json tables, the
manifest entries and DONE as they were when the cohort was opened, the size,
modification time and inode of every listed file) and its :class:`Part` list:
the Parquet row groups that hold its cells. Workers receive members (paths,
row ranges and metadata, a few kB), never matrices.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> path = cs.write(cs.example(), pathlib.Path(tempfile.mkdtemp()) / "slide")
>>> m = open_directory(path, 0)
>>> m.n_cells, [p.file for p in m.parts], m.feature_ids[:1]
(80, ['cells.parquet'], ['cell:DAPI:mean'])
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from cellspec_sc.errors import InputError
from cellspec_sc.io import (DEFAULT_MAX_INFLATION, DONE, JSON_TABLES, KNOWN_KEYS, METADATA, ChangedSinceRead,
                            NotACellspecDirectory, UnlistedDataFile, UnreadableFile, check_footer,
                            check_outlines_listed, check_stored_columns, feature_ids_of, frame_of_rows, listed_format,
                            load_document, open_parquet, read_manifest, verify_listed)

Stamp = tuple[int, int, int]  # size, modification time (ns), inode


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

    @property
    def n_cells(self) -> int:
        return sum(p.kept for p in self.parts)

    @property
    def offsets(self) -> list[int]:
        """First kept row of each part within the member."""
        out, start = [], 0
        for p in self.parts:
            out.append(start)
            start += p.kept
        return out

    def with_images(self, images: frozenset[str], parts: tuple[Part, ...]) -> Member:
        keep = self.images["image_id"].isin(images).to_numpy() if "image_id" in self.images else []
        channels = self.channels[self.channels["image_id"].isin(images).to_numpy()] \
            if "image_id" in self.channels else self.channels
        return replace(self, images=self.images[keep].reset_index(drop=True),
                       channels=channels.reset_index(drop=True), image_filter=images, parts=parts)


def stamp_of(path: Path) -> Stamp:
    info = os.stat(path)
    return info.st_size, info.st_mtime_ns, info.st_ino


def check_stamp(member: Member, file: str) -> None:
    """Refuse a file that changed (size, time or inode) since the cohort was opened."""
    try:
        now = stamp_of(member.root / file)
    except FileNotFoundError:
        raise ChangedSinceRead(member.root, file, "was removed after the cohort was opened") from None
    if now != member.stamps[file]:
        raise ChangedSinceRead(member.root, file, "changed after the cohort was opened; open the cohort again")


def verify_member(member: Member) -> None:
    """Every file the member lists still has the SHA-256 recorded when the cohort was opened (each hashed
    once) and did not change while it was hashed; DONE is unchanged. Raises the refusal naming the file."""
    for file in member.stamps:
        check_stamp(member, file)
    if member.done is not None and _done_text(member.root) != member.done:
        raise ChangedSinceRead(member.root, DONE, "changed after the cohort was opened (the directory was "
                                                  "rewritten); open the cohort again")
    verify_listed(member.root, member.entries).check()
    for file in member.stamps:
        check_stamp(member, file)


def _done_text(root: Path) -> str:
    return (root / DONE).read_bytes().decode("ascii", errors="replace").strip().lower()


def footer_parts(root: Path, file: str, types: list[dict[str, str]], feature_ids: list[str], constants: tuple = (),
                 max_inflation: float = DEFAULT_MAX_INFLATION) -> tuple[list[dict[str, str]], tuple[Part, ...]]:
    """The cells column types of a Parquet file and one part per row group (every row kept), after checking
    its footer as ``read`` does: decodable, row counts that add up and are bounded (``max_inflation``), the
    columns of ``types`` (cells columns, then ``feature_ids`` as double)."""
    handle = open_parquet(root / file, root, file)
    meta = handle.metadata
    check_footer(meta, root / file, root, file, max_inflation)
    table_types = check_stored_columns(handle.schema_arrow, types, feature_ids, root, file)
    return table_types, tuple(Part(file, i, meta.row_group(i).num_rows, meta.row_group(i).num_rows, constants)
                              for i in range(meta.num_row_groups))


def open_directory(path: str | Path, index: int, label: str | None = None,
                   max_inflation: float = DEFAULT_MAX_INFLATION) -> Member:
    """The member for a cellspec directory: its manifest, DONE and cellspec.json checked (cellspec.json
    hashed, it is small), the Parquet footer read and bounded (``max_inflation``, as in ``read``); the
    cells are not read."""
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
