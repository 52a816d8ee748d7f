"""The header line of a tool export, and the refusal of files that are not text the readers read.

Headers are matched after :func:`normalise_header` (every micro-sign variant of the vocabulary read as
``u``, spaces collapsed); the header as written is kept in ``source_name``.

The readers read UTF-8 or a single-byte Windows code page with LF or CRLF line endings, from a regular
file (they open it several times: encoding, header, pieces, hash). Everything else gets an
:class:`UnreadableText` naming file, line, column and the rule, instead of a traceback from the csv
module, a read that silently splits rows at a bare carriage return, or a wait on a pipe.

>>> normalise_header("Cell: Area \\u00c2\\u00b5m^2")
'Cell: Area um^2'
>>> other_name("Detection probability")
'detection_probability'
>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "old_mac.csv"
>>> _ = path.write_bytes(b"CellID,X_centroid\\r1,2.5\\r")
>>> check_line_endings(path, path.read_bytes(), 0, ",", ("CellID", "X_centroid"))
Traceback (most recent call last):
...
cellspec_sc.readers._header.UnreadableText: old_mac.csv: line 1, column 2 ('X_centroid'): a bare carriage return (CR) ends a line, as in classic Mac OS files; the readers read LF or CRLF line endings: convert the file (e.g. tr '\\r' '\\n' < old_mac.csv > fixed.csv)
"""

from __future__ import annotations

import codecs
import csv
import os
import re
import stat
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

from cellspec_sc.errors import InputError
from cellspec_sc.readers._values import notice
from cellspec_sc.spec.vocabulary import vocabulary

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
        sample = handle.read(ENCODING_SAMPLE)
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
    if not rows or not sample[rows:].isascii():
        return False
    try:
        sample[:rows].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# A header line is a few kB (10,000 columns of 100 characters are 1 MB); what has no line end within this is
# not a table, and must not be read whole (a file with bare CR line ends has no LF at all).
HEADER_MAX_BYTES = 16 << 20


def read_header(path: str | os.PathLike, delimiter: str | Sequence[str], tool: str, encoding: str | None = None
                ) -> Header:
    """Read and check the header line: not empty, not duplicated, the expected separator. ``delimiter`` is
    the separator, or the separators the tool may use; then the header line decides (the one it holds most
    of, the first on a tie).

    ``encoding`` (default: detected, see :func:`detect_encoding`) is recorded on the header for the
    parser. Raises InputError naming the file and line 1.
    """
    path = Path(path)
    check_regular_file(path)
    with open(path, "rb") as handle:
        first = handle.readline(HEADER_MAX_BYTES + 1)
    endless = len(first) > HEADER_MAX_BYTES and not first.endswith(b"\n")
    check_not_container(path, first)
    check_wide_encoding(path, first)
    if not isinstance(delimiter, str):
        delimiter = max(delimiter, key=lambda sep: first.count(sep.encode()))
    check_text(path, first.removesuffix(b"\r") if endless else first, 0, delimiter, ())
    if endless:
        raise UnreadableText(f"{path.name}: line 1 runs past {HEADER_MAX_BYTES >> 20} MiB without a line end: not "
                             f"the header line of a {tool} table (a binary file, or text without line ends?)")
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
    blank = [i + 1 for i, n in enumerate(names) if not n.strip()]
    if blank:
        raise InputError(f"{path.name}: line 1, column {blank[0]}: empty column name in the header")
    dups = sorted(n for n, count in Counter(names).items() if count > 1)
    if dups:
        raise InputError(f"{path.name}: line 1: duplicated column name(s) {', '.join(map(repr, dups))}"
                         f"{_quote_note(text, delimiter, names, dups)}")
    return Header(path, delimiter, names, encoding)


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
        raise InputError(f"{path}: no such file") from None
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
CONTAINERS = ((b"\x1f\x8b", "gzip-compressed (QuPath writes gzip when the name ends in .gz)",
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
