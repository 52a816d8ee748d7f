"""Versions of the records cellspec_sc stores outside a cellspec directory.

Every record the package writes into another format (the AnnData ``uns`` record, SpatialData attrs, a Luxar
scene's cellspec metadata, ``cohort.json``, matrix fingerprints) is one codec: ``encode`` and ``decode`` side by
side in one module, with a :class:`RecordFormat` that writes its version and reads it back. A record from before
versions were written is given the version its shape shows (``legacy``); a record of a newer major version is
refused, naming both versions.

>>> fmt = RecordFormat("the example record", "2.1")
>>> fmt.stamp({"a": 1})
{'format_version': '2.1', 'a': 1}
>>> fmt.version_of({"format_version": "2.0"}, where="x.h5ad")
(2, 0)
>>> fmt.version_of({"format_version": "3.0"}, where="x.h5ad")  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
cellspec_sc.errors.FormatError: x.h5ad: the example record is version 3.0, newer than the 2.1 this cellspec_sc reads;
install a newer cellspec_sc (pip install -U cellspec_sc) to read it
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cellspec_sc.errors import FormatError

__all__ = ["RecordFormat", "parse_version"]

_VERSION = re.compile(r"(\d{1,6})\.(\d{1,6})")


def parse_version(text: Any, *, what: str, where: str) -> tuple[int, int]:
    """``"MAJOR.MINOR"`` as two integers; anything else is refused as :class:`FormatError`.

    >>> parse_version("1.10", what="a record", where="here")
    (1, 10)
    """
    match = _VERSION.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise FormatError(f"{where}: {what} has format_version {text!r}, which is not MAJOR.MINOR (like '1.0')")
    return int(match.group(1)), int(match.group(2))


@dataclass(frozen=True)
class RecordFormat:
    """The name and current version of one stored record.

    Parameters
    ----------
    name
        What the record is, for messages ("the cellspec AnnData record (uns['cellspec'])").
    version
        ``"MAJOR.MINOR"`` that :meth:`stamp` writes. A new minor version adds what older readers may pass over;
        a new major version changes what is there, and readers of an older major refuse it.
    key
        The key the version is stored under.
    """

    name: str
    version: str
    key: str = "format_version"

    @property
    def current(self) -> tuple[int, int]:
        """The version written, as integers."""
        return parse_version(self.version, what=self.name, where="cellspec_sc")

    def stamp(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """The record with its version first."""
        return {self.key: self.version, **{k: v for k, v in record.items() if k != self.key}}

    def version_of(self, record: Mapping[str, Any], *, where: str,
                   legacy: Callable[[Mapping[str, Any]], str] | None = None) -> tuple[int, int]:
        """The version a stored record was written in, refused when newer than this package reads.

        ``legacy`` names the version of a record written before versions were stored (its shape tells); without
        it, a record with no version is refused.
        """
        if self.key in record:
            found = record[self.key]
        elif legacy is not None:
            found = legacy(record)
        else:
            raise FormatError(f"{where}: {self.name} has no {self.key}; it was not written by cellspec_sc")
        version = parse_version(found, what=self.name, where=where)
        if version[0] > self.current[0]:
            raise FormatError(f"{where}: {self.name} is version {found}, newer than the {self.version} this "
                              "cellspec_sc reads; install a newer cellspec_sc (pip install -U cellspec_sc) to read it")
        return version
