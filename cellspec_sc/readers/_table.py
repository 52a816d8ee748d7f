"""The table engine of every reader: the header line, checks of what is no text, the parse into the matrix, and
checks of the parsed values.

**Header.** Headers are matched after :func:`normalise_header` (every micro-sign variant of the vocabulary read as
``u``, spaces collapsed); the header as written is kept in ``source_name``. The readers read UTF-8 or a
single-byte Windows code page with LF or CRLF line endings, from a regular file (they open it more than once: the
header line, the encoding sample, then the pieces; a file under 1 MB is parsed from its encoding sample, and every
file is hashed from the bytes its parse reads). Everything else gets an :class:`UnreadableText` naming file, line,
column and the rule, instead of a traceback from the csv module, a read that silently splits rows at a bare carriage
return, or a wait on a pipe.

**Parse.** pyarrow's streaming CSV reader parses one block after another, so it keeps one core busy. A file cut at
newlines (the readers, like pyarrow with ``newlines_in_values=False``, allow no line break inside a value) can be
parsed as independent pieces: :func:`stream_columns` hands them to :func:`cellspec_sc._background.ordered_map`
(pyarrow and numpy release the GIL while they parse and copy) and puts the results together in file order, with
only a few pieces in flight so that memory stays bounded. Each piece (:func:`parse_piece`, on a worker thread) is
read once (handing its bytes to the file's :class:`~cellspec_sc.io._hashing.PieceHash`, or, for a reader that
asks, keeping them to be hashed on another thread after the parse), checked, parsed in
cache-sized blocks, filtered to the rows the adapter asks for, and written directly into its rows of the
preallocated matrix (:class:`RowSlots` hands out the rows in file order), infinities converted to NA and the
:class:`~cellspec_sc.model._matrix_stats.MatrixStats` validation needs gathered on the way. Every parse
failure becomes an :class:`~cellspec_sc.InputError` naming file, line and column.

**Values.** Each check names the file, the line (data row i of a file is line i + 2) and the column of the first
offending value; the quick Arrow tests (:func:`has_missing_text`, :func:`ids_are_unique`) let readers skip the
slow path that names a problem when there is none. A :class:`ReaderWarning` never changes what is read;
``strict=True`` (where a reader offers it) turns the same finding into an :class:`~cellspec_sc.InputError`.

>>> normalise_header("Cell: Area \\u00c2\\u00b5m^2")
'Cell: Area um^2'
>>> other_name("Detection probability")
'detection_probability'
>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> path = folder / "old_mac.csv"
>>> _ = path.write_bytes(b"CellID,X_centroid\\r1,2.5\\r")
>>> check_line_endings(path, path.read_bytes(), 0, ",", ("CellID", "X_centroid"))  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
cellspec_sc.readers._table.UnreadableText: old_mac.csv: line 1, column 2 ('X_centroid'): a bare carriage return (CR)
ends a line, as in classic Mac OS files; the readers read LF or CRLF line endings: convert the file
(e.g. tr '\\r' '\\n' < old_mac.csv > fixed.csv)
>>> path = folder / "t.csv"
>>> _ = path.write_bytes(b"a,b\\n1,2\\n3,4\\n5,6\\n")
>>> [path.read_bytes()[a:b] for a, b in line_pieces(path, data_start(path), piece_bytes=5)]
[b'1,2\\n3,4\\n', b'5,6\\n']
>>> first_line_where(np.array([False, True]))
3
>>> arrow_objects(pa.chunked_array([["a", None]])).tolist()
['a', None]
>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     notice("x.csv: something odd")
>>> caught[0].category.__name__, str(caught[0].message)
('ReaderWarning', 'x.csv: something odd')
"""

from __future__ import annotations

import codecs
import csv
import mmap
import os
import re
import stat
import threading
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, wait
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from cellspec_sc._background import in_background, ordered_map, usable_cpus
from cellspec_sc._files import FileDigest, read_at_most
from cellspec_sc.errors import CellspecWarning, InputError, MissingPath
from cellspec_sc.io import PieceHash
from cellspec_sc.model import MatrixStats, all_distinct, arrow_code_array, empty_matrix
from cellspec_sc.spec import vocabulary
from cellspec_sc.validation import duplicated_pairs


# -- warnings ------------------------------------------------------------------------------------
class ReaderWarning(CellspecWarning):
    """A reader read the file but the user should look at what it says."""


def notice(message: str, *, strict: bool = False) -> None:
    """Warn with ``message``, or refuse with it when ``strict``."""
    if strict:
        raise InputError(f"{message} (refused: strict=True)")
    warnings.warn(message, ReaderWarning, stacklevel=3)


def listed(names: Sequence[str], *, quote: bool = True, most: int = 10) -> str:
    """The first ``most`` of ``names`` for a message, in quotes unless ``quote`` is False.

    >>> listed(["a", "b", "c"], most=2), listed(["P1_001.csv"], quote=False)
    ("'a', 'b', ...", 'P1_001.csv')
    """
    shown = [repr(n) if quote else str(n) for n in names[:most]]
    return ", ".join(shown) + (", ..." if len(names) > most else "")


# -- checks of parsed values ------------------------------------------------------------------------
def first_line_where(mask: np.ndarray, rows: np.ndarray | None = None) -> int:
    """File line of the first True in ``mask`` (data row i of the file is line i + 2)."""
    pos = int(np.flatnonzero(mask)[0])
    return (int(rows[pos]) if rows is not None else pos) + 2


def check_finite_centroids(path: Path, values: np.ndarray, column: str, rows: np.ndarray | None) -> None:
    """x and y MUST be finite (section 2): name the first line that is not."""
    bad = ~np.isfinite(values)
    if bad.any():
        raise InputError(f"{path.name}: line {first_line_where(bad, rows)}, column {column!r}: centroid is missing "
                         f"or not finite ({int(bad.sum())} row(s)); every cell needs a finite centroid")


def check_unique_ids(path: Path, image_ids: np.ndarray, cell_ids: np.ndarray, column: str,
                     rows: np.ndarray | None) -> None:
    """(image_id, cell_id) MUST be unique: name both lines of the first duplicate."""
    keys = pd.DataFrame({"image": pd.Series(image_ids, dtype=object), "cell": pd.Series(cell_ids, dtype=object)})
    dup = keys.duplicated(keep=False).to_numpy()
    if dup.any():
        first = int(np.flatnonzero(dup)[0])
        image, cell = keys.iat[first, 0], keys.iat[first, 1]
        same = np.flatnonzero(((keys["image"] == image) & (keys["cell"] == cell)).to_numpy())
        lines = [(int(rows[p]) if rows is not None else int(p)) + 2 for p in same[:2]]
        raise InputError(f"{path.name}: lines {lines[0]} and {lines[1]}, column {column!r}: object id {cell!r} "
                         f"appears twice in image {image!r} ({int(dup.sum())} rows with duplicated ids)")


def first_repeat(values: Sequence[str]) -> tuple[int, int] | None:
    """Positions of the first value seen before, and of where it was first seen (None: all distinct).

    >>> first_repeat(["a", "b", "a", "b"]), first_repeat(["a", "b"])
    ((0, 2), None)
    """
    seen: dict[str, int] = {}
    for i, value in enumerate(values):
        if value in seen:
            return seen[value], i
        seen[value] = i
    return None


def check_missing_text(path: Path, values: np.ndarray, column: str, rows: np.ndarray | None) -> None:
    """Identifiers must be present: name the first line where one is missing or empty."""
    values = np.asarray(values, dtype=object)
    bad = pd.isna(values)
    bad[~bad] = values[~bad] == ""
    if bad.any():
        raise InputError(f"{path.name}: line {first_line_where(bad, rows)}, column {column!r}: missing identifier")


def check_image_ids(path: Path, ids: pa.ChunkedArray | pa.Array, column: str, image: str,
                    rows: np.ndarray | None = None) -> np.ndarray:
    """The cell ids of one image MUST be present and unique: quick Arrow tests first, then the slow path
    (:func:`check_missing_text`, :func:`check_unique_ids`) that names the lines only when one fails. Returns the
    ids' dense codes (:func:`~cellspec_sc.model._matrix_stats.arrow_code_array`), which validation reuses."""
    if has_missing_text(ids):
        check_missing_text(path, arrow_objects(ids), column, rows)
    codes = arrow_code_array(ids)
    if not all_distinct(codes):
        check_unique_ids(path, np.full(len(ids), image, dtype=object), arrow_objects(ids), column, rows)
    return codes


def has_missing_text(values: pa.ChunkedArray | pa.Array) -> bool:
    """Whether an Arrow text column has a missing or empty value (what :func:`check_missing_text` refuses)."""
    return bool(values.null_count) or bool(pc.any(pc.equal(values, "")).as_py())


def ids_are_unique(image_index: np.ndarray, cell_codes: np.ndarray) -> bool:
    """Whether (image, cell id) pairs are unique (``image_index``: the image of each row as a small integer;
    ``cell_codes``: the ids' dense codes, :func:`~cellspec_sc.model._matrix_stats.arrow_code_array`). Only a
    quick yes; :func:`check_unique_ids` names the duplicates.

    >>> ids_are_unique(np.array([0, 1]), np.array([0, 0])), ids_are_unique(np.array([1, 1]), np.array([0, 0]))
    (True, False)
    """
    if all_distinct(cell_codes):  # unique over the whole file (QuPath's UUIDs), so within every image too
        return True
    return not duplicated_pairs(image_index, cell_codes).any()


def arrow_objects(values: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Arrow strings as an object array (None for null), for the slow paths that name a problem."""
    if isinstance(values, pa.ChunkedArray) and values.num_chunks == 0:
        return np.zeros(0, dtype=object)
    return values.to_numpy(zero_copy_only=False).astype(object, copy=False)


def constant_strings(text: str, n: int) -> pa.ChunkedArray:
    """``n`` copies of ``text`` as an Arrow string column (dictionary-free, one buffer)."""
    return pa.chunked_array([pa.array([text], type=pa.string()).take(np.zeros(n, dtype=np.int64))])


def repeated_strings(values: Sequence[str], counts: Sequence[int]) -> pd.arrays.ArrowStringArray:
    """Each of ``values`` repeated ``counts`` times, as a column of the spec's ``character`` type made in Arrow
    (pandas would make a Python string per row first).

    >>> repeated_strings(["a", "b"], [2, 1]).tolist()
    ['a', 'a', 'b']
    """
    positions = np.repeat(np.arange(len(values), dtype=np.int64), np.asarray(counts, dtype=np.int64))
    return string_column(pa.array(list(values), type=pa.string()).take(positions))


def string_column(values: pa.ChunkedArray | pa.Array) -> pd.arrays.ArrowStringArray:
    """An Arrow text column as the pandas string array of the spec's ``character`` type (NA for null),
    laid out as :func:`~cellspec_sc.spec._types.as_spec_type` lays it out, without going through Python strings."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], type=values.type)
    return pd.arrays.ArrowStringArray(pa.chunked_array([values.cast(pa.large_string())]))


def pixel_size_for(image_ids: Sequence[str], pixel_size: float | Mapping[str, float] | None
                   ) -> dict[str, float] | None:
    """Per-image pixel size from a number or a {image_id: size} mapping (None when not given)."""
    if pixel_size is None:
        return None
    if isinstance(pixel_size, Mapping):
        missing = [i for i in image_ids if i not in pixel_size]
        if missing:
            unused = [k for k in pixel_size if k not in set(image_ids)]
            hint = (f"; unused key(s) {', '.join(map(repr, unused))} match no image (misspelt?)" if unused else "")
            raise InputError(f"pixel_size: no entry for image(s) {', '.join(map(repr, missing))}{hint}; the images "
                             f"are {', '.join(map(repr, image_ids))}")
        sizes = {i: float(pixel_size[i]) for i in image_ids}
    else:
        sizes = {i: float(pixel_size) for i in image_ids}
    bad = {i: s for i, s in sizes.items() if not (np.isfinite(s) and s > 0)}
    if bad:
        raise InputError(f"pixel_size must be a finite positive number of micrometres per pixel, got {bad}")
    return sizes


def positive_area(values: np.ndarray) -> np.ndarray:
    """``values`` (square micrometres) with non-positive or missing areas as NA (section 2: positive or NA)."""
    area = np.array(values, dtype=np.float64, copy=True)
    area[~(area > 0)] = np.nan
    return area

# ==================================================================================================================
# The header line, and what is no text the readers read
# ==================================================================================================================
SEPARATORS = {"\t": "tab", ",": "comma", ";": "semicolon", "|": "pipe"}
# Bytes read from the start of a file to decide its encoding.
ENCODING_SAMPLE = 1 << 20
# Tried in order when a file is not UTF-8: Windows installs of QuPath write the ANSI code page.
FALLBACK_ENCODINGS = ("cp1252", "latin-1")


@lru_cache(maxsize=1 << 16)  # a reader asks for each header several times; the micro-sign variants never change
def normalise_header(name: str) -> str:
    """A header with every micro-sign variant of the vocabulary written as ``u`` and spaces collapsed.

    >>> normalise_header("Centroid X \\u03bcm"), normalise_header("Centroid X \\u00b5m")
    ('Centroid X um', 'Centroid X um')
    """
    variants = sorted((v for v in vocabulary().micro_sign_variants if v != "u"), key=len, reverse=True)
    for variant in variants:  # the two-character mis-decoded form first, so its "Â" goes too
        name = name.replace(variant, "u")
    return " ".join(name.split())


def other_name(header: str) -> str:
    """The ``<name>`` of an ``other:<name>`` feature id: the normalised header in snake_case.

    >>> other_name("Nucleus: DAPI range")
    'nucleus_dapi_range'
    """
    return re.sub(r"[^0-9a-z]+", "_", normalise_header(header).lower()).strip("_") or "unnamed"


@dataclass(frozen=True)
class Header:
    """The first line of an export: the column names as written and where they were read from."""

    path: Path
    delimiter: str
    names: tuple[str, ...]
    encoding: str = "utf-8"
    contents: bytes | None = field(default=None, compare=False, repr=False)
    """The whole file, when reading its encoding sample read all of it (a file under 1 MB): the parse takes its
    bytes from here instead of reading the file again."""
    head: bytes | None = field(default=None, compare=False, repr=False)
    """The first :data:`ENCODING_SAMPLE` bytes of a bigger file, as its encoding sample read them: the parse finds
    the data's start and the rows to expect there, and takes a first piece that lies within from them."""

    @cached_property
    def normalised(self) -> dict[str, str]:
        """Lower-cased normalised header -> header as written (first occurrence)."""
        out: dict[str, str] = {}
        for name in self.names:
            out.setdefault(normalise_header(name).lower(), name)
        return out

    def find(self, *candidates: str) -> str | None:
        """The header as written that matches one of ``candidates`` after normalisation."""
        norm = self.normalised
        for cand in candidates:
            hit = norm.get(normalise_header(cand).lower())
            if hit is not None:
                return hit
        return None


def detect_encoding(path: Path, encoding: str | None = None) -> str:
    """``encoding`` if given (checked), else ``utf-8`` when the first megabyte decodes as UTF-8, else the
    first of :data:`FALLBACK_ENCODINGS` that decodes it, with a warning that names it."""
    if encoding is not None:
        try:
            name = codecs.lookup(encoding).name
        except LookupError:
            raise InputError(f"encoding={encoding!r} is not an encoding Python knows (try 'utf-8', 'cp1252', "
                             "'latin-1')") from None
        check_encoding_name(name, path)
        return name
    with open(path, "rb") as handle:
        sample = read_at_most(handle, ENCODING_SAMPLE)
    return sample_encoding(path, sample)


def sample_encoding(path: Path, sample: bytes) -> str:
    """The encoding of the file at ``path`` whose first bytes are ``sample`` (see :func:`detect_encoding`)."""
    if is_utf8_with_ascii_rows(sample):
        return "utf-8"
    try:
        sample.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError as err:
        if len(sample) == ENCODING_SAMPLE and err.start >= len(sample) - 3:
            return "utf-8"  # a character cut by the end of the sample
        line = sample.count(b"\n", 0, err.start) + 1
        bad = sample[err.start:err.start + 1].hex()
    for fallback in FALLBACK_ENCODINGS:
        try:
            sample.decode(fallback)
        except UnicodeDecodeError:
            continue
        notice(f"{path.name}: line {line}: byte 0x{bad} is not UTF-8; reading the file as {fallback} (as Windows "
               f"exports are written); pass encoding= (e.g. encoding='utf-8') if that is wrong")
        return fallback
    return "latin-1"  # never reached: latin-1 decodes every byte


def is_utf8_with_ascii_rows(sample: bytes) -> bool:
    """Whether ``sample`` is UTF-8 text whose lines after the first are ASCII, as exports with a micro sign in
    their header usually are: then only the header line is decoded (a check of ASCII runs at memory speed;
    decoding a megabyte costs about 0.3 ms). False says nothing: decode the whole sample.

    >>> is_utf8_with_ascii_rows("Centroid X µm\\n1.5\\n".encode()), is_utf8_with_ascii_rows("a\\nµ\\n".encode())
    (True, False)
    """
    rows = sample.find(b"\n") + 1
    if not rows:
        return False
    after = np.frombuffer(sample, dtype=np.uint8, offset=rows)  # a view: slicing the bytes would copy a megabyte
    if after.size and int(after.max()) >= 0x80:
        return False
    try:
        sample[:rows].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# A header line is a few kB (10,000 columns of 100 characters are 1 MB); what has no line end within this is
# not a table, and must not be read whole (a file with bare CR line ends has no LF at all).
HEADER_MAX_BYTES = 16 << 20


def read_header(path: str | os.PathLike, delimiter: str | Sequence[str], tool: str, encoding: str | None = None,
                *, index_column: bool = False) -> Header:
    """Read and check the header line: not empty, not duplicated, the expected separator. ``delimiter`` is
    the separator, or the separators the tool may use; then the header line decides (the one it holds most
    of, the first on a tie).

    ``encoding`` (default: detected, see :func:`detect_encoding`) is recorded on the header for the
    parser. ``index_column``: a first column without a name (the index pandas writes with ``to_csv``) is allowed
    (its name stays ``""``). Raises InputError naming the file and line 1.
    """
    path = Path(path)
    check_regular_file(path)
    with open(path, "rb") as handle:  # one open for the header line and the encoding sample
        first = handle.readline(HEADER_MAX_BYTES + 1)
        sample = None
        if encoding is None:  # the encoding sample: the whole file when it is small, kept for the parse
            handle.seek(0)
            sample = read_at_most(handle, ENCODING_SAMPLE)
    endless = len(first) > HEADER_MAX_BYTES and not first.endswith(b"\n")
    check_not_container(path, first)
    check_wide_encoding(path, first)
    if not isinstance(delimiter, str):
        delimiter = max(delimiter, key=lambda sep: first.count(sep.encode()))
    check_text(path, first.removesuffix(b"\r") if endless else first, 0, delimiter, ())
    if endless:
        raise UnreadableText(f"{path.name}: line 1 runs past {HEADER_MAX_BYTES >> 20} MiB without a line end: not "
                             f"the header line of a {tool} table (a binary file, or text without line ends?)")
    contents = head = None
    if sample is not None:
        encoding = sample_encoding(path, sample)
        contents, head = (sample, None) if len(sample) < ENCODING_SAMPLE else (None, sample)
    else:
        encoding = detect_encoding(path, encoding)
    text = first.decode("utf-8-sig" if encoding == "utf-8" else encoding, errors="replace").rstrip("\r\n")
    if not text.strip():
        raise InputError(f"{path.name}: line 1: the file is empty; expected a {tool} table with a header line")
    names = tuple(next(csv.reader([text], delimiter=delimiter)))
    if len(names) == 1:
        found = [sep for sep in SEPARATORS if sep != delimiter and sep in text]
        if found:
            raise InputError(f"{path.name}: line 1: the header has a single column but contains "
                             f"{SEPARATORS[found[0]]} characters; {tool} tables are "
                             f"{SEPARATORS[delimiter]}-separated (wrong separator?)")
    blank = [i + 1 for i, n in enumerate(names) if not n.strip() and not (index_column and i == 0)]
    if blank:
        raise InputError(f"{path.name}: line 1, column {blank[0]}: empty column name in the header")
    dups = sorted(n for n, count in Counter(names).items() if count > 1)
    if dups:
        raise InputError(f"{path.name}: line 1: duplicated column name(s) {', '.join(map(repr, dups))}"
                         f"{_quote_note(text, delimiter, names, dups)}")
    return Header(path, delimiter, names, encoding, contents, head)


def _quote_note(text: str, delimiter: str, names: tuple[str, ...], dups: list[str]) -> str:
    """Say so when duplicated names were written differently and only quote characters made them equal."""
    raw = text.split(delimiter)
    if len(raw) != len(names):
        return ""
    for dup in dups:
        written = list(dict.fromkeys(r for r, n in zip(raw, names, strict=True) if n == dup))
        if len(written) > 1:
            return (f"; the header writes them differently ({' and '.join(map(repr, written))}): unescaped "
                    "quote characters in a column name are read as CSV quoting; rename the columns in the tool "
                    "or remove the quotes")
    return ""


def require_columns(header: Header, tool: str, groups: Sequence[Sequence[str]], advice: str = "") -> None:
    """Stop unless, for every group of alternatives, one column is present; list what is missing and
    every column found. ``advice`` replaces "not a <tool> table" where the tool knows better."""
    missing = [alternatives for alternatives in groups if header.find(*alternatives) is None]
    if missing:
        wanted = "; ".join(" or ".join(repr(a) for a in alts) for alts in missing)
        raise InputError(f"{header.path.name}: {advice or f'not a {tool} table'}: expected column(s) not found: "
                         f"{wanted}; found {len(header.names)} column(s):\n{column_lines(header.names)}")


def column_lines(names: Sequence[str], width: int = 100) -> str:
    """Column names in quotes, as many to a line as fit in ``width``, never one cut across two lines.

    >>> print(column_lines(["Image", "Nucleus: Hematoxylin OD mean", "Cell: Area"], width=44))
      'Image', 'Nucleus: Hematoxylin OD mean',
      'Cell: Area'
    """
    lines, line = [], ""
    for item in (repr(n) for n in names):
        if line and len(line) + len(item) + 2 > width - 2:
            lines.append(line + ",")
            line = ""
        line = f"{line}, {item}" if line else item
    return "\n".join("  " + text for text in [*lines, line])


# -- text checks: what is not text the readers read ---------------------------------------------
# Byte order marks of encodings whose text is not ASCII-compatible (longest first: UTF-32 LE starts like UTF-16 LE).
WIDE_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"), (codecs.BOM_UTF16_LE, "UTF-16"),
             (codecs.BOM_UTF16_BE, "UTF-16"))

BARE_CR = re.compile(rb"\r(?!\n)")


class UnreadableText(InputError):
    """A tool export that is not text the readers read: not a regular file, UTF-16/32, a NUL byte, or
    lines ending in a bare carriage return."""


def check_regular_file(path: Path) -> None:
    """Refuse a path that does not exist or is not a regular file (a directory, a FIFO, a device)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise MissingPath(path, f"{path}: no such file") from None
    except OSError as err:
        raise UnreadableText(f"{path}: cannot read the file ({err.strerror})") from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else \
            "a device or socket"
        raise UnreadableText(f"{path}: is {kind}, not a regular file; the readers read a file on disk (they open it "
                             "more than once): save the export to a file first")


def check_encoding_name(encoding: str, path: Path) -> None:
    """Refuse an ``encoding=`` whose text is not ASCII-compatible (lines are cut at the byte ``\\n``)."""
    if codecs.lookup(encoding).name.startswith(("utf-16", "utf-32")):
        raise UnreadableText(f"{path.name}: encoding={encoding!r}: the readers read UTF-8 or a single-byte code page "
                             "(cp1252, latin-1); re-save the file as UTF-8")


# Files people pass for an export: what they start with -> what they are and what to do.
CONTAINERS = ((b"\x1f\x8b", "gzip-compressed (.gz)",
               "decompress it first (gunzip FILE)"),
              (b"PK\x03\x04", "a ZIP archive, e.g. an Excel workbook (.xlsx)", "save it as CSV or TSV text"),
              (b"\xd0\xcf\x11\xe0", "an old Excel workbook (.xls)", "save it as CSV or TSV text"))


def check_not_container(path: Path, start: bytes) -> None:
    """Refuse a file that is a compressed file or a workbook rather than text, saying what it is."""
    for magic, what, todo in CONTAINERS:
        if start.startswith(magic):
            raise UnreadableText(f"{path.name}: the file is {what}, not text: {todo}")


def check_wide_encoding(path: Path, start: bytes) -> None:
    """Refuse a file that starts with a UTF-16 or UTF-32 byte order mark."""
    for bom, name in WIDE_BOMS:
        if start.startswith(bom):
            raise UnreadableText(f"{path.name}: line 1: the file is {name} text (it starts with a {name} byte order "
                                 "mark); the readers read UTF-8 or a single-byte code page (cp1252, latin-1): re-save "
                                 "the export as UTF-8")


def check_no_nul(path: Path, data: bytes, offset: int, delimiter: str, names: Sequence[str]) -> None:
    """Refuse a NUL byte in ``data`` (the bytes of ``path`` from ``offset``): text files hold none."""
    at = data.find(b"\x00")
    if at >= 0:
        wide = " (UTF-16 text without a byte order mark?)" if data[:64].count(b"\x00") >= 16 else ""
        raise UnreadableText(f"{path.name}: {_where(path, offset + at, delimiter, names)}: a NUL byte (0x00), which "
                             f"text never holds{wide}; is the file binary or damaged? Export it again as UTF-8 text")


def check_line_endings(path: Path, data: bytes, offset: int, delimiter: str, names: Sequence[str]) -> None:
    """Refuse a carriage return not followed by a newline in ``data`` (the bytes of ``path`` from
    ``offset``, ending at a line end): pyarrow would end a row there, the header reader would not."""
    first = data.find(b"\r")
    if first < 0 or data.count(b"\r", first) == data.count(b"\r\n", first):  # no CR, or CRLF only
        return
    at = BARE_CR.search(data, first).start()
    raise UnreadableText(f"{path.name}: {_where(path, offset + at, delimiter, names)}: a bare carriage return (CR) "
                         "ends a line, as in classic Mac OS files; the readers read LF or CRLF line endings: "
                         f"convert the file (e.g. tr '\\r' '\\n' < {path.name} > fixed{path.suffix})")


def check_text(path: Path, data: bytes, offset: int, delimiter: str, names: Sequence[str]) -> None:
    """Both checks of the bytes of one piece of a file."""
    check_no_nul(path, data, offset, delimiter, names)
    check_line_endings(path, data, offset, delimiter, names)


def _where(path: Path, position: int, delimiter: str, names: Sequence[str]) -> str:
    """``line L, column C ('name')`` of byte ``position`` of the file (read again, 16 MB at a time: only on a
    refusal)."""
    line, column, left = 1, 1, position
    with open(path, "rb") as handle:
        while left > 0 and (block := handle.read(min(left, 1 << 24))):
            left -= len(block)
            ends = block.count(b"\n")
            line += ends
            column = (1 if ends else column) + block.count(delimiter.encode(), block.rfind(b"\n") + 1)
    name = f" ({names[column - 1]!r})" if column <= len(names) else ""
    return f"line {line}, column {column}{name}"

# ==================================================================================================================
# The parse
# ==================================================================================================================
# Bytes of text per piece: big enough that the per-piece Python work (a few calls per column) is small
# beside the parse, small enough that the pieces in flight cost little memory and both cores get work.
PIECE_BYTES = 1 << 23
# A file smaller than PIECE_BYTES x threads is cut into one piece per thread, none below this (a file of one to two
# such pieces into two halves): a 4 MB export is parsed on both cores (half its wall time), while a tiny file stays
# one piece parsed in the caller's thread.
MIN_PIECE_BYTES = 1 << 20


# A table up to this size is parsed as one piece (in the caller's thread), from one read of the whole file.
SMALL_TABLE_BYTES = min(MIN_PIECE_BYTES, PIECE_BYTES)


def data_start(path: Path) -> int:
    """The byte offset just after the header line."""
    with open(path, "rb") as handle:
        handle.readline()
        return handle.tell()


def line_pieces(path: Path, start: int, piece_bytes: int | None = None, *, head: bytes | None = None
                ) -> list[tuple[int, int]]:
    """Byte ranges ``[a, b)`` covering ``start`` to the end of the file, each ending just after a newline
    (the last one at the end of the file), about ``piece_bytes`` long (default :data:`PIECE_BYTES`, or for a
    smaller file an equal share per thread of :func:`workers`, at least :data:`MIN_PIECE_BYTES`); a file shorter
    than two pieces is one piece, or two halves when longer than one. ``head``: the file's first bytes, already
    read (:attr:`Header.head`), where the halves' line end is looked for first."""
    size = path.stat().st_size
    if size <= start:
        return []
    piece_bytes = piece_bytes or min(PIECE_BYTES, max(MIN_PIECE_BYTES, -(-(size - start) // workers())))
    if size - start < 2 * piece_bytes:
        return [(start, size)] if size - start <= piece_bytes else _halves(path, start, size, head)
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
        pieces, a = [], start
        while a < size:
            newline = view.find(b"\n", min(a + piece_bytes, size) - 1)
            b = size if newline < 0 else newline + 1
            pieces.append((a, b))
            a = b
    return pieces


def _halves(path: Path, start: int, size: int, head: bytes | None = None) -> list[tuple[int, int]]:
    """Two pieces of about equal size (a file a little over one piece is not cut into a piece and a sliver, whose
    thread would cost more than it parses)."""
    middle = start + (size - start) // 2 - 1
    newline = head.find(b"\n", middle) if head is not None else -1
    if newline < 0:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
            newline = view.find(b"\n", middle)
    return [(start, size)] if newline < 0 or newline + 1 >= size else [(start, newline + 1), (newline + 1, size)]


def piece_bytes(path: Path, span: tuple[int, int]) -> bytes:
    """The bytes of one piece (read with one positioned read)."""
    a, b = span
    with open(path, "rb") as handle:
        return os.pread(handle.fileno(), b - a, a)


def workers() -> int:
    """Threads for parsing: the CPUs this process may use, as pyarrow counts them (``pa.set_cpu_count(1)``
    makes parsing single-threaded)."""
    return max(1, min(pa.cpu_count(), usable_cpus()))


# -- one piece, on a worker thread ----------------------------------------------------------------
# pyarrow parses a piece in blocks of this many bytes: its tokenised block then stays in the cache while
# its values are converted (measured: 1-2 MB blocks parse about 15 % faster than one 8 MB block).
PARSE_BLOCK_BYTES = 1 << 21


@dataclass(frozen=True)
class ParseJob:
    """What every piece of one parse needs: options, the columns that go where, the shared matrix."""

    header: Header
    convert: pacsv.ConvertOptions
    positions: list[int]
    text: Sequence[str]
    numbers: Sequence[str]
    unfiltered: Sequence[str]
    keep: tuple[str, Sequence[str]] | None
    group: str | None
    numbers_as_text: bool
    slots: RowSlots
    hasher: PieceHash | None
    whole: bytes | None = None
    """The whole file when it was read at once (a small file: its one piece is cut from these bytes)."""
    keep_bytes: bool = False
    """Each piece keeps the bytes it parsed (:attr:`Piece.data`), to be hashed after the parse."""
    head: bytes | None = None
    """The first bytes of the file as its header's read took them (:attr:`Header.head`): a piece within them is
    cut from them instead of read again."""


@dataclass
class Piece:
    """One parsed piece: its kept rows (``sel``: positions among the piece's rows, None for all), where
    they went in the matrix (``start``; ``block`` holds them only when the matrix had no room), its text
    and number columns, NA counts, matrix stats and the value of ``group`` of each stats group."""

    rows: int
    sel: np.ndarray | None
    start: int
    kept: int
    block: np.ndarray | None
    text: dict[str, pa.ChunkedArray]
    numbers: dict[str, np.ndarray]
    whole: dict[str, pa.ChunkedArray]
    counts: dict[str, int]
    stats: MatrixStats
    groups: list[str | None]
    data: bytes | None = None
    """The piece's bytes, when the job keeps them for a hash after the parse."""


class PieceUnparsable(Exception):
    """A value of a kept row is not a number (found after the filter); ``row`` counts within the piece."""

    def __init__(self, column: str, value: str, row: int) -> None:
        super().__init__(column, value, row)
        self.column, self.value, self.row = column, value, row


class RowSlots:
    """Hands each piece, in file order, the rows of the matrix its kept rows go to.

    A piece knows how many rows it keeps only once it is parsed; :meth:`claim` waits until the piece
    before it has claimed its rows (pieces are parsed in order on a thread pool, so that wait is short
    and never for a piece that has not started). A piece that fails claims no rows.

    >>> slots = RowSlots(np.zeros((5, 2)))
    >>> [(start, None if rows is None else rows.shape) for start, rows in (slots.claim(0, 3), slots.claim(1, 3))]
    [(0, (3, 2)), (3, None)]
    """

    def __init__(self, out: np.ndarray) -> None:
        self.out = out
        self._index = 0
        self._row = 0
        self._turn = threading.Condition()

    def claim(self, index: int, rows: int) -> tuple[int, np.ndarray | None]:
        """(first row, the matrix rows of piece ``index``, or None when they do not fit in the matrix)."""
        with self._turn:
            self._turn.wait_for(lambda: self._index == index)
            start = self._row
            self._row += rows
            self._index += 1
            self._turn.notify_all()
        return start, (self.out[start:start + rows] if start + rows <= self.out.shape[0] else None)


def parse_piece(job: ParseJob, index: int, span: tuple[int, int]) -> Piece:
    """Parse piece ``index`` (bytes ``span`` of the file) on a worker thread: see the module docstring."""
    claimed = False
    try:
        piece = _parse(job, index, span)
        claimed = True
        return piece
    finally:
        if not claimed:
            job.slots.claim(index, 0)  # let the pieces after this one go on (the read fails at this piece)


def _parse(job: ParseJob, index: int, span: tuple[int, int]) -> Piece:
    header = job.header
    try:
        data = job.whole[span[0]:span[1]] if job.whole is not None else \
            job.head[span[0]:span[1]] if job.head is not None and span[1] <= len(job.head) else \
            piece_bytes(header.path, span)
    except BaseException:
        if job.hasher is not None:
            job.hasher.fail()
        raise
    hashed = job.hasher is None or job.hasher.add_if_next(span, data)  # else after the parse: no wait before it
    try:
        check_text(header.path, data, span[0], header.delimiter, header.names)
        table = pacsv.read_csv(pa.BufferReader(data),
                               read_options=read_options(header, column_names=list(header.names), use_threads=False,
                                                          block_size=PARSE_BLOCK_BYTES),
                               parse_options=pacsv.ParseOptions(delimiter=header.delimiter),
                               convert_options=job.convert)
    finally:
        if not hashed:  # the pieces after this one wait for its bytes, whether or not they parsed
            job.hasher.add(span, data)
    kept_bytes = data if job.keep_bytes else None
    del data
    sel = kept_rows(table, job.keep)
    kept, kept_sel = table, sel
    if job.numbers_as_text:  # the kept rows only, their numbers converted now
        kept, kept_sel = numbers_of_rows(table, sel, set(job.text)), None
    text = {name: kept.column(name) if kept_sel is None else kept.column(name).take(kept_sel) for name in job.text}
    numbers = {}
    for name in job.numbers:
        values = kept.column(name).to_numpy()
        numbers[name] = values if kept_sel is None else values[kept_sel]
    m = table.num_rows if sel is None else len(sel)
    start, rows = job.slots.claim(index, m)
    block = rows if rows is not None else empty_matrix(m, len(job.positions))
    codes, groups = group_codes(text[job.group] if job.group is not None else None, m)
    counts, stats = fill_rows(kept, job.positions, kept_sel, block, codes, len(groups))  # rows from the piece's first
    return Piece(table.num_rows, sel, start, m, None if rows is not None else block, text, numbers,
                 {name: table.column(name) for name in job.unfiltered}, counts, stats, groups, kept_bytes)


def read_options(header: Header, **options) -> pacsv.ReadOptions:
    """pyarrow ReadOptions for ``header``'s file, transcoding when it is not UTF-8."""
    if header.encoding != "utf-8":
        options["encoding"] = header.encoding
    return pacsv.ReadOptions(**options)


def group_codes(values: pa.ChunkedArray | None, n: int) -> tuple[np.ndarray, list[str | None]]:
    """(code of each row, the distinct values in order of first appearance); one group without ``values``."""
    if values is None:
        return np.zeros(n, dtype=np.int64), [None]
    encoded = pc.dictionary_encode(values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values)
    codes = encoded.indices if not encoded.indices.null_count else pc.fill_null(encoded.indices, -1)
    return codes.to_numpy().astype(np.int64), encoded.dictionary.to_pylist()


def kept_rows(table: pa.Table, keep: tuple[str, Sequence[str]] | None) -> np.ndarray | None:
    """Positions of the rows whose ``keep[0]`` column is one of ``keep[1]`` (None: every row)."""
    if keep is None:
        return None
    column, values = keep
    mask = pc.is_in(table.column(column), value_set=pa.array(list(values), type=pa.string()))
    mask = pc.fill_null(mask, False).to_numpy(zero_copy_only=False)
    return None if mask.all() else np.flatnonzero(mask)


def fill_rows(table: pa.Table, positions: Sequence[int], sel: np.ndarray | None, rows: np.ndarray,
              codes: np.ndarray | None = None, groups: int = 0) -> tuple[dict[str, int], MatrixStats]:
    """Write the matrix columns (at ``positions`` of the table) of the kept rows ``sel`` into ``rows`` (C
    order), infinities as NaN; the NA counts: ``missing_in_source`` (empty fields), ``na_converted`` (NaN written
    as a number) and ``nonfinite_converted`` (infinities), and the :class:`MatrixStats` of ``rows`` (``codes``: the
    group of each row, of ``groups``).

    Every row kept: Arrow turns each parsed block of the matrix columns into a row-major block (``to_tensor``,
    nulls as NaN), copied into ``rows`` in one go: 30 % less CPU than writing each column into its strided place
    (each cache line of a row would be fetched once per column it holds). The stats read that block while it is
    still in the cache, and their NaN and infinity counts are the NA counts (no pass of its own over the rows).
    Rows filtered: column by column, then the stats.

    >>> out = np.empty((3, 1))
    >>> counts, stats = fill_rows(pa.table({"v": [1.0, None, float("inf")]}), [0], None, out)
    >>> counts
    {'missing_in_source': 1, 'nonfinite_converted': 1, 'na_converted': 0}
    >>> out[:, 0].tolist(), stats.nan.tolist(), stats.infinite.tolist()
    ([1.0, nan, nan], [2], [0])
    """
    nulls = 0
    stats = MatrixStats(len(positions), codes, groups)
    if sel is None and positions:
        at = 0
        selected = table.select(list(positions))
        for batch in selected.to_batches():
            if batch.num_rows:
                values = batch.to_tensor(null_to_nan=True, row_major=True).to_numpy()
                rows[at:at + batch.num_rows] = values
                stats.add(at, values)
                at += batch.num_rows
        nulls = sum(column.null_count for column in selected.columns)
    else:
        if sel is not None:
            columns = table.columns
            for j, position in enumerate(positions):
                column = columns[position]
                rows[:, j] = column.to_numpy()[sel]
                if column.null_count:
                    nulls += int(np.count_nonzero(column.is_null().to_numpy(zero_copy_only=False)[sel]))
        stats.add(0, rows)
    n_nan, n_inf = int(stats.nan.sum()), int(stats.infinite.sum())
    if n_inf:  # rare: infinities become NaN, and the stats are gathered again from what the matrix holds
        rows[np.isinf(rows)] = np.nan
        stats = MatrixStats(len(positions), codes, groups)
        stats.add(0, rows)
    return {"missing_in_source": nulls, "nonfinite_converted": n_inf, "na_converted": n_nan - nulls}, stats


def numbers_of_rows(table: pa.Table, sel: np.ndarray | None, text: set[str]) -> pa.Table:
    """The rows ``sel`` of an all-text ``table`` with every non-``text`` column converted to float64."""
    rows = np.arange(table.num_rows) if sel is None else sel
    table = table if sel is None else table.take(pa.array(sel))
    columns = []
    for name, values in zip(table.schema.names, table.columns, strict=True):
        if name in text:
            columns.append(values)
            continue
        try:
            columns.append(pc.cast(values, pa.float64()))
        except pa.ArrowInvalid:
            raise _unparsable(name, values, rows) from None
    return pa.table(columns, names=table.schema.names)


def _unparsable(column: str, values: pa.ChunkedArray, rows: np.ndarray) -> Exception:
    """The first value of ``values`` that is not a number, with its row (``rows``: row of each value)."""
    for i, value in enumerate(values.to_pylist()):
        try:
            if value is not None:
                pa.array([value]).cast(pa.float64())
        except pa.ArrowInvalid:
            return PieceUnparsable(column, value, int(rows[i]))
    return pa.ArrowInvalid(f"column {column!r}: cannot parse a value as a number")


# -- the whole file ---------------------------------------------------------------------------------
@dataclass
class Parsed:
    """A parsed export, rows already filtered: text and number columns, and the measurement matrix.

    ``rows`` holds the 0-based data-row index in the file of every kept row (None when every row was
    kept), so errors can name file lines (data row i is line i + 2). Text columns are held as Arrow
    string arrays; :meth:`text` turns one into an object array on first use.
    """

    rows_read: int
    rows: np.ndarray | None
    text_columns: dict[str, pa.ChunkedArray]
    number_columns: dict[str, np.ndarray]
    unfiltered: dict[str, pa.ChunkedArray]
    matrix: np.ndarray
    counts: dict[str, int]
    digest: FileDigest | Future[FileDigest] | None = None
    """SHA-256 and size of the file, when the parse hashed it (from the bytes it read); a Future while another
    thread still hashes them (``stream_columns(digest_later=True)``): :meth:`file_digest` waits for it."""
    stats: GroupedStats | None = None
    """Matrix stats gathered while parsing, ranges per group (see :class:`GroupedStats`)."""
    parts: tuple[int, ...] = ()
    """Rows of each table joined into this one, in order (a folder of tables), or ``()`` for a single table."""
    hashes: dict[Path, FileDigest] | None = None
    """SHA-256 and size of each table joined into this one (a folder of tables), from the bytes the parse read."""
    group: str | None = None
    """The text column whose values :attr:`stats` are grouped by (``stream_columns``' ``group``), None for none."""

    def __post_init__(self) -> None:
        self._objects: dict[str, np.ndarray] = {}

    @property
    def n(self) -> int:
        return int(self.matrix.shape[0])

    def text(self, name: str) -> np.ndarray:
        """A text column of the kept rows as an object array (None for missing)."""
        if name not in self._objects:
            self._objects[name] = arrow_objects(self.text_columns[name])
        return self._objects[name]

    def arrow(self, name: str) -> pa.ChunkedArray:
        """A text column of the kept rows as Arrow strings (null for missing), without Python objects."""
        return self.text_columns[name]

    def whole(self, name: str) -> np.ndarray:
        """An ``unfiltered`` text column (every data row) as an object array."""
        return arrow_objects(self.unfiltered[name])

    def number(self, name: str) -> np.ndarray:
        """A float64 column of the kept rows (NaN for missing)."""
        return self.number_columns[name]

    def groups(self, name: str) -> tuple[np.ndarray, list[str]]:
        """(each kept row's code, -1 where it is missing; the distinct values in order of first appearance) of the
        text column ``name``: as the parse found them while grouping its stats by it, else encoded now.

        >>> parsed = Parsed(3, None, {"image": pa.chunked_array([["b", None, "a"]])}, {}, {}, np.zeros((3, 0)), {})
        >>> codes, values = parsed.groups("image"); codes.tolist(), values
        ([0, -1, 1], ['b', 'a'])
        """
        if name == self.group and self.stats is not None and self.stats.stats.codes is not None:
            return self.stats.stats.codes, list(self.stats.groups)
        return group_codes(self.text_columns[name], self.n)

    def file_digest(self) -> FileDigest | None:
        """:attr:`digest`, once it is taken (raising what hashing raised: a file that changed while it was read)."""
        return self.digest.result() if isinstance(self.digest, Future) else self.digest


@dataclass(frozen=True)
class GroupedStats:
    """:class:`~cellspec_sc.model._matrix_stats.MatrixStats` of the parsed matrix with per-group ranges:
    ``stats.codes`` is the group of each kept row, ``groups`` the value of the adapter's ``group`` column of
    each group (None: one group). :meth:`for_images` turns them into validation's per-image stats."""

    stats: MatrixStats
    groups: list[str | None]

    def for_images(self, image_codes: np.ndarray, image_ids: np.ndarray) -> MatrixStats | None:
        """The stats with ranges per image (``image_codes``: the image of each row, in validation's order, codes of
        ``image_ids``: ``first_seen_codes`` of the cells' image_id, which validation then reuses), or None when a
        group spans several images (the adapter's group column does not decide the image).

        >>> s = MatrixStats(1, np.array([0, 0, 1]), 2); s.add(0, np.array([[1.0], [2.0], [5.0]]))
        >>> g = GroupedStats(MatrixStats(1, np.array([0, 0, 1]), 2), ["a", "b"]); g.stats.merge(s, np.array([0, 1]))
        >>> g.for_images(np.array([0, 0, 0]), np.array(["i"])).high.tolist()
        [[5.0]]
        >>> g.for_images(np.array([0, 1, 1]), np.array(["i", "j"])) is None
        True
        """
        n_images = len(image_ids)
        groups = self.stats.codes
        if groups is None or len(groups) != len(image_codes) or (groups < 0).any() or (image_codes < 0).any():
            return None
        first = np.full(len(self.groups), -1, dtype=np.int64)
        first[groups[::-1]] = np.arange(len(groups) - 1, -1, -1)  # first row of each group
        if (first < 0).any():
            return None
        image_of_group = image_codes[first]
        if not np.array_equal(image_of_group[groups], image_codes):
            return None
        out = MatrixStats(self.stats.n_features, image_codes, n_images, image_ids)
        out.merge(self.stats, images=image_of_group)
        return out


# Bytes read from the start of the file to estimate its number of rows.
SAMPLE_BYTES = 1 << 18


def stream_columns(header: Header, *, text: Sequence[str], numbers: Sequence[str], matrix: Sequence[str],
                   keep: tuple[str, Sequence[str]] | None = None, unfiltered: Sequence[str] = (),
                   group: str | None = None, nulls: Sequence[str] = ("",), digest_later: bool = False) -> Parsed:
    """Parse the file with pyarrow's CSV reader, in pieces on every core, straight into the measurement matrix.

    ``text`` columns are read as strings (kept as Arrow arrays), every other column as float64 (empty
    fields are null). ``keep=(column, values)`` keeps only rows whose text ``column`` is one of
    ``values``; ``unfiltered`` text columns are also returned for every row. The file is cut into pieces
    at line boundaries, parsed on every core and put together in file order
    (:func:`~cellspec_sc._background.ordered_map`). The matrix (kept rows x
    ``matrix`` columns, C order) is allocated once, with room for the rows estimated from the first
    megabyte of the file (pages never written cost no memory); each piece writes its kept rows into it
    directly, and only if the estimate was short do the last pieces keep blocks of their own (joined into
    one bigger matrix at the end), so peak memory stays close to the result instead of holding a whole
    Arrow table beside it.
    NaN and infinities become NaN (NA) and are counted: ``na_converted`` (NaN written by the tool),
    ``nonfinite_converted`` (infinities) and ``missing_in_source`` (empty fields), all over kept rows.
    A parse failure becomes an InputError that names file, line and column. When rows are filtered,
    a value that is not a number in a row that is not kept does not matter: on such a failure the file
    is parsed again with numbers read as text and converted after the filter. ``nulls``: the values that are
    missing (the empty field; inForm also writes ``#N/A``). The matrix stats
    (:attr:`Parsed.stats`) have ranges per value of the text column ``group`` (the column that decides
    each row's image; None: one image).

    ``digest_later``: a file of :data:`HASH_LATER_BYTES` to :data:`HASH_LATER_MAX_BYTES` is hashed after the parse,
    from the bytes it parsed, on another thread (:attr:`Parsed.digest` is then a Future): the parse keeps both cores
    busy, the caller's Python that follows keeps one.
    """
    try:
        return _stream(header, text=text, numbers=numbers, matrix=matrix, keep=keep, unfiltered=unfiltered,
                       group=group, numbers_as_text=False, nulls=nulls, digest_later=digest_later)
    except _ConversionFailed as failed:
        if keep is None:
            raise _located_error(header, failed.message) from None
    return _stream(header, text=text, numbers=numbers, matrix=matrix, keep=keep, unfiltered=unfiltered,
                   group=group, numbers_as_text=True, nulls=nulls, digest_later=digest_later)


KeptPiece = tuple[tuple[int, int], bytes]
"""The span of a piece of a file and its bytes, kept to be hashed after the parse."""

# A file from this size on is hashed after its parse on another thread when the caller asks (stream_columns'
# ``digest_later``): SHA-256 of 256 kB takes about as long as starting a thread ...
HASH_LATER_BYTES = 1 << 18
# ... up to this size: the bytes of a bigger file are hashed piece by piece as they are parsed (bounded memory).
HASH_LATER_MAX_BYTES = 2 * PIECE_BYTES


class NotANumber(InputError):
    """A value of a measurement column that is not a number; ``.column`` and ``.line`` (None when unknown) say
    where, ``.value`` what.

    >>> print(NotANumber("t.csv", 7, "CD3", "n/a"))
    t.csv: line 7, column 'CD3': cannot parse 'n/a' as a number
    """

    def __init__(self, file: str, line: int | None, column: str, value: str) -> None:
        self.file, self.line, self.column, self.value = file, line, column, value
        where = f"line {line}, " if line else ""
        super().__init__(f"{file}: {where}column {column!r}: cannot parse {value!r} as a number{_number_hint(value)}")

    def __reduce__(self):
        return type(self), (self.file, self.line, self.column, self.value)


class _ConversionFailed(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _stream(header: Header, *, text, numbers, matrix, keep, unfiltered, group, numbers_as_text: bool,
            nulls: Sequence[str] = ("",), digest_later: bool = False) -> Parsed:
    as_text = set(header.names) if numbers_as_text else set(text)
    types = {name: (pa.string() if name in as_text else pa.float64()) for name in header.names}
    convert = pacsv.ConvertOptions(column_types=types, null_values=list(nulls), strings_can_be_null=True,
                                   quoted_strings_can_be_null=True)
    position = {name: i for i, name in enumerate(header.names)}
    contents = header.contents if header.contents is not None and len(header.contents) <= min(
        MIN_PIECE_BYTES, PIECE_BYTES) else _small_file(header.path)
    head = header.head if contents is None and header.head is not None and b"\n" in header.head else None
    size = len(contents) if contents is not None else header.path.stat().st_size
    if contents is not None:  # read once: its one piece cut and its SHA-256 taken from these bytes
        start = contents.find(b"\n") + 1 or len(contents)
        out, hasher = empty_matrix(0, len(matrix)), None  # the piece's own block becomes the matrix: rows uncounted
    else:  # the start of a bigger file, when the header's read kept it, is not read again for these
        out = empty_matrix(estimated_rows(header, size), len(matrix))
        start = head.find(b"\n") + 1 if head is not None else data_start(header.path)
        hasher = PieceHash(header.path, start, None if head is None else head[:start])
    later = digest_later and HASH_LATER_BYTES <= size <= HASH_LATER_MAX_BYTES
    keeps = later and contents is None  # the pieces keep their bytes for the hash after the parse
    job = ParseJob(header, convert, [position[name] for name in matrix], text, numbers, unfiltered, keep,
                   group if group in text else None, numbers_as_text, RowSlots(out), None if keeps else hasher,
                   contents, keep_bytes=keeps, head=head)
    kept_bytes: list[KeptPiece] = []
    counts = {"na_converted": 0, "nonfinite_converted": 0, "missing_in_source": 0}
    parts: dict[str, list[pa.Array]] = {name: [] for name in text}
    number_parts: dict[str, list[np.ndarray]] = {name: [] for name in numbers}
    whole: dict[str, list[pa.Array]] = {name: [] for name in unfiltered}
    row_parts: list[np.ndarray] = []
    stats = _GroupStats(len(matrix))
    overflow: list[np.ndarray] = []  # blocks of the pieces beyond the estimated rows, in order
    read = filled = 0
    spans = line_pieces(header.path, start, head=head) if contents is None else \
        ([(start, len(contents))] if len(contents) > start else [])
    items = list(enumerate(spans))
    try:
        for piece in parsed_pieces(job, items, min(workers(), len(items))):
            if piece.block is not None:
                overflow.append(piece.block)
            for name, values in piece.text.items():
                parts[name].extend(values.chunks)
            for name, values in piece.numbers.items():
                number_parts[name].append(values)
            for name, values in piece.whole.items():
                whole[name].extend(values.chunks)
            for name, count in piece.counts.items():
                counts[name] += count
            stats.add(piece)
            if piece.data is not None:
                kept_bytes.append((spans[len(kept_bytes)], piece.data))  # pieces come in file order
            row_parts.append(np.arange(read, read + piece.rows) if piece.sel is None else piece.sel + read)
            read += piece.rows
            filled += piece.kept
    except PieceUnparsable as failed:
        raise NotANumber(header.path.name, read + failed.row + 2, failed.column, str(failed.value)) from None
    except (pa.ArrowInvalid, pa.ArrowException) as err:
        if not numbers_as_text and _is_conversion_error(str(err)):
            raise _ConversionFailed(str(err)) from None
        raise _located_error(header, str(err)) from None
    if read == 0:
        raise InputError(f"{header.path.name}: line 2: the file has a header but no data rows")
    rows = np.concatenate(row_parts) if row_parts else np.zeros(0, dtype=np.int64)
    return Parsed(
        rows_read=read,
        rows=None if filled == read else rows,
        text_columns={n: pa.chunked_array(parts[n], type=pa.string()) for n in text},
        number_columns={n: _joined(number_parts[n], np.float64) for n in numbers},
        unfiltered={n: pa.chunked_array(whole[n], type=pa.string()) for n in unfiltered},
        matrix=_with_overflow(out, filled, overflow),
        counts=counts,
        digest=_digest(contents, hasher, kept_bytes, header.path) if later else
        FileDigest.of(contents) if contents is not None else hasher.result(),
        stats=stats.result(),
        group=job.group,
    )


def _digest(contents: bytes | None, hasher: PieceHash | None, pieces: list[KeptPiece], path: Path
            ) -> Future[FileDigest]:
    """The file's digest, taken on another thread: of ``contents`` (a file read whole), else of the ``pieces`` the
    parse kept, hashed in order by ``hasher`` and refused as a changed file unless they end at the size ``path``
    has now, just after its last piece was read."""
    if contents is not None:
        return in_background(FileDigest.of, contents, name="cellspec-sha256")
    return in_background(_hashed_pieces, hasher, pieces, path.stat().st_size, name="cellspec-sha256")


def _hashed_pieces(hasher: PieceHash, pieces: list[KeptPiece], size: int) -> FileDigest:
    """The digest of ``pieces`` (the file from its header on), refused as a changed file unless they end at ``size``."""
    for span, data in pieces:
        hasher.add(span, data)
    return hasher.result(size)


def parsed_pieces(job: ParseJob, items: list[tuple[int, tuple[int, int]]], threads: int) -> Iterator[Piece]:
    """The pieces ``items`` parsed on ``threads`` threads, in file order. A file of two pieces (a few megabytes) on
    two cores parses its first piece in the caller's thread and the second on one other: a thread less to start,
    and no core left waiting. The other thread is waited for before this ends, whatever happens."""
    if threads != 2 or len(items) != 2 or usable_cpus() < 2:  # in_background runs at once on one core
        yield from ordered_map(lambda item: parse_piece(job, *item), items, threads=threads, name="cellspec-parse")
        return
    second = in_background(parse_piece, job, *items[1], name="cellspec-parse")
    try:
        yield parse_piece(job, *items[0])  # never waits for the second piece: its rows and bytes come after
        yield second.result()
    finally:
        wait([second])


class _GroupStats:
    """The pieces' matrix stats put together: counts over the matrix, ranges per distinct value of the
    adapter's ``group`` column (codes in order of first appearance in the file)."""

    def __init__(self, n_features: int) -> None:
        self.n_features = n_features
        self.index: dict[str | None, int] = {}
        self.pieces: list[tuple[MatrixStats, np.ndarray]] = []

    def add(self, piece: Piece) -> None:
        self.pieces.append((piece.stats, np.array([self.index.setdefault(g, len(self.index)) for g in piece.groups],
                                                  dtype=np.int64)))

    def result(self) -> GroupedStats:
        if len(self.pieces) == 1:  # one piece (a small file): its groups are the file's, in the same order
            return GroupedStats(self.pieces[0][0], list(self.index))
        codes = [np.where(s.codes < 0, -1, images[np.maximum(s.codes, 0)]) for s, images in self.pieces]
        total = MatrixStats(self.n_features, np.concatenate(codes) if codes else np.zeros(0, np.int64), len(self.index))
        for piece_stats, images in self.pieces:
            total.merge(piece_stats, images=images)
        return GroupedStats(total, list(self.index))


def _small_file(path: Path) -> bytes | None:
    """The bytes of a file that is parsed as one piece (at most :data:`MIN_PIECE_BYTES` and :data:`PIECE_BYTES`),
    read at once; None for a bigger one, read in pieces."""
    most = min(MIN_PIECE_BYTES, PIECE_BYTES)
    if path.stat().st_size > most:
        return None
    with open(path, "rb") as handle:
        data = read_at_most(handle, most + 1)
    return data if len(data) <= most else None  # grown meanwhile: read in pieces


def _with_overflow(out: np.ndarray, filled: int, overflow: list[np.ndarray]) -> np.ndarray:
    """The matrix of the ``filled`` kept rows: ``out`` itself, unless the estimate of the rows was short and
    the last pieces kept their own blocks (then one bigger matrix)."""
    if not overflow:
        return out[:filled]
    if len(overflow) == 1 and len(overflow[0]) == filled:  # one piece, which kept its rows in a block of its own
        return overflow[0]
    bigger = empty_matrix(filled, out.shape[1])
    placed = filled - sum(len(b) for b in overflow)
    bigger[:placed] = out[:placed]
    for block in overflow:
        bigger[placed:placed + len(block)] = block
        placed += len(block)
    return bigger


def _is_conversion_error(message: str) -> bool:
    return re.search(r"column #(\d+).*invalid value '(.*)'", message, flags=re.S) is not None


def _estimated_rows(path: Path, sample: int = SAMPLE_BYTES) -> int:
    """Room for the data rows: exact for a file within ``sample`` bytes, else the file size over the mean
    line length of the first ``sample`` bytes, plus a tenth (pieces beyond it keep their own blocks)."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = read_at_most(handle, sample)
    return _rows_from_head(head, size)


def _rows_from_head(head: bytes, size: int) -> int:
    lines = head.count(b"\n") + (not head.endswith(b"\n"))
    if size <= len(head):
        return max(lines, 1)
    return max(int(size / (len(head) / max(lines, 1)) * 1.1) + 1024, 1)


def estimated_rows(header: Header, size: int | None = None) -> int:
    """Room for the data rows of ``header``'s file, without reading it whole (see :func:`_estimated_rows`): from
    the bytes its header kept (all of a small file, the first megabyte of a bigger one), when it did. ``size``: the
    file's size, when the caller asked for it already."""
    if header.contents is not None:
        return _rows_from_head(header.contents[:SAMPLE_BYTES], len(header.contents))
    if header.head is None:
        return _estimated_rows(header.path)
    return _rows_from_head(header.head[:SAMPLE_BYTES], header.path.stat().st_size if size is None else size)


def _joined(parts: list[np.ndarray], dtype) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype=dtype)
    return np.concatenate(parts).astype(dtype, copy=False)


# Side files (panel.csv, neighbour tables, markers.csv, Image.csv ...) up to this size are read whole once: parsed
# from those bytes and hashed from them for provenance, instead of being read a second time to hash them.
SIDE_FILE_BYTES = 1 << 24

_DIGESTS: ContextVar[dict[str, FileDigest] | None] = ContextVar("cellspec_side_file_digests", default=None)


@contextmanager
def recorded_digests() -> Iterator[dict[str, FileDigest]]:
    """Within the block, the SHA-256 and size of every file :func:`read_as_text` reads whole are kept (see
    :func:`recorded_digest`), so that provenance does not read the file again to hash it.

    >>> import hashlib, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "panel.csv"
    >>> _ = path.write_bytes(b"channel,name\\nX1,CD3\\n")
    >>> with recorded_digests():
    ...     names = read_as_text(read_header(path, ",", "steinbock panel.csv")).column("name").to_pylist()
    ...     digest = recorded_digest(path)
    >>> names, digest == (hashlib.sha256(path.read_bytes()).hexdigest(), 20), recorded_digest(path)
    (['CD3'], True, None)
    """
    token = _DIGESTS.set({})
    try:
        yield _DIGESTS.get()
    finally:
        _DIGESTS.reset(token)


def keep_digests() -> None:
    """Keep the digests :func:`recorded_digests` keeps, in the current context until it ends: for a caller that runs
    each read's steps in a ``contextvars.Context`` of its own (a folder's tables, read a step ahead)."""
    _DIGESTS.set({})


def recorded_digest(path: str | os.PathLike) -> FileDigest | None:
    """The SHA-256 and size of ``path`` taken from the bytes a read inside :func:`recorded_digests` parsed (else
    None)."""
    digests = _DIGESTS.get()
    return None if digests is None else digests.get(os.path.abspath(path))


def _whole_file(path: Path, known: bytes | None = None) -> bytes | None:
    """The bytes of a side file of at most :data:`SIDE_FILE_BYTES`, read once and their digest recorded (None:
    a bigger file, read by pyarrow from disk; or no :func:`recorded_digests` block to keep the digest in).
    ``known``: the whole file as its header's encoding sample read it (not read again)."""
    digests = _DIGESTS.get()
    if digests is None:
        return None
    if known is not None:
        digests[os.path.abspath(path)] = FileDigest.of(known)
        return known
    if path.stat().st_size > SIDE_FILE_BYTES:
        return None
    with open(path, "rb") as handle:
        data = read_at_most(handle, SIDE_FILE_BYTES + 1)
    if len(data) > SIDE_FILE_BYTES:  # grew meanwhile
        return None
    digests[os.path.abspath(path)] = FileDigest.of(data)
    return data


def read_as_text(header: Header, columns: Sequence[str] | None = None, *, nulls: bool = True,
                 one_column: bool = False) -> pa.Table:
    """Every column of ``header``'s file (or only ``columns``) as Arrow strings, empty fields null (``nulls``)
    or ``""``; ``one_column``: a file without a header line, its lines the values of column ``f0``. A file
    pyarrow cannot parse is refused as an InputError naming file and line, never pyarrow's own error. Inside
    :func:`recorded_digests` a small file is parsed from the bytes its digest is taken from (read once: the bytes
    :func:`read_header` kept of a file smaller than its encoding sample, else read here)."""
    names = ["f0"] if one_column else list(header.names)
    data = _whole_file(header.path, header.contents)
    source = header.path if data is None else pa.BufferReader(data)
    try:
        return pacsv.read_csv(source, read_options=read_options(header, autogenerate_column_names=one_column),
                              parse_options=pacsv.ParseOptions(delimiter=header.delimiter),
                              convert_options=pacsv.ConvertOptions(
                                  column_types={n: pa.string() for n in names}, strings_can_be_null=nulls,
                                  include_columns=list(columns) if columns is not None else None))
    except (pa.ArrowInvalid, UnicodeDecodeError) as err:
        raise _located_error(header, str(err)) from None


def _located_error(header: Header, message: str) -> InputError:
    name = header.path.name
    if "invalid UTF8" in message or "UTF-8" in message:
        return InputError(f"{name}: the file is not valid {header.encoding} text ({message.strip()}); pass the "
                          "encoding it was written in, e.g. encoding='cp1252' (Windows) or encoding='latin-1'")
    conversion = re.search(r"column #(\d+).*invalid value '(.*)'", message, flags=re.S)
    if conversion:
        col, value = int(conversion.group(1)), conversion.group(2)
        column = header.names[col]
        return NotANumber(name, _line_of_value(header, column, value), column, value)
    if "Expected" in message and "columns" in message:
        line, expected, actual = _first_bad_row(header)
        if line:
            return InputError(f"{name}: line {line}: expected {expected} {SEPARATORS.get(header.delimiter, '')}-"
                              f"separated fields as in the header, found {actual} (wrong separator or a "
                              "truncated line?)")
    return InputError(f"{name}: cannot parse the file: {message}")


def _number_hint(value: str) -> str:
    """What a value that is no number probably is.

    >>> _number_hint("101,25"), _number_hint("P01")[:40]  # doctest: +NORMALIZE_WHITESPACE
    ("; a decimal comma? The readers read '.' as the decimal mark, as the tools write it: export again with '.'
    (e.g. in an English locale) or replace the commas", '; the column holds text: if it is not a ')
    """
    if re.fullmatch(r"\s*[-+]?\d+(\.\d{3})*,\d+\s*", value):
        return ("; a decimal comma? The readers read '.' as the decimal mark, as the tools write it: export again "
                "with '.' (e.g. in an English locale) or replace the commas")
    if re.search(r"[A-Za-z]{2}", value) or re.fullmatch(r"\s*[A-Za-z]\w*\s*", value):
        return ("; the column holds text: if it is not a measurement, leave it out of the export (the readers take "
                "every column they do not know for a measurement when it holds numbers)")
    return ""


def _line_of_value(header: Header, column: str, value: str) -> int | None:
    table = pacsv.read_csv(header.path, read_options=read_options(header),
                           parse_options=pacsv.ParseOptions(delimiter=header.delimiter),
                           convert_options=pacsv.ConvertOptions(include_columns=[column],
                                                                column_types={column: pa.string()}))
    index = pc.index(table.column(column), value).as_py()
    return None if index < 0 else index + 2


def _first_bad_row(header: Header) -> tuple[int | None, int, int]:
    found: list[tuple[int, int, int]] = []

    def handler(row) -> str:
        if not found:
            found.append((row.number, row.expected_columns, row.actual_columns))
        return "skip"

    pacsv.read_csv(header.path, read_options=read_options(header, use_threads=False),
                   parse_options=pacsv.ParseOptions(delimiter=header.delimiter, invalid_row_handler=handler),
                   convert_options=pacsv.ConvertOptions(column_types={n: pa.string() for n in header.names}))
    return found[0] if found else (None, 0, 0)
