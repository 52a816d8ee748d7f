"""The hive layout of a cohort dataset: rows split by partition values, folder names and back.

A cohort dataset keeps each partition column in the folder names
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

import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from urllib.parse import quote, unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_ENCODED_NON_ASCII = re.compile(r"(?:%[89A-Fa-f][0-9A-Fa-f])+")  # a run of percent-encoded UTF-8 bytes >= 0x80


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
