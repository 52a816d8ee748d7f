"""Refuse exports that are not text the readers read, before anything is parsed from them.

The readers read UTF-8 or a single-byte Windows code page with LF or CRLF line endings, from a regular
file (they open it several times: encoding, header, pieces, hash). Everything else gets an
:class:`UnreadableText` naming file, line, column and the rule, instead of a traceback from the csv
module, a read that silently splits rows at a bare carriage return, or a wait on a pipe:

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "old_mac.csv"
>>> _ = path.write_bytes(b"CellID,X_centroid\\r1,2.5\\r")
>>> check_line_endings(path, path.read_bytes(), 0, ",", ("CellID", "X_centroid"))
Traceback (most recent call last):
...
cellspec_sc.readers.text_checks.UnreadableText: old_mac.csv: line 1, column 2 ('X_centroid'): a bare carriage return (CR) ends a line, as in classic Mac OS files; the readers read LF or CRLF line endings: convert the file (e.g. tr '\\r' '\\n' < old_mac.csv > fixed.csv)
"""

from __future__ import annotations

import codecs
import re
import stat
from collections.abc import Sequence
from pathlib import Path

from cellspec_sc.errors import InputError

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
