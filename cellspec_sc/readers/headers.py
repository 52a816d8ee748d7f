"""The header line of a tool export: read, checked, and matched through the vocabulary's normalisation.

Headers are matched after :func:`normalise_header` (every micro-sign variant of the vocabulary read as
``u``, spaces collapsed); the header as written is kept in ``source_name``.

>>> normalise_header("Cell: Area \\u00c2\\u00b5m^2")
'Cell: Area um^2'
>>> other_name("Detection probability")
'detection_probability'
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cellspec_sc.errors import InputError
from cellspec_sc.spec.vocabulary import vocabulary

SEPARATORS = {"\t": "tab", ",": "comma", ";": "semicolon", "|": "pipe"}


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

    @property
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


def read_header(path: str | os.PathLike, delimiter: str, tool: str) -> Header:
    """Read and check the header line: not empty, not duplicated, the expected separator.

    Raises InputError naming the file and line 1.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    with open(path, "rb") as handle:
        first = handle.readline()
    text = first.decode("utf-8-sig", errors="replace").rstrip("\r\n")
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
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise InputError(f"{path.name}: line 1: duplicated column name(s) {', '.join(map(repr, dups))}")
    return Header(path, delimiter, names)


def require_columns(header: Header, tool: str, groups: Sequence[Sequence[str]]) -> None:
    """Stop unless, for every group of alternatives, one column is present; list what is missing."""
    missing = [alternatives for alternatives in groups if header.find(*alternatives) is None]
    if missing:
        wanted = "; ".join(" or ".join(repr(a) for a in alts) for alts in missing)
        raise InputError(f"{header.path.name}: not a {tool} table: expected column(s) not found: {wanted} "
                         f"(found {len(header.names)} column(s): {', '.join(header.names[:8])}"
                         f"{', ...' if len(header.names) > 8 else ''})")
