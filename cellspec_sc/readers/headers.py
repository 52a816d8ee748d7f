"""The header line of a tool export: read, checked, and matched through the vocabulary's normalisation.

Headers are matched after :func:`normalise_header` (every micro-sign variant of the vocabulary read as
``u``, spaces collapsed); the header as written is kept in ``source_name``.

>>> normalise_header("Cell: Area \\u00c2\\u00b5m^2")
'Cell: Area um^2'
>>> other_name("Detection probability")
'detection_probability'
"""

from __future__ import annotations

import codecs
import csv
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

from cellspec_sc.errors import InputError
from cellspec_sc.readers.notices import notice
from cellspec_sc.readers.text_checks import (UnreadableText, check_encoding_name, check_not_container,
                                             check_regular_file, check_text, check_wide_encoding)
from cellspec_sc.spec import vocabulary

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
