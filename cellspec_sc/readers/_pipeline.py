"""The one reader pipeline: plan -> parse -> dictionary -> tables -> object -> one validation.

Every tool reader is a :class:`ToolAdapter`: the reader's options (pixel size, ids, marker map ...) and three
steps that differ between tools. :func:`read_export_report` runs them, top to bottom, for every adapter:

1. :meth:`ToolAdapter.plan` reads the header line (and the tool's side files: ``markers.csv``, ``panel.csv``
   ...), refuses what they alone show to be unreadable, and returns a frozen :class:`Plan`: the checked
   :class:`~cellspec_sc.readers._table.Header`, the :class:`ColumnRoles` (text, numbers, measurements, rows
   kept) and one :class:`~cellspec_sc.readers._features.FeatureSpec` per measurement column. Nothing is
   parsed yet;
2. :meth:`ToolAdapter.parse` executes the plan's roles (by default
   :func:`~cellspec_sc.readers._table.stream_columns`, which hashes the file from the bytes it parses: for an
   export of 256 kB to 16 MB on another thread after the parse, while step 4 runs) and returns the plan the parse
   settled on (QuPath reads as text the columns it finds hold text);
3. :func:`~cellspec_sc.readers._features.build_dictionary` applies the vocabulary to the plan's features, while
   another thread parses (:func:`parsed_with_dictionary`: the parse's refusals still come first);
4. :meth:`ToolAdapter.tables` builds cells, images and channels from the parsed rows (it may still be checking
   the cell ids on another core: :attr:`Tables.cell_codes`);
5. :func:`assemble` adds provenance, and the object is validated once with the matrix stats the parse
   gathered and the id codes the adapter made (plain values: the background work is finished first).

Adding a tool means one folder with its plan (the tool's grammar as data), an adapter subclass and its
``read_<tool>`` function.
"""

from __future__ import annotations

import contextvars
import hashlib
import os
import tempfile
import zlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, wait
from contextlib import closing
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from cellspec_sc._background import in_background
from cellspec_sc._files import FileDigest
from cellspec_sc.errors import InputError, ValidationError, argument_error, is_positive_number
from cellspec_sc.model import (
    CellSpec,
    HandedOver,
    MatrixStats,
    first_seen_codes,
    input_record,
    new_provenance,
    sealed,
)
from cellspec_sc.progress import progress, step
from cellspec_sc.readers._features import FeatureSpec, build_dictionary, checked_marker_map
from cellspec_sc.readers._folder import combined, each_warning_once, joined_compartments
from cellspec_sc.readers._recognise import folder_tables, is_gzip, other_tool_advice
from cellspec_sc.readers._table import (
    SMALL_TABLE_BYTES,
    Header,
    Parsed,
    keep_digests,
    recorded_digest,
    recorded_digests,
    stream_columns,
)
from cellspec_sc.spec import SPEC_VERSION, canonical_frame
from cellspec_sc.validation import ValidationReport, validate

RECOGNISED: ContextVar[str | None] = ContextVar("recognised", default=None)
"""Which reader :func:`~cellspec_sc.readers.read_export` chose, while it runs that reader (recorded in provenance)."""


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
    nulls: Sequence[str] = ("",)
    """The values that are missing (the empty field; inForm also writes ``#N/A``)."""


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What an adapter made of an export's header and side files, before parsing: tools add their own fields
    (a frozen subclass). ``features`` holds one FeatureSpec per ``roles.matrix`` column, in order."""

    header: Header
    roles: ColumnRoles
    features: tuple[FeatureSpec, ...]

    def with_text(self, columns: Sequence[str]) -> Plan:
        """This plan with ``columns`` (measurement columns found to hold text) read as text instead.

        >>> from pathlib import Path
        >>> plan = Plan(header=Header(Path("t.tsv"), "\\t", ("a", "b")), roles=ColumnRoles([], [], ["a", "b"]),
        ...             features=(FeatureSpec.other("a"), FeatureSpec.other("b")))
        >>> settled = plan.with_text(["a"])
        >>> settled.roles.text, settled.roles.matrix, [f.source_name for f in settled.features]
        (['a'], ['b'], ['b'])
        """
        moved = set(columns)
        kept = [(name, spec) for name, spec in zip(self.roles.matrix, self.features, strict=True) if name not in moved]
        roles = replace(self.roles, text=[*self.roles.text, *columns], matrix=[name for name, _ in kept])
        return replace(self, roles=roles, features=tuple(spec for _, spec in kept))


@dataclass
class Tables:
    """What an adapter makes of the parsed rows: the spec tables besides measurements and dictionary, made for the
    object (its frames are handed to it without a copy: nothing else may keep them)."""

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
    repeated ids), so that the object is built meanwhile."""
    image_codes: tuple[np.ndarray, np.ndarray] | None = None
    """``first_seen_codes`` of the cells' image_id when the adapter made them (else made from the cells table)."""


class ToolAdapter(ABC):
    """One tool's reader: its options for one read, and the steps that differ between tools. An adapter keeps
    no state between the steps: each step returns what the next one needs.

    Subclasses set the class attributes and implement :meth:`plan` and :meth:`tables`.
    """

    name: ClassVar[str] = ""
    """``provenance.reader.adapter``."""
    version: ClassVar[str] = "1.0.0"
    """``provenance.reader.adapter_version``: bumped whenever the output for the same input changes."""
    tool: ClassVar[str] = ""
    """The tool's name in messages."""
    producer: ClassVar[str] = ""
    """``provenance.producer.tool``."""
    reads_gzip: ClassVar[bool] = False
    """Whether the tool's exports may come gzip-compressed (decompressed once, hashed as stored)."""
    reads_table_folders: ClassVar[bool] = False
    """Whether a folder of the tool's tables (one per image or field) is read as one object
    (:mod:`~cellspec_sc.readers._folder`)."""
    recognised: str | None = None
    """Set by :func:`~cellspec_sc.readers.read_export` when it chose this reader: recorded in provenance."""

    def __init__(self, marker_map: Mapping[str, str] | None = None, encoding: str | None = None) -> None:
        self.marker_map = dict(marker_map or {})
        self.encoding = encoding  # None: detected (UTF-8, else the Windows code page, with a warning)
        checked_marker_map(self.marker_map)  # refuse a bad marker_map before reading anything

    def located(self, path: Path) -> tuple[ToolAdapter, Path]:
        """The adapter and the export to read for ``path`` as the user gave it, before anything is read: this
        adapter and ``path``, unless the tool's exports sit in a project folder beside their side files (MCMICRO),
        where a copy of the adapter takes the side files its options left out, and a project folder its table."""
        return self, path

    @abstractmethod
    def plan(self, path: Path) -> Plan:
        """The checked header of the export at ``path`` (and its side files) as a frozen plan."""

    def parse(self, plan: Plan) -> tuple[Parsed, Plan]:
        """Parse the export as ``plan`` says (every tool so far streams it with pyarrow); the plan the parse used."""
        roles = plan.roles
        parsed = stream_columns(plan.header, text=roles.text, numbers=roles.numbers, matrix=roles.matrix,
                                keep=roles.keep, unfiltered=roles.unfiltered, group=roles.group, nulls=roles.nulls,
                                digest_later=True)
        return parsed, plan

    @abstractmethod
    def tables(self, plan: Plan, parsed: Parsed, dictionary: pd.DataFrame, applied: Mapping[str, str]) -> Tables:
        """Cells, images, channels and reader parameters from the parsed rows."""

    def table_groups(self, tables: Sequence[Path]) -> list[list[Path]]:
        """The tables of a folder in groups of one compartment, the groups' objects joined by cell id
        (:func:`~cellspec_sc.readers._folder.joined_compartments`; first group first): one group, unless the tool
        writes a table per mask (MCMICRO)."""
        return [list(tables)]


_ABSENT = object()


def check_reader_arguments(function: str, path: Any, *, pixel_size: Any = None, image_id: Any = None,
                           sample_id: Any = None, marker_map: Any = None, object_types: Any = _ABSENT,
                           flags: Mapping[str, Any] | None = None) -> None:
    """Refuse an argument of a reader by its type or range before any file is opened, naming the reader and the
    argument (an InputError, so also a ValueError); what the arguments mean for the file is checked later.

    >>> check_reader_arguments("read_qupath", "m.tsv", pixel_size=True)
    Traceback (most recent call last):
    ...
    cellspec_sc.errors.InputError: read_qupath: pixel_size must be None, a finite number of micrometres per pixel \
above 0 or a dict image_id -> such a number, not True
    """
    sizes = list(pixel_size.values()) if isinstance(pixel_size, Mapping) else [pixel_size]
    checks = [
        ("path", path, "a path (str or os.PathLike)", isinstance(path, (str, os.PathLike)) and str(path) != ""),
        ("pixel_size", pixel_size, "None, a finite number of micrometres per pixel above 0 or a dict image_id -> "
         "such a number", pixel_size is None or (bool(sizes) and all(map(is_positive_number, sizes)))),
        ("image_id", image_id, "None or a non-empty text", image_id is None or (isinstance(image_id, str)
                                                                                and image_id != "")),
        ("sample_id", sample_id, "None or a non-empty text", sample_id is None or (isinstance(sample_id, str)
                                                                                  and sample_id != "")),
        ("marker_map", marker_map, "None or a dict tool name -> marker name",
         marker_map is None or isinstance(marker_map, Mapping)),
        ("object_types", object_types, "None or a list of QuPath object types",
         object_types is _ABSENT or object_types is None or (
             isinstance(object_types, Sequence) and not isinstance(object_types, str)
             and all(isinstance(t, str) for t in object_types))),
        *((name, value, "True or False", isinstance(value, (bool, np.bool_))) for name, value in (flags or {}).items()),
    ]
    for name, value, expected, ok in checks:
        if not ok:
            raise argument_error(function, name, value, expected)


def read_export(adapter: ToolAdapter, path: str | os.PathLike) -> CellSpec:
    """Read one export with ``adapter`` through the steps of this module, and refuse the object if its one
    validation fails (a reader bug, never user data: the reader stops on bad input before this)."""
    x, report = read_export_report(adapter, path)
    if not report.ok:
        raise ValidationError(report, context=f"{Path(path).name}: the {adapter.name} reader built an invalid object")
    return x


def read_export_report(adapter: ToolAdapter, path: str | os.PathLike) -> tuple[CellSpec, ValidationReport]:
    """The object read from ``path`` and the report of its one validation, which uses the matrix stats the
    parse gathered (``cellspec import`` hands the report on to the writer; the object remembers it too).

    A gzip-compressed export of a tool that writes them (``adapter.reads_gzip``) is decompressed once into a
    temporary file, its SHA-256 taken from the compressed bytes as they are read (provenance names the file as
    stored). When the adapter refuses the export and the file is another tool's, the refusal names that tool."""
    adapter, path = adapter.located(Path(path))
    if adapter.reads_table_folders and path.is_dir():
        return _read_folder(adapter, path)
    x, stats = _built_export(adapter, path)
    return x, validate(x, stats=stats)


def _built_export(adapter: ToolAdapter, path: Path) -> tuple[CellSpec, MatrixStats | None]:
    """The object read from the export at ``path`` (decompressed first when it is gzip) and its matrix stats, not
    validated yet."""
    with recorded_digests():  # side files are hashed from the bytes their parse reads
        if _is_gzip_export(adapter, path):
            with tempfile.TemporaryDirectory(prefix="cellspec-") as folder:
                plain, digest = decompressed(path, Path(folder))
                return _built(_started(adapter, plain, input_record(path, digest=digest)))
        return _built(_started(adapter, path, None))


def _is_gzip_export(adapter: ToolAdapter, path: Path) -> bool:
    return adapter.reads_gzip and path.is_file() and is_gzip(path)


def _read_folder(adapter: ToolAdapter, folder: Path) -> tuple[CellSpec, ValidationReport]:
    """Every table of a folder of the tool's tables read as the tool's reader reads one (each located first, with
    its side files), then the objects as one (:func:`~cellspec_sc.readers._folder.combined`; for tables of several
    masks, the objects of each mask joined by cell id: :func:`~cellspec_sc.readers._folder.joined_compartments`),
    validated once as a whole, as a steinbock folder's images are."""
    groups = adapter.table_groups(folder_tables(folder, adapter.name))
    tables = [t for group in groups for t in group]
    size = sum(t.stat().st_size for t in tables) // 8  # about a value for every eight bytes of text
    with progress(len(tables), f"reading {len(tables)} {adapter.tool} tables of {folder.name}", unit="tables",
                  size=size) as bar, each_warning_once([t.name for t in tables]):
        parts = []
        with closing(_tables_built(adapter, tables)) as built:  # the parse ahead ends inside the block, always
            for part in built:
                parts.append(part)
                bar.update(1)
    objects, first = [], 0
    for group in groups:
        objects.append(combined(parts[first:first + len(group)], [t.name for t in group]))
        first += len(group)
    x = objects[0] if len(objects) == 1 else joined_compartments(objects, [[t.name for t in g] for g in groups])
    return x, validate(x)


def _tables_built(adapter: ToolAdapter, tables: Sequence[Path]) -> Iterator[CellSpec]:
    """The object of each of ``tables``, in order, each read as :func:`_built_export` reads it, but with the next
    table planned and its parse started before this one's cells are made: pyarrow parses the next table on
    another core while this thread does the Python of this one. Each table's steps run in a context of their own
    (its side files' digests), a refusal of the next table is raised in its turn, and its parse is waited for
    before this ends, whatever happens. Tables of the same features share one dictionary (the folder's object
    takes a copy)."""
    dictionaries: dict[Any, tuple[pd.DataFrame, dict[str, str]]] = {}
    upcoming = _table_begun(adapter, tables[0], dictionaries)
    try:
        for following in [*tables[1:], None]:
            current, upcoming = upcoming, None
            if following is not None:
                upcoming = _table_begun(adapter, following, dictionaries)
            yield current()
    finally:
        if upcoming is not None:
            upcoming.abandon()


class _Begun:
    """A table of a folder whose reading has begun in a context of its own: calling it finishes the object."""

    def __init__(self, context: contextvars.Context, begun: Started | BaseException | Path,
                 adapter: ToolAdapter) -> None:
        self._context, self._begun, self._adapter = context, begun, adapter

    def __call__(self) -> CellSpec:
        begun = self._begun
        if isinstance(begun, BaseException):
            raise begun
        if isinstance(begun, Path):  # gzip: decompressed and read in its turn
            return self._context.run(_built_export, self._adapter, begun)[0]
        return self._context.run(_built, begun)[0]

    def abandon(self) -> None:
        """Wait for the parse this table started (its turn never came: an earlier table was refused)."""
        if isinstance(self._begun, Started) and self._begun.parsing is not None:
            wait([self._begun.parsing])


def _table_begun(adapter: ToolAdapter, table: Path, dictionaries: dict[Any, Any]) -> _Begun:
    """The reading of ``table`` begun in a context of its own (a refusal kept for its turn)."""
    context = contextvars.copy_context()
    try:
        located, path = adapter.located(table)
        if _is_gzip_export(located, path):
            return _Begun(context, path, located)
        context.run(keep_digests)
        return _Begun(context, context.run(_started, located, path, None, folder_table=True,
                                           dictionaries=dictionaries), located)
    except Exception as err:  # noqa: BLE001 - raised in the table's turn, after the tables before it
        return _Begun(context, err, adapter)


@dataclass
class Started:
    """An export planned, its parse perhaps running on another thread (:func:`_started`)."""

    adapter: ToolAdapter
    plan: Plan
    record: dict[str, Any] | None
    parsing: Future[tuple[Parsed, Plan]] | None
    folder_table: bool = False
    """A table of a folder: the folder's object is validated as a whole, which gathers its matrix stats; none are
    gathered for the table."""
    dictionaries: dict[Any, tuple[pd.DataFrame, dict[str, str]]] | None = None
    """Dictionaries of the features already seen (a folder's tables), by features and marker map."""


def _started(adapter: ToolAdapter, path: Path, record: dict[str, Any] | None, *, folder_table: bool = False,
             dictionaries: dict[Any, Any] | None = None) -> Started:
    """``path`` planned, and its parse started on another thread when the export is one of 64 kB to 1 MB
    (:func:`_parse_takes_a_while`) or a ``folder_table`` (parsed while the table before it is made into cells)."""
    with step(f"reading the header of {path.name} ({adapter.name})"):
        plan = planned(adapter, path)
    parsing = None
    if folder_table or _parse_takes_a_while(plan.header):
        parsing = in_background(contextvars.copy_context().run, adapter.parse, plan, name="cellspec-parse")
    return Started(adapter, plan, record, parsing, folder_table, dictionaries)


def _built(started: Started) -> tuple[CellSpec, MatrixStats | None]:
    adapter, plan = started.adapter, started.plan
    with step(f"parsing {plan.header.path.name} ({adapter.name})"):
        parsed, plan, (dictionary, applied) = parsed_with_dictionary(started)
    tables = adapter.tables(plan, parsed, dictionary, applied)
    table = plan.header.path  # the export, or the table a reader chose in a folder (a steinbock folder: itself)
    record = started.record
    if record is None and table.is_file():  # the tables of a steinbock folder are inputs of their own
        record = input_record(table, digest=parsed.file_digest())  # hashed while the adapter made the tables
    x = assemble(adapter, parsed=parsed, dictionary=dictionary, tables=tables, path_record=record)
    stats = None if started.folder_table else image_stats(parsed, x.cells, tables.image_codes)
    # the cell-id codes may still be in the making on another core (and raise the adapter's refusal of repeated
    # ids): the object and its matrix stats were made meanwhile, and validation is handed finished values
    codes = _finished(tables.cell_codes)
    if stats is not None:
        stats.cell_codes = codes
    return x, stats


def parsed_with_dictionary(started: Started) -> tuple[Parsed, Plan, tuple[pd.DataFrame, dict[str, str]]]:
    """The parse :func:`_started` began (else ``adapter.parse(plan)`` now, which hashes a single-file export from
    the bytes it parses), and the dictionary of the plan the parse settled on.

    While another thread parses (pyarrow lets go of the GIL), this one builds the dictionary of the plan's features.
    A refusal of the parse comes first, as when the two ran in turn; a dictionary built for features the parse then
    changed (QuPath's measurement columns found to hold text) is built again for the settled plan, and so is one
    whose building refused the features."""
    adapter, plan, parsing = started.adapter, started.plan, started.parsing
    if parsing is None:  # a thread would cost more than the little it lets overlap
        parsed, settled = adapter.parse(plan)
        return parsed, settled, _dictionary(started, settled)
    try:
        early: tuple[pd.DataFrame, dict[str, str]] | None = _dictionary(started, plan)
    except InputError:
        early = None  # raised again below unless the parse refuses first or settles on other features
    except BaseException:
        wait([parsing])
        raise
    parsed, settled = parsing.result()
    if early is None or (settled is not plan and settled.features != plan.features):
        early = _dictionary(started, settled)
    return parsed, settled, early


def _dictionary(started: Started, plan: Plan) -> tuple[pd.DataFrame, dict[str, str]]:
    """The dictionary of ``plan``'s features (built once for the tables of a folder that measure the same)."""
    marker_map = started.adapter.marker_map
    if started.dictionaries is None:
        return build_dictionary(plan.features, marker_map)
    key = (plan.features, tuple(sorted(marker_map.items())))
    if key not in started.dictionaries:
        started.dictionaries[key] = build_dictionary(plan.features, marker_map)
    return started.dictionaries[key]


# An export from this size on is parsed on another thread while the dictionary is built (pyarrow's parse of a file
# of a few hundred rows already takes longer than the dictionary; of a few rows, less than starting a thread) ...
BACKGROUND_PARSE_BYTES = 1 << 16
# ... up to the size parsed as one piece: a bigger file is parsed in pieces on every core already, which the
# dictionary's Python would only slow down (measured on two cores).
BACKGROUND_PARSE_MAX_BYTES = SMALL_TABLE_BYTES


def _parse_takes_a_while(header: Header) -> bool:
    """Whether ``header``'s file holds :data:`BACKGROUND_PARSE_BYTES` to :data:`BACKGROUND_PARSE_MAX_BYTES` (the
    bytes its header read kept of a small file tell, without asking the file system again; a folder's tables are
    parsed by their adapter, with threads of its own)."""
    if header.contents is not None:
        return BACKGROUND_PARSE_BYTES <= len(header.contents) <= BACKGROUND_PARSE_MAX_BYTES
    try:
        return BACKGROUND_PARSE_BYTES <= header.path.stat().st_size <= BACKGROUND_PARSE_MAX_BYTES and \
            header.path.is_file()
    except OSError:
        return False


def planned(adapter: ToolAdapter, path: Path) -> Plan:
    """``adapter.plan(path)``; a refusal of another tool's export names that tool and its reader instead."""
    try:
        return adapter.plan(path)
    except InputError:
        advice = other_tool_advice(path, adapter.name)
        if advice is None:
            raise
    raise InputError(advice)


# Bytes decompressed at a time.
GZIP_BLOCK = 1 << 22


def decompressed(path: Path, folder: Path) -> tuple[Path, FileDigest]:
    """``path`` (gzip) decompressed into ``folder`` under its name without ``.gz``, and the SHA-256 and size of the
    compressed bytes, hashed as they are read (the file is read once). A damaged file is refused."""
    name = path.name[:-3] if path.name.lower().endswith(".gz") else path.name
    out = folder / name
    digest, size = hashlib.sha256(), 0
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        with open(path, "rb") as source, open(out, "wb") as target:
            while block := source.read(GZIP_BLOCK):
                digest.update(block)
                size += len(block)
                target.write(inflate.decompress(block))
                while inflate.eof and inflate.unused_data:  # a file of several gzip members
                    rest = inflate.unused_data
                    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    target.write(inflate.decompress(rest))
            target.write(inflate.flush())
    except zlib.error as err:
        raise InputError(f"{path.name}: the gzip file is damaged ({err}); decompress it with gunzip to see "
                         "where") from None
    if not inflate.eof:
        raise InputError(f"{path.name}: the gzip file ends early (truncated download?)")
    return out, FileDigest(digest.hexdigest(), size)


def assemble(adapter: ToolAdapter, *, parsed: Parsed, dictionary: pd.DataFrame, tables: Tables,
             path_record: dict[str, Any] | None) -> CellSpec:
    """Build the object with its provenance (not validated: :func:`read_export_report` validates it once)."""
    counts = {"rows_read": parsed.rows_read, "rows_kept": parsed.n, **parsed.counts}
    provenance = new_provenance(
        producer={"tool": adapter.producer, "version": None}, adapter=adapter.name, adapter_version=adapter.version,
        inputs=[*([path_record] if path_record is not None else []),
                *(p if isinstance(p, dict) else input_record(p, digest=recorded_digest(p))
                  for p in tables.extra_inputs)],
        counts=counts,
        parameters={**tables.parameters, **({"recognised_as": chosen} if (chosen := adapter.recognised or
                                                                            RECOGNISED.get()) else {})},
    )
    return CellSpec(  # every table made for this object: handed over, not copied
        spec_version=SPEC_VERSION,
        cells=HandedOver(canonical_frame(tables.cells, "cells")),
        measurements=sealed(np.ascontiguousarray(parsed.matrix, dtype=np.float64)),
        dictionary=HandedOver(dictionary),
        images=HandedOver(canonical_frame(tables.images, "images")),
        channels=HandedOver(tables.channels),
        provenance=provenance,
        adjacency=None if tables.adjacency is None else HandedOver(tables.adjacency),
    )


def _finished(codes: np.ndarray | Future[np.ndarray] | None) -> np.ndarray | None:
    """The cell-id codes, once the background work making them is done (raising what it raised)."""
    return codes.result() if isinstance(codes, Future) else codes


def image_stats(parsed: Parsed, cells: pd.DataFrame, image_codes: tuple[np.ndarray, np.ndarray] | None
                ) -> MatrixStats | None:
    """The parse's matrix stats with ranges per image in validation's order, carrying the image codes the reader
    made (``image_codes``, else made here; validation reuses them); None: validation gathers them."""
    if parsed.stats is None or "image_id" not in cells.columns:
        return None
    known = image_codes
    codes, names = known if known is not None and len(known[0]) == len(cells) else first_seen_codes(cells["image_id"])
    return parsed.stats.for_images(codes, np.asarray(names, dtype=object))
