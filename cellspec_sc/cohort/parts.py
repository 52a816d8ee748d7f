"""Reading one part (a Parquet row group) of a cohort member, on a worker.

Every read checks before and after that the file is the one the cohort opened
(size, modification time, inode), so a result never mixes two versions of a
directory. A task holds the rows of one row group at a time; columns are
decoded in batches of about 8 MB (:func:`cellspec_sc.io.parquet_matrix.fill_row_group`).

>>> import cellspec_sc as cs, tempfile, pathlib
>>> from cellspec_sc.cohort.members import open_directory
>>> x = cs.example()
>>> m = open_directory(cs.write(x, pathlib.Path(tempfile.mkdtemp()) / "s"), 0)
>>> block = feature_block(m, m.parts[0], ["cell:area", "not there"])
>>> block.shape, bool((block[:, 0] == x.measurements[:, x.feature_ids.index("cell:area")]).all())
((80, 2), True)
>>> cells_frame(m).equals(x.cells)
True
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cellspec_sc.cohort.members import Member, Part, check_stamp
from cellspec_sc.io import (ARROW_TYPES, DAMAGED_DATA_ERRORS, UndecodableData, arrow_to_frame, conform, damage_text,
                            fill_row_group, gather_row_group_stats)
from cellspec_sc.model import MatrixStats, empty_matrix

def _handle(member: Member, part: Part) -> pq.ParquetFile:
    # pre_buffer=False: each column chunk read into a buffer of its own size, which the memory pool reuses;
    # pre-buffering coalesces a row group into reads of tens of MB, new memory on every read (page faults and
    # zeroing of huge pages: 2-3x the CPU of the whole read on a dask worker)
    try:
        return pq.ParquetFile(member.root / part.file, pre_buffer=False)
    except DAMAGED_DATA_ERRORS as err:
        raise UndecodableData(member.root, part.file, f"not a readable Parquet file: {damage_text(err)}") from None


@contextmanager
def reading(member: Member, part: Part) -> Iterator[pq.ParquetFile]:
    """The part's Parquet file, checked unchanged since the cohort was opened before and after the block;
    a decoding error becomes UndecodableData naming the file and row group."""
    check_stamp(member, part.file)
    handle = _handle(member, part)
    try:
        yield handle
    except DAMAGED_DATA_ERRORS as err:
        raise UndecodableData(member.root, part.file, f"row group {part.row_group} cannot be decoded: {err}") \
            from None
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
