"""The one reader pipeline: read header -> classify columns -> parse -> assemble -> provenance.

Every tool reader is a :class:`ToolAdapter`: mostly data (the columns it requires, its header grammar,
the roles of its columns) plus the few functions that differ between tools (which rows to keep, how
centroids and pixel sizes are found). :func:`read_export` runs the same steps for every adapter:

1. :func:`~cellspec_sc.readers.headers.read_header` checks the header line and
   :func:`~cellspec_sc.readers.headers.require_columns` that it is a table of this tool;
2. :meth:`ToolAdapter.check_header` refuses what the header alone shows to be unreadable (before any
   parsing), and :meth:`ToolAdapter.roles` says which columns are text, numbers or measurements;
3. :meth:`ToolAdapter.parse` (by default :func:`~cellspec_sc.readers.parsing.stream_columns`) parses
   the file, while the input is hashed on another thread;
4. :meth:`ToolAdapter.classify` turns each measurement header into a
   :class:`~cellspec_sc.readers.features.FeatureSpec`, and
   :func:`~cellspec_sc.readers.features.build_dictionary` applies the vocabulary;
5. :meth:`ToolAdapter.tables` builds cells, images and channels from the parsed rows;
6. :func:`assemble` adds provenance and validates the object once.

Adding a tool means one module with one adapter subclass and its ``read_<tool>`` function.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cellspec_sc.errors import ValidationError
from cellspec_sc.io.hashing import BackgroundHash
from cellspec_sc.model.cellspec import CellSpec
from cellspec_sc.model.provenance import input_record, new_provenance
from cellspec_sc.readers.features import FeatureSpec, build_dictionary, checked_marker_map
from cellspec_sc.readers.headers import Header, read_header, require_columns
from cellspec_sc.readers.parsing import Parsed, stream_columns
from cellspec_sc.spec.types import canonical_frame
from cellspec_sc.spec.vocabulary import SPEC_VERSION
from cellspec_sc.validation.runner import validate


@dataclass(frozen=True)
class ColumnRoles:
    """What each column of an export is for: ``text`` columns are read as strings, ``numbers`` as float64
    vectors, ``matrix`` columns go to the measurement matrix in order. ``keep=(column, values)`` keeps
    only rows whose text ``column`` is one of ``values``; ``unfiltered`` text columns are also returned
    for every row read."""

    text: Sequence[str]
    numbers: Sequence[str]
    matrix: Sequence[str]
    keep: tuple[str, Sequence[str]] | None = None
    unfiltered: Sequence[str] = ()


@dataclass
class Tables:
    """What an adapter makes of the parsed rows: the spec tables besides measurements and dictionary."""

    cells: dict[str, Any]
    images: dict[str, Any]
    channels: pd.DataFrame
    parameters: dict[str, Any]
    extra_inputs: Sequence[str | os.PathLike | dict[str, Any]] = field(default_factory=tuple)
    adjacency: pd.DataFrame | None = None


class ToolAdapter:
    """One tool's export grammar. Subclasses set the class attributes and override what differs.

    An adapter instance holds the reader's options for one read (pixel size, ids, marker map ...).
    """

    name: str = ""
    """``provenance.reader.adapter``."""
    version: str = "1.0.0"
    """``provenance.reader.adapter_version``: bumped whenever the output for the same input changes."""
    tool: str = ""
    """The tool's name in messages."""
    producer: str = ""
    """``provenance.producer.tool``."""
    required: tuple[tuple[str, ...], ...] = ()
    """Groups of alternative column names; a table of this tool has one column of every group."""

    def __init__(self, marker_map: Mapping[str, str] | None = None, encoding: str | None = None) -> None:
        self.marker_map = dict(marker_map or {})
        self.encoding = encoding  # None: detected (UTF-8, else the Windows code page, with a warning)
        checked_marker_map(self.marker_map)  # refuse a bad marker_map before reading anything

    def delimiter(self, path: Path) -> str:
        """The field separator of ``path``."""
        return ","

    def check_header(self, header: Header) -> None:
        """Refuse what the header alone shows cannot be read (before the file is parsed)."""

    def roles(self, header: Header) -> ColumnRoles:
        """Which columns are text, numbers and measurements."""
        raise NotImplementedError

    def parse(self, header: Header, roles: ColumnRoles) -> Parsed:
        """Parse the export (every adapter so far streams it with pyarrow)."""
        return stream_columns(header, text=roles.text, numbers=roles.numbers, matrix=roles.matrix, keep=roles.keep,
                              unfiltered=roles.unfiltered)

    def classify(self, header: Header, roles: ColumnRoles) -> list[FeatureSpec]:
        """One FeatureSpec per ``roles.matrix`` column, in order."""
        raise NotImplementedError

    def tables(self, header: Header, parsed: Parsed, dictionary: pd.DataFrame, applied: Mapping[str, str],
               specs: Sequence[FeatureSpec]) -> Tables:
        """Cells, images, channels and reader parameters from the parsed rows."""
        raise NotImplementedError


def read_export(adapter: ToolAdapter, path: str | os.PathLike, *, validate_result: bool = True) -> CellSpec:
    """Read one export with ``adapter`` through the steps of this module.

    ``validate_result=False`` leaves the one validation to a caller that validates anyway
    (``cellspec import`` validates once and hands the report to the writer)."""
    path = Path(path)
    header = read_header(path, adapter.delimiter(path), adapter.tool, adapter.encoding)
    require_columns(header, adapter.tool, adapter.required)
    adapter.check_header(header)
    roles = adapter.roles(header)
    source = BackgroundHash(path)  # SHA-256 of the input, computed while the file is parsed
    try:
        parsed = adapter.parse(header, roles)
        specs = adapter.classify(header, roles)
        dictionary, applied = build_dictionary(specs, adapter.marker_map)
        tables = adapter.tables(header, parsed, dictionary, applied, specs)
        return assemble(adapter, path=path, parsed=parsed, dictionary=dictionary, tables=tables,
                        path_record=input_record(path, sha256=source.result()), validate_result=validate_result)
    finally:
        source.cancel()


def assemble(adapter: ToolAdapter, *, path: Path, parsed: Parsed, dictionary: pd.DataFrame, tables: Tables,
             path_record: dict[str, Any], validate_result: bool = True) -> CellSpec:
    """Build the object with its provenance, then refuse it if validation fails (a reader bug, never user
    data: the reader stops on bad input before this). This is the only validation of a read."""
    counts = {"rows_read": parsed.rows_read, "rows_kept": parsed.n, **parsed.counts}
    provenance = new_provenance(
        producer={"tool": adapter.producer, "version": None}, adapter=adapter.name, adapter_version=adapter.version,
        inputs=[path_record, *(p if isinstance(p, dict) else input_record(p) for p in tables.extra_inputs)],
        counts=counts, parameters=tables.parameters,
    )
    x = CellSpec(
        spec_version=SPEC_VERSION,
        cells=canonical_frame(pd.DataFrame(tables.cells), "cells"),
        measurements=np.ascontiguousarray(parsed.matrix, dtype=np.float64),
        dictionary=dictionary,
        images=canonical_frame(pd.DataFrame(tables.images), "images"),
        channels=tables.channels,
        provenance=provenance,
        adjacency=tables.adjacency,
    )
    if not validate_result:
        return x
    report = validate(x)
    if not report.ok:
        raise ValidationError(report, context=f"{path.name}: the {adapter.name} reader built an invalid object")
    return x
