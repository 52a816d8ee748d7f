"""The one reader pipeline: read header -> classify columns -> parse -> assemble -> provenance.

Every tool reader is a :class:`ToolAdapter`: mostly data (the columns it requires, its header grammar,
the roles of its columns) plus the few functions that differ between tools (which rows to keep, how
centroids and pixel sizes are found). :func:`read_export` runs the same steps for every adapter:

1. :meth:`ToolAdapter.header` reads the header line (:func:`~cellspec_sc.readers.headers.read_header`),
   checks that it is a table of this tool (:func:`~cellspec_sc.readers.headers.require_columns`) and
   refuses what the header alone shows to be unreadable (:meth:`ToolAdapter.check_header`), before any
   parsing; a tool that writes a folder of tables (steinbock) gives the header of the joined table;
2. :meth:`ToolAdapter.roles` says which columns are text, numbers or measurements;
3. :meth:`ToolAdapter.parse` (by default :func:`~cellspec_sc.readers.parsing.stream_columns`) parses
   the file, while the input is hashed on another thread;
4. :meth:`ToolAdapter.classify` turns each measurement header into a
   :class:`~cellspec_sc.readers.features.FeatureSpec`, and
   :func:`~cellspec_sc.readers.features.build_dictionary` applies the vocabulary;
5. :meth:`ToolAdapter.tables` builds cells, images and channels from the parsed rows (it may hand over the
   cell-id codes as a Future still being made on another core: :class:`CodesPending`);
6. :func:`assemble` adds provenance, and :func:`read_export_report` validates the object once.

Adding a tool means one module with one adapter subclass (``roles``, ``classify`` and ``tables`` are
abstract) and its ``read_<tool>`` function.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from cellspec_sc.errors import ValidationError
from cellspec_sc.model.cellspec import CellSpec
from cellspec_sc.model.ownership import sealed
from cellspec_sc.model.provenance import input_record, new_provenance
from cellspec_sc.readers.features import FeatureSpec, build_dictionary, checked_marker_map
from cellspec_sc.readers.headers import Header, read_header, require_columns
from cellspec_sc.readers.parsing import Parsed, stream_columns
from cellspec_sc.readers.pieces import workers
from cellspec_sc.spec.types import canonical_frame
from cellspec_sc.spec.vocabulary import SPEC_VERSION
from cellspec_sc.validation.matrix_stats import MatrixStats, first_seen_codes
from cellspec_sc.validation.report import ValidationReport
from cellspec_sc.validation.runner import validate

T = TypeVar("T")


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
    group: str | None = None
    """The text column that decides each row's image (None: one image), for the matrix stats' ranges."""


@dataclass
class Tables:
    """What an adapter makes of the parsed rows: the spec tables besides measurements and dictionary."""

    cells: dict[str, Any]
    images: dict[str, Any]
    channels: pd.DataFrame
    parameters: dict[str, Any]
    extra_inputs: Sequence[str | os.PathLike | dict[str, Any]] = field(default_factory=tuple)
    """Inputs besides the export itself (recorded in provenance after it, in this order)."""
    adjacency: pd.DataFrame | None = None
    cell_codes: np.ndarray | Future[np.ndarray] | None = None
    """Dense codes of the cells' cell_id made while checking them (validation reuses them), or None; a Future
    while another core still encodes and checks them (its ``result()`` raises the adapter's refusal of
    repeated ids), so that the object is built and most of its validation runs meanwhile."""
    image_codes: tuple[np.ndarray, np.ndarray] | None = None
    """``first_seen_codes`` of the cells' image_id when the adapter made them (else made from the cells table)."""


class ToolAdapter(ABC):
    """One tool's export grammar. Subclasses set the class attributes, implement :meth:`roles`,
    :meth:`classify` and :meth:`tables`, and override what else differs.

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

    def delimiter(self, path: Path) -> str | tuple[str, ...]:
        """The field separator of ``path``, or the separators its header line chooses from."""
        return ","

    def header(self, path: Path) -> Header:
        """The checked header of the export at ``path``: a table of this tool that can be read."""
        header = read_header(path, self.delimiter(path), self.tool, self.encoding)
        require_columns(header, self.tool, self.required, self.missing_advice(header))
        self.check_header(header)
        return header

    def missing_advice(self, header: Header) -> str:
        """What to say, instead of "not a <tool> table", when a required column is missing ("" for that)."""
        return ""

    def check_header(self, header: Header) -> None:
        """Refuse what the header alone shows cannot be read (before the file is parsed)."""

    @abstractmethod
    def roles(self, header: Header) -> ColumnRoles:
        """Which columns are text, numbers and measurements."""

    def parse(self, header: Header, roles: ColumnRoles) -> Parsed:
        """Parse the export (every adapter so far streams it with pyarrow)."""
        return stream_columns(header, text=roles.text, numbers=roles.numbers, matrix=roles.matrix, keep=roles.keep,
                              unfiltered=roles.unfiltered, group=roles.group)

    def settled_roles(self, roles: ColumnRoles) -> ColumnRoles:
        """The roles the parse used: ``roles``, unless the adapter changed them while parsing (QuPath reads as
        text the columns it finds hold text when a parse fails)."""
        return roles

    @abstractmethod
    def classify(self, header: Header, roles: ColumnRoles) -> list[FeatureSpec]:
        """One FeatureSpec per ``roles.matrix`` column, in order."""

    @abstractmethod
    def tables(self, header: Header, parsed: Parsed, dictionary: pd.DataFrame, applied: Mapping[str, str],
               specs: Sequence[FeatureSpec]) -> Tables:
        """Cells, images, channels and reader parameters from the parsed rows."""


def read_export(adapter: ToolAdapter, path: str | os.PathLike) -> CellSpec:
    """Read one export with ``adapter`` through the steps of this module, and refuse the object if its one
    validation fails (a reader bug, never user data: the reader stops on bad input before this)."""
    x, report = read_export_report(adapter, path)
    if not report.ok:
        raise ValidationError(report, context=f"{Path(path).name}: the {adapter.name} reader built an invalid object")
    return x


def read_export_report(adapter: ToolAdapter, path: str | os.PathLike) -> tuple[CellSpec, ValidationReport]:
    """The object read from ``path`` and the report of its one validation, which uses the matrix stats the
    parse gathered (``cellspec import`` hands the report on to the writer; the object remembers it too)."""
    path = Path(path)
    header = adapter.header(path)
    roles = adapter.roles(header)
    parsed = adapter.parse(header, roles)  # hashes a single-file export from the bytes it parses
    roles = adapter.settled_roles(roles)
    specs = adapter.classify(header, roles)
    dictionary, applied = build_dictionary(specs, adapter.marker_map)
    tables = adapter.tables(header, parsed, dictionary, applied, specs)
    # a folder's tables are inputs of their own
    record = input_record(path, sha256=parsed.sha256) if path.is_file() else None
    x = assemble(adapter, parsed=parsed, dictionary=dictionary, tables=tables, path_record=record)
    report = validate(x, stats=_image_stats(parsed, x.cells, tables))
    if isinstance(tables.cell_codes, Future):
        tables.cell_codes.result()  # the adapter's refusal of repeated ids, if validation did not wait for it
    return x, report


def assemble(adapter: ToolAdapter, *, parsed: Parsed, dictionary: pd.DataFrame, tables: Tables,
             path_record: dict[str, Any] | None) -> CellSpec:
    """Build the object with its provenance (not validated: :func:`read_export_report` validates it once)."""
    counts = {"rows_read": parsed.rows_read, "rows_kept": parsed.n, **parsed.counts}
    provenance = new_provenance(
        producer={"tool": adapter.producer, "version": None}, adapter=adapter.name, adapter_version=adapter.version,
        inputs=[*([path_record] if path_record is not None else []),
                *(p if isinstance(p, dict) else input_record(p) for p in tables.extra_inputs)],
        counts=counts, parameters=tables.parameters,
    )
    return CellSpec(
        spec_version=SPEC_VERSION,
        cells=canonical_frame(tables.cells, "cells"),
        measurements=sealed(np.ascontiguousarray(parsed.matrix, dtype=np.float64)),
        dictionary=dictionary,
        images=canonical_frame(tables.images, "images"),
        channels=tables.channels,
        provenance=provenance,
        adjacency=tables.adjacency,
    )


def _image_stats(parsed: Parsed, cells: pd.DataFrame, tables: Tables) -> MatrixStats | CodesPending | None:
    """The parse's matrix stats with ranges per image in validation's order, and the image and cell id codes the
    reader made (validation reuses them); None: validation gathers them."""
    if parsed.stats is None or "image_id" not in cells.columns:
        return None
    known = tables.image_codes
    codes, names = known if known is not None and len(known[0]) == len(cells) else first_seen_codes(cells["image_id"])
    stats = parsed.stats.for_images(codes, np.asarray(names, dtype=object))
    if stats is None:
        return None
    if isinstance(tables.cell_codes, Future):
        return CodesPending(stats, tables.cell_codes)
    stats.cell_codes = tables.cell_codes
    return stats


@dataclass
class CodesPending:
    """The parse's matrix stats while another core still encodes the cell ids: validation runs every check
    that needs neither the stats nor the codes first, then waits in :meth:`result` (which raises the
    adapter's refusal of repeated ids).

    >>> pending = CodesPending(MatrixStats(1), in_background(np.arange, 3))
    >>> pending.result().cell_codes.tolist()
    [0, 1, 2]
    """

    stats: MatrixStats
    codes: Future[np.ndarray]
    brings_cell_codes = True

    @property
    def image_codes(self) -> tuple[np.ndarray, np.ndarray] | None:
        return self.stats.image_codes

    def result(self) -> MatrixStats:
        self.stats.cell_codes = self.codes.result()
        return self.stats


def in_background(fn: Callable[..., T], *args: Any) -> Future[T]:
    """``fn(*args)`` started in a thread (for work that releases the GIL: Arrow, numpy, hashlib), so that it runs on
    another core while the caller goes on; ``.result()`` waits for it (and raises what it raised). With one usable
    CPU (as the parse counts them) it runs at once in the caller's thread: a thread would only take turns with it.

    >>> in_background(sum, [1, 2]).result()
    3
    """
    if workers() <= 1:
        done: Future[T] = Future()
        try:
            done.set_result(fn(*args))
        except Exception as err:  # noqa: BLE001 - raised by .result(), as from a thread
            done.set_exception(err)
        return done
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cellspec-reader")
    try:
        return pool.submit(fn, *args)
    finally:
        pool.shutdown(wait=False)
