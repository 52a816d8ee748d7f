"""MCMICRO's ``markers.csv``: channel names in channel order as mcquant names its columns, and how a
``markers.csv`` that does not fit the table is told to the user.

>>> mcquant_names(["DNA", "CD3", "DNA"])
['DNA_1', 'CD3', 'DNA_2']
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc.errors import InputError
from cellspec_sc.readers.headers import read_header
from cellspec_sc.readers.notices import listed, notice
from cellspec_sc.readers.parsing import read_as_text
from cellspec_sc.readers.values import check_missing_text

# Values of markers.csv's remove column that mark a channel as removed.
REMOVE_TRUE = ("true", "1", "yes", "x")


def mcquant_names(names: list[str]) -> list[str]:
    """Channel names as mcquant makes them unique: every copy of a repeated name gets ``_1``, ``_2``...

    >>> mcquant_names(["DNA", "CD3", "DNA"])
    ['DNA_1', 'CD3', 'DNA_2']
    """
    total, seen = Counter(names), Counter()
    out = []
    for name in names:
        seen[name] += 1
        out.append(f"{name}_{seen[name]}" if total[name] > 1 else name)
    return out


@dataclass(frozen=True)
class Markers:
    """A ``markers.csv``: channel names in channel order, and those its ``remove`` column marks (MCMICRO's
    background subtraction drops them from the image it writes, so a table quantified from that image has
    no column for them)."""

    names: list[str]
    removed: frozenset[str] = frozenset()


def read_markers(path: str | os.PathLike) -> Markers:
    """The channels of an MCMICRO ``markers.csv`` (or the old one-name-per-line file)."""
    header = read_header(path, ",", "markers.csv")
    if "marker_name" in header.names:
        table = read_as_text(header, nulls=False)
        names = table.column("marker_name").to_numpy(zero_copy_only=False)
        check_missing_text(header.path, names, "marker_name", None)
        order = np.arange(len(names))
        if "channel_number" in header.names:
            numbers = _numbers_or_none(table.column("channel_number"))
            if numbers is not None and np.isfinite(numbers).all():
                order = np.argsort(numbers, kind="stable")
        ordered = mcquant_names([str(names[i]).strip() for i in order])
        flags = table.column("remove").to_pylist() if "remove" in header.names else [None] * len(names)
        removed = {name for name, i in zip(ordered, order, strict=True)
                   if str(flags[i] or "").strip().lower() in REMOVE_TRUE}
        return Markers(ordered, frozenset(removed))
    if len(header.names) == 1:
        table = read_as_text(header, nulls=False, one_column=True)
        return Markers(mcquant_names([str(v).strip() for v in table.column("f0").to_pylist()]))
    raise InputError(f"{header.path.name}: not an MCMICRO markers.csv: expected column 'marker_name' not found; "
                     f"found: {', '.join(header.names)}")


def in_table(marker: str, bases: set[str]) -> bool:
    """Whether the table has a column of ``marker`` (``bases``: its column names without mask suffixes)."""
    return marker in bases or any(b.startswith(marker + "_") for b in bases)


def _numbers_or_none(values: pa.ChunkedArray) -> np.ndarray | None:
    """Text as float64 (NaN for empty), or None when one value is not a number."""
    try:
        return pc.cast(pc.utf8_trim_whitespace(values), pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        return None


def unquoted_channels(channel_names: Sequence[str], bases: set[str], csv_name: str, *, strict: bool) -> list[str]:
    """``channel_names`` with the quotes taken off those written as ``'DNA 1'`` (or ``"DNA 1"``) whose columns
    the table (its column names without mask suffixes: ``bases``) has without them, as in MCMICRO workshop
    data; said in a warning (refused with ``strict``).

    >>> unquoted_channels(["'DNA 1'", "CD3"], {"DNA 1", "CD3_intensity_median"}, "markers.csv", strict=False)
    ['DNA 1', 'CD3']
    """
    out, unquoted = [], []
    for name in channel_names:
        inner = name[1:-1].strip() if len(name) > 2 and name[0] == name[-1] and name[0] in "'\"" else None
        if inner and not in_table(name, bases) and in_table(inner, bases):
            out.append(inner)
            unquoted.append(name)
        else:
            out.append(name)
    if unquoted:
        notice(f"{csv_name}: marker name(s) {listed(unquoted, quote=False)} are in quotes that the table's columns "
               "do not have; matched without the quotes", strict=strict)
    return out


def warn_unmatched(csv_name: str, channel_names: Sequence[str], lost: Sequence[str], matched: set[str], *,
                   strict: bool) -> None:
    """Warn (refuse with ``strict``) when markers.csv names none or only part of the marker columns (``lost``:
    the columns that became kind other), or names channels without a column."""
    unused = [m for m in channel_names if m not in matched]
    if lost and not matched:
        notice(f"{csv_name}: names none of the marker columns of the table ({listed(lost, quote=False)}); they "
               f"become kind other and the channels come from {csv_name}: is it the markers.csv of this table?",
               strict=strict)
    elif lost:
        notice(f"{csv_name}: column(s) {', '.join(map(repr, lost))} of the table are not in {csv_name} and become "
               f"kind other; {csv_name} names {', '.join(map(repr, unused)) or 'no other channel'} without a column",
               strict=strict)
    elif unused:
        notice(f"{csv_name}: names {len(unused)} channel(s) with no column in the table ({listed(unused)}); they are "
               "kept as channels without measurements", strict=strict)

