"""The TSV variant of the cells and adjacency files (``cells.tsv.gz``, ``adjacency.tsv.gz``).

UTF-8, gzip, header row, tab separated, ``NA`` for missing, doubles with 15
significant digits, logicals as ``TRUE``/``FALSE``. Strings that contain a tab,
newline, carriage return, quote or backslash, that equal ``NA`` or that are empty
are quoted (``"..."``, an inner quote doubled), so they read back unchanged. The
file has no types of its own: they come from ``column_types`` in cellspec.json.

>>> format_double(0.1 + 0.2), format_double(-0.0), format_double(1.7976931348623157e308)
('0.3', '-0', '1.7976931348623157e+308')
>>> quote("NA"), quote('a"b'), quote("plain")
('"NA"', '"a""b"', 'plain')
"""

from __future__ import annotations

import gzip
import math
import os
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from cellspec_sc.io._bounded import DEFAULT_MAX_INFLATION, INFLATION_FLOOR_BYTES, InflationGuard, open_regular
from cellspec_sc.io._columns import (
    ARROW_TYPES,
    DAMAGED_DATA_ERRORS,
    Decoded,
    MatrixFiller,
    arrow_to_frame,
    batch_ranges,
    check_file_columns,
    file_columns,
)
from cellspec_sc.io._refusals import UndecodableData
from cellspec_sc.io._storage import FetchedFile
from cellspec_sc.progress import progress

SIGNIFICANT_DIGITS = 15
_NEEDS_QUOTES = ("\t", "\n", "\r", '"', "\\")
_WRITE_BATCH_BYTES = 1 << 22
_DECODE_ERRORS = (*DAMAGED_DATA_ERRORS, EOFError, zlib.error)
_COMPRESSED_BYTES_PER_VALUE = 6  # about, for measured doubles: the reader's progress threshold


def quote(text: str) -> str:
    """``text`` as a TSV field: quoted when it would not read back unchanged otherwise."""
    if text == "NA" or text == "" or any(ch in text for ch in _NEEDS_QUOTES):
        return '"' + text.replace('"', '""') + '"'
    return text


def format_double(value: float) -> str:
    """A double with 15 significant digits; ``NA`` for NaN (NA in memory), ``Inf``/``-Inf``.

    The few values next to the largest double that 15 digits would round up to
    infinity are written with the digits needed to stay finite.
    """
    if math.isnan(value):
        return "NA"
    if math.isinf(value):
        return "Inf" if value > 0 else "-Inf"
    text = f"{value:.{SIGNIFICANT_DIGITS}g}"
    return repr(value) if math.isinf(float(text)) else text


# 15 significant digits may round values from here up to infinity (checked one by one)
_ROUNDS_TO_INFINITY = 1.79769313486231e308


def format_doubles(values: np.ndarray) -> list[str]:
    """:func:`format_double` over an array (the special values are found with numpy)."""
    out = [f"{v:.{SIGNIFICANT_DIGITS}g}" for v in values.tolist()]
    with np.errstate(invalid="ignore"):
        special = ~np.isfinite(values) | (np.abs(values) >= _ROUNDS_TO_INFINITY)
    for i in np.flatnonzero(special).tolist():
        out[i] = format_double(float(values[i]))
    return out


def text_column(array: pa.Array, spec_type: str) -> pa.Array:
    """A column as TSV fields (an Arrow string array without nulls); quoting and NA done in Arrow."""
    if spec_type == "double":
        return pa.array(format_doubles(array.to_numpy(zero_copy_only=False)), type=pa.string())
    if spec_type == "character":
        quoted = pc.binary_join_element_wise('"', pc.replace_substring(array, '"', '""'), '"', "")
        needs = pc.or_(pc.match_substring_regex(array, r'[\t\n\r"\\]'),
                       pc.is_in(array, value_set=pa.array(["NA", ""])))
        return pc.fill_null(pc.if_else(needs, quoted, array), "NA")
    if spec_type == "logical":
        return pc.fill_null(pc.if_else(array, "TRUE", "FALSE"), "NA")
    return pc.fill_null(pc.cast(array, pa.string()), "NA")


def _lines(columns: list[pa.Array]) -> memoryview:
    """Tab-joined fields, one line per row with its newline, as the bytes of one Arrow buffer."""
    rows = pc.binary_join_element_wise(*columns, "\t") if len(columns) > 1 else columns[0]
    lines = pc.binary_join_element_wise(rows, "", "\n")
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)[lines.offset:lines.offset + len(lines) + 1]
    return memoryview(lines.buffers()[2])[offsets[0]:offsets[-1]]


def write_tsv(path: Path, frame: pd.DataFrame, types: list[dict[str, str]], matrix: np.ndarray | None,
              feature_ids: list[str], table: str, directory: Path | str,
              after_batch: Callable[[], None] = lambda: None) -> None:
    """Write ``frame`` and the feature columns of ``matrix`` as a gzipped TSV file, a row batch at a time.

    ``after_batch`` is called after each batch (the directory writer stops there if validation failed).
    """
    arrays, schema = file_columns(frame, types, feature_ids, table, directory)
    kinds = [c["type"] for c in types]
    # mtime=0: the same object gives the same bytes; level 1: zlib at level 6 took longer than formatting
    with gzip.GzipFile(path, "wb", compresslevel=1, mtime=0) as out, \
            progress(len(frame), f"writing {path.name}", size=len(frame) * len(schema)) as bar:
        out.write(("\t".join(quote(n) for n in schema.names) + "\n").encode("utf-8"))
        for start, stop in batch_ranges(len(frame), len(schema), _WRITE_BATCH_BYTES):
            if stop == start or not len(schema):
                continue
            columns = [text_column(a.slice(start, stop - start), k) for a, k in zip(arrays, kinds, strict=True)]
            if feature_ids:
                block = np.asarray(matrix[start:stop], dtype=np.float64)
                columns += [pa.array(format_doubles(block[:, j]), type=pa.string()) for j in range(block.shape[1])]
            out.write(_lines(columns))
            after_batch()
            bar.update(stop - start)


def _options(types: list[dict[str, str]]) -> dict:
    return {
        "read_options": pacsv.ReadOptions(block_size=1 << 22, use_threads=False),
        "parse_options": pacsv.ParseOptions(delimiter="\t", quote_char='"', double_quote=True, escape_char=False,
                                            newlines_in_values=True, ignore_empty_lines=False),
        "convert_options": pacsv.ConvertOptions(
            column_types={c["name"]: ARROW_TYPES[c["type"]] for c in types}, null_values=["NA"],
            strings_can_be_null=True, quoted_strings_can_be_null=False,
            true_values=["TRUE", "true"], false_values=["FALSE", "false"]),
    }


def _inflating(path: Path | FetchedFile, directory: Path | str, ratio: float) -> tuple[Any, int, InflationGuard]:
    """The compressed file (its position drives the progress bar), its size and the bounded inflating stream
    over it."""
    compressed = path.open() if isinstance(path, FetchedFile) else open_regular(path, directory, path.name)
    size = path.size if isinstance(path, FetchedFile) else os.fstat(compressed.fileno()).st_size
    limit = max(INFLATION_FLOOR_BYTES, int(ratio * size))
    return compressed, size, InflationGuard(gzip.GzipFile(fileobj=compressed, mode="rb"), limit, directory, path.name,
                                            ratio)


def read_tsv(path: Path | FetchedFile, types: list[dict[str, str]], feature_ids: list[str],
             directory: Path | str, *, max_inflation: float = DEFAULT_MAX_INFLATION) -> Decoded:
    """The table columns as a canonical frame, the measurement matrix and stored-NaN counts per feature.

    The file may inflate to ``max_inflation`` times its size (at least 64 MiB), else FileTooLarge."""
    file = path.name
    raw, size, stream = _inflating(path, directory, max_inflation)
    # both closed on every way out, so that a reader thread still reading from them stops at once
    with raw, stream:
        try:
            reader = pacsv.open_csv(stream, **_options(types))
            stored = reader.schema.names
        except _DECODE_ERRORS as err:
            raise UndecodableData(directory, file, f"not a readable gzipped TSV file: {err}") from None
        table_types = check_file_columns(stored, types, feature_ids, directory, file)
        names = [c["name"] for c in table_types]
        filler = MatrixFiller(feature_ids)
        batches = []
        try:
            # the row count is unknown until the end: the bar counts compressed bytes
            with progress(size, f"reading {file}", unit="B", size=size / _COMPRESSED_BYTES_PER_VALUE) as bar:
                for batch in reader:
                    stream.check_decoded()
                    filler.add(batch)
                    batches.append(batch.select(names))
                    bar.update(raw.tell() - bar.n)
        except _DECODE_ERRORS as err:
            raise UndecodableData(directory, file, f"TSV data cannot be decoded: {err}") from None
        finally:
            reader.close()  # a refused read must not leave the reader's thread running into interpreter exit
    schema = pa.schema([pa.field(c["name"], ARROW_TYPES[c["type"]]) for c in table_types])
    columns = pa.Table.from_batches(batches, schema=schema)
    return Decoded(arrow_to_frame(columns, table_types), filler.finish(), filler.stored_nan)
