"""Columns of text that a tool's grammar does not know: QuPath exports can carry
project metadata (``Patient``, ``Stain (metadata)``) beside the measurements, and a reader that took every
unknown column for a measurement would refuse the file at its first ``P01``.

A column whose name ends in ``(metadata)`` is text. Another counts as text when the parse failed and, in
the first rows of the file (those the reader keeps), it holds letters and no value that reads as a number. The
column the parse failed on is then looked at in every row (it may be empty until an image with metadata
comes, far down a multi-image export). A column with numbers and text mixed stays a measurement and its
first text value is refused with line and column, as before.

>>> looks_like_numbers(pa.array(["1.5", " -2e3", "NaN", "Infinity", None, "P01"])).tolist()
[True, True, True, True, False, False]
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from cellspec_sc.errors import InputError
from cellspec_sc.readers.headers import Header, other_name
from cellspec_sc.readers.notices import notice
from cellspec_sc.readers.parsing import NotANumber, Parsed, read_as_text
from cellspec_sc.readers.piece_parse import read_options
from cellspec_sc.readers.pipeline import ColumnRoles
from cellspec_sc.spec import vocabulary

# Bytes of the file whose rows decide (about 60 rows of 120 columns): a metadata column holds text on every
# row, and a small export must not pay for a big sample.
SAMPLE_BYTES = 1 << 16
NUMBER = r"^\s*[-+]?((\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|[Nn]a[Nn]|[Ii]nf(inity)?)\s*$"


def looks_like_numbers(values: pa.Array) -> np.ndarray:
    """Which values read as numbers (False for missing ones)."""
    return pc.fill_null(pc.match_substring_regex(values, NUMBER), False).to_numpy(zero_copy_only=False)


def named_metadata(candidates: Sequence[str]) -> list[str]:
    """The columns whose names say they are project metadata (``Stain (metadata)``): text, whatever they hold.

    >>> named_metadata(["Nucleus: CD3: Mean", "Stain (metadata)"])
    ['Stain (metadata)']
    """
    return [c for c in candidates if c.rstrip().endswith("(metadata)")]


def text_columns(header: Header, candidates: Sequence[str], keep: tuple[str, Sequence[str]] | None = None
                 ) -> list[str]:
    """Those of ``candidates`` that hold only text in the first :data:`SAMPLE_BYTES` of the file, counting
    only the rows ``keep=(column, values)`` keeps (a reader asks after a parse failed, so a file without
    such columns never pays for the look)."""
    table = _sample(header)
    if table is None:
        return []
    table = _kept(table, keep)
    return [name for name in candidates if name in table.column_names and holds_text(table.column(name))]


def holds_text(values: pa.ChunkedArray) -> bool:
    """Letters and no value that reads as a number (empty values aside): ``"101,25"`` (a decimal comma) is
    no text, so it stays a measurement and is refused.

    >>> holds_text(pa.chunked_array([[None, "", "P01"]])), holds_text(pa.chunked_array([["P01", "2"]]))
    (True, False)
    """
    values = pc.drop_null(values).combine_chunks()
    values = values.filter(pc.not_equal(pc.utf8_trim_whitespace(values), ""))
    return bool(len(values)) and not looks_like_numbers(values).any() and bool(
        pc.any(pc.match_substring_regex(values, r"[A-Za-z]")).as_py())


def _kept(table: pa.Table, keep: tuple[str, Sequence[str]] | None) -> pa.Table:
    """The rows of ``table`` that ``keep=(column, values)`` keeps (all rows: None)."""
    if keep is None or keep[0] not in table.column_names:
        return table
    return table.filter(pc.fill_null(pc.is_in(table.column(keep[0]), value_set=pa.array(list(keep[1]))), False))


def failed_on_text(header: Header, err: InputError, candidates: Sequence[str],
                   keep: tuple[str, Sequence[str]] | None = None) -> list[str]:
    """``[column]`` when ``err`` is a value of one of ``candidates`` that is not a number and that column,
    over every row ``keep`` keeps, holds text (:func:`holds_text`); else ``[]``. Reads only that column (and
    ``keep``'s) as text, so memory is one column of the file."""
    if not isinstance(err, NotANumber) or err.column not in candidates:
        return []
    names = [err.column, *([keep[0]] if keep is not None and keep[0] != err.column else [])]
    try:
        table = read_as_text(header, names)
    except InputError:
        return []  # the parse's own refusal says what is wrong
    return [err.column] if holds_text(_kept(table, keep).column(err.column)) else []


def _sample(header: Header) -> pa.Table | None:
    """The header and the whole lines of the file's first :data:`SAMPLE_BYTES`, every column as text."""
    with open(header.path, "rb") as handle:
        data = handle.read(SAMPLE_BYTES)
    end = data.rfind(b"\n")
    if end < 0:
        return None
    try:
        return pacsv.read_csv(io.BytesIO(data[: end + 1]), read_options=read_options(header, use_threads=False),
                              parse_options=pacsv.ParseOptions(delimiter=header.delimiter),
                              convert_options=pacsv.ConvertOptions(
                                  column_types={n: pa.string() for n in header.names}, strings_can_be_null=True))
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None  # the parse itself names what is wrong, with its line


def parse_finding_text(parse: Callable[[ColumnRoles], Parsed], header: Header, roles: ColumnRoles,
                       metadata: dict[str, str], *, fixed_names: Iterable[str | None]
                       ) -> tuple[Parsed, ColumnRoles | None]:
    """``parse(roles)``; if it fails, and :func:`text_columns` finds text among ``roles.matrix`` (or
    :func:`failed_on_text` finds the column it failed on is text), those are added to ``metadata`` (column ->
    cells column) and the file is parsed again with them as text, until it parses or fails on a column that
    is no text. Returns the parse and the roles it used when they changed (None: ``roles``)."""
    settled, sampled = roles, False
    while True:
        try:
            return parse(settled), (None if settled is roles else settled)
        except InputError as err:  # looked for only now, so a file without such columns never pays for the look
            found = [] if sampled else text_columns(header, settled.matrix, settled.keep)
            sampled = True
            found = found or failed_on_text(header, err, settled.matrix, settled.keep)
            if not found:
                raise
        metadata.update(metadata_columns(header, found, fixed_names=[*fixed_names, *metadata.values()]))
        matrix = [n for n in settled.matrix if n not in metadata]
        settled = replace(settled, text=[*settled.text, *found], matrix=matrix)


def metadata_columns(header: Header, names: Sequence[str], *, fixed_names) -> dict[str, str]:
    """The cells column (snake_case, never a column of the spec's cells table nor one of ``fixed_names``) for
    each text column ``names``, said in a warning.

    >>> import warnings
    >>> from pathlib import Path
    >>> with warnings.catch_warnings(record=True):
    ...     metadata_columns(Header(Path("m.tsv"), "\\t", ("Patient", "x")), ["Patient", "x"], fixed_names=["name"])
    {'Patient': 'patient', 'x': 'x_text'}
    """
    taken = {*(n for n in fixed_names if n), *(c.name for c in vocabulary().columns("cells") if not c.is_pattern)}
    out = {}
    for name in names:
        target = other_name(name)
        while target in taken:
            target += "_text"
        out[name] = target
        taken.add(target)
    if out:
        notice(f"{header.path.name}: column(s) {', '.join(map(repr, out))} hold text, not measurements (project "
               f"metadata?); kept as cells column(s) {', '.join(out.values())}")
    return out
