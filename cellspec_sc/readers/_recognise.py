"""Which tool wrote an export: the signatures of every tool the readers know, as data, and the one function that
looks at a file's header line (or a folder's layout) and names the tool.

:func:`recognise` is what :func:`~cellspec_sc.readers.read_export` uses to choose a reader, and what every
reader asks when it refuses a file, so that a HALO table given to ``read_qupath`` is told to use ``read_halo``
instead of being given QuPath's advice. Only the first line of a file is read (64 kB at most, gzip decompressed
on the way), so recognising costs nothing next to a parse.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "objects.csv").write_text("\\ufeffImage Location,Object Id,XMin,XMax,YMin,YMax,DAPI Intensity\\n")
>>> recognise(folder / "objects.csv").key
'halo'
>>> recognise(folder / "objects.csv").reader
'read_halo'
>>> _ = (folder / "notes.csv").write_text("a,b\\n1,2\\n")
>>> recognise(folder / "notes.csv") is None
True
"""

from __future__ import annotations

import csv
import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cellspec_sc.errors import InputError
from cellspec_sc.readers._table import listed, normalise_header


@dataclass(frozen=True)
class Signature:
    """What one tool's export looks like: every group of ``columns`` (alternatives, matched case-insensitively after
    :func:`~cellspec_sc.readers._table.normalise_header`) has a column in the header line."""

    key: str
    """The reader's name without ``read_`` (``cellspec import <key>``)."""
    tool: str
    what: str
    """What the file is, for messages ("a HALO object table")."""
    columns: tuple[tuple[str, ...], ...]
    also: tuple[tuple[tuple[str, ...], ...], ...] = ()
    """Other sets of column groups that name the tool too: an export its reader refuses with advice of its own (a
    QuPath export without centroid columns is told to export them, not that no reader knows it)."""

    @property
    def reader(self) -> str:
        return f"read_{self.key}"

    def matches(self, names: set[str]) -> bool:
        """Whether the header (``names``: its columns as :func:`_key` writes them) has a column of every group of
        ``columns``, or of every group of one of the sets in ``also``.

        >>> BY_KEY["qupath"].matches({"image", "name", "class", "parent", "roi", "nucleus: dapi mean"})
        True
        """
        return any(all(any(_key(c) in names for c in alternatives) for alternatives in groups)
                   for groups in (self.columns, *self.also))


def _key(name: str) -> str:
    return normalise_header(name).lower()


# Tried in this order: HALO's ``Object Id`` is QuPath's ``Object ID`` ignoring case, so HALO (with its bounding box)
# comes first; a steinbock table (``Object``) last, since other tools may carry an ``Object`` column too.
SIGNATURES: tuple[Signature, ...] = (
    Signature("halo", "HALO", "a HALO object table", (("Object Id",), ("XMin",), ("XMax",), ("YMin",), ("YMax",))),
    Signature("inform", "inForm", "an inForm cell_seg_data table", (("Cell X Position",), ("Cell Y Position",))),
    Signature("cellprofiler", "CellProfiler", "a CellProfiler object table (ExportToSpreadsheet)",
              (("ImageNumber",), ("ObjectNumber",))),
    Signature("qupath", "QuPath", "a QuPath measurement export",
              (("Centroid X µm", "Centroid X px"), ("Centroid Y µm", "Centroid Y px")),
              also=((("Image",), ("Name",), ("Classification", "Class"), ("Parent",), ("ROI",)),)),
    Signature("mcmicro", "MCMICRO", "an MCMICRO mcquant table",
              (("CellID",), ("X_centroid", "column_centroid", "Y_position"))),
    Signature("steinbock", "steinbock", "a table of a steinbock output folder", (("Object",),)),
)
BY_KEY = {s.key: s for s in SIGNATURES}
# Sub-folders of a steinbock output folder that hold one table per image, in the layouts steinbock has written.
STEINBOCK_TABLES = ("intensities", "cell_intensities")

# Bytes read from the start of a file for its header line.
HEADER_SAMPLE = 1 << 16
# The first bytes of every gzip file.
GZIP_MAGIC = b"\x1f\x8b"


def known_tools() -> str:
    """The tools the readers know, for messages.

    >>> known_tools()
    'HALO (read_halo), inForm (read_inform), CellProfiler (read_cellprofiler), QuPath (read_qupath), MCMICRO \
(read_mcmicro), steinbock (read_steinbock)'
    """
    return ", ".join(f"{s.tool} ({s.reader})" for s in SIGNATURES)


def recognise(path: str | os.PathLike) -> Signature | None:
    """The tool whose export ``path`` is (a file by its header line, a folder by its layout), or None."""
    path = Path(path)
    try:
        if path.is_dir():
            return _recognise_folder(path)
        if path.is_file():
            return recognise_header(header_names(path))
    except OSError:
        return None
    return None


def recognise_header(names: Sequence[str]) -> Signature | None:
    """The tool whose header line is ``names``, or None.

    >>> recognise_header(["ImageNumber", "ObjectNumber", "Location_Center_X"]).tool
    'CellProfiler'
    """
    keys = {_key(n) for n in names}
    return next((s for s in SIGNATURES if s.matches(keys)), None)


def header_names(path: Path) -> list[str]:
    """The column names of the first line of ``path`` (decompressed when it is gzip; UTF-8 byte order mark
    dropped; the separator the line holds most of: tab, comma or semicolon). Empty when no line is readable."""
    with open(path, "rb") as handle:
        start = handle.read(HEADER_SAMPLE)
    if start.startswith(GZIP_MAGIC):
        try:
            start = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(start, HEADER_SAMPLE)
        except zlib.error:
            return []
    line = start.split(b"\n", 1)[0].rstrip(b"\r")
    if b"\x00" in line:
        return []
    text = line.decode("utf-8", errors="replace").lstrip("\ufeff")
    delimiter = max("\t,;", key=text.count)
    try:
        return [n.strip() for n in next(csv.reader([text], delimiter=delimiter), [])]
    except csv.Error:  # a bare carriage return inside the line: no header the readers read
        return []


def _recognise_folder(folder: Path) -> Signature | None:
    if steinbock_table_folders(folder):
        return BY_KEY["steinbock"]
    tables = tables_by_tool(folder)  # every file's header line looked at once
    if _csv_only(tables.get("cellprofiler", [])):
        return BY_KEY["cellprofiler"]
    if tables.get("mcmicro") or tables_by_tool(folder / MCMICRO_TABLES).get("mcmicro"):
        return BY_KEY["mcmicro"]
    if len(tables) == 1 and next(iter(tables)) in TABLE_FOLDER_TOOLS:
        return BY_KEY[next(iter(tables))]
    return None


def steinbock_table_folders(folder: Path) -> list[Path]:
    """The folders of per-image tables under a steinbock output folder: ``intensities/`` (or the early layout's
    ``cell_intensities/``) in it, or in one of its sub-folders (a segmentation's, as ``deepcell/intensities``)."""
    direct = [folder / name for name in STEINBOCK_TABLES if (folder / name).is_dir()]
    if direct:
        return direct
    try:
        children = sorted(c for c in folder.iterdir() if c.is_dir())
    except OSError:
        return []
    return [c / name for c in children for name in STEINBOCK_TABLES if (c / name).is_dir()]


def cellprofiler_object_tables(folder: Path) -> list[Path]:
    """The CSV files of a folder whose header is a CellProfiler object table (``ImageNumber``, ``ObjectNumber``)."""
    return _csv_only(tables_by_tool(folder).get("cellprofiler", []))


def _csv_only(paths: list[Path]) -> list[Path]:
    """The ``.csv`` files of ``paths`` (ExportToSpreadsheet's object tables, as the CellProfiler reader reads them)."""
    return [p for p in paths if p.name.endswith(".csv")]


# The sub-folder of an MCMICRO project folder that holds the mcquant tables.
MCMICRO_TABLES = "quantification"


def mcquant_tables(folder: Path) -> list[Path]:
    """The mcquant tables of an MCMICRO project folder's ``quantification/`` folder, or of ``folder`` itself when
    it holds them (it is that folder)."""
    for place in (folder / MCMICRO_TABLES, folder):
        tables = tables_by_tool(place).get("mcmicro", [])
        if tables:
            return tables
    return []


def is_gzip(path: Path) -> bool:
    """Whether the file at ``path`` starts with the gzip magic bytes."""
    try:
        with open(path, "rb") as handle:
            return handle.read(2) == GZIP_MAGIC
    except OSError:
        return False


# Names of the files of a folder that may be one table each of a single-table tool.
TABLE_SUFFIXES = (".csv", ".tsv", ".txt", ".csv.gz", ".tsv.gz", ".txt.gz")
# The tools whose readers read a folder of one table per image or field as one object (inForm's batch export
# writes a cell_seg_data.txt per field; HALO and QuPath a table per image when asked).
TABLE_FOLDER_TOOLS = ("halo", "inform", "qupath")


def tables_by_tool(folder: Path) -> dict[str, list[Path]]:
    """The files of ``folder`` (not of its sub-folders) recognised by their header line as a tool's export table, by
    tool key, in name order."""
    try:
        children = sorted(c for c in folder.iterdir() if c.name.lower().endswith(TABLE_SUFFIXES))
    except OSError:
        return {}
    out: dict[str, list[Path]] = {}
    for child in children:
        found = _tool_of(child)
        if found is not None:
            out.setdefault(found.key, []).append(child)
    return out


def _tool_of(path: Path) -> Signature | None:
    """The tool whose table the regular file ``path`` is, by its header line (None: not a regular file, unreadable,
    or no tool's)."""
    try:
        return recognise_header(header_names(path)) if path.is_file() else None
    except OSError:
        return None


def folder_tables(folder: Path, key: str) -> list[Path]:
    """The tables of the folder of one table per image of the tool ``key`` (a :data:`TABLE_FOLDER_TOOLS` tool), in name
    order; refuses a folder of another tool's export (naming its reader), of tables of several tools, or without
    one table of the tool."""
    tables = tables_by_tool(folder)
    if list(tables) == [key]:
        return tables[key]
    advice = other_tool_advice(folder, key)
    if advice is not None:
        raise InputError(advice)
    tool = BY_KEY[key]
    if len(tables) > 1:
        held = "; ".join(f"{BY_KEY[k].tool}: {listed([p.name for p in v], most=3)}" for k, v in tables.items())
        raise InputError(f"{folder.name}: a folder of tables of several tools ({held}); {tool.reader} reads a folder "
                         f"of {tool.tool} tables only: pass one table, or a folder of them")
    raise InputError(f"{folder.name}: no {tool.tool} table in the folder (a file whose header line is "
                     f"{tool.what}'s); pass the export table, or a folder of them")


def other_tool_advice(path: Path, reader_key: str) -> str | None:
    """What to say when the reader ``reader_key`` refuses ``path`` and the file is another tool's export (None: it
    is not, or it is this reader's own)."""
    found = recognise(path)
    if found is None or found.key == reader_key:
        return None
    if found.key == "steinbock" and not path.is_dir():
        return (f"{path.name}: this looks like {found.what} (one image's table): use read_steinbock on the output "
                "folder (`cellspec import steinbock FOLDER OUT`), not on one of its files")
    what = what_it_is(found, path)
    return (f"{path.name}: this looks like {what}, not an export of {BY_KEY[reader_key].tool}: use "
            f"{found.reader} (`cellspec import {found.key} ...`)")


# What a folder recognised as a tool's output is, for messages.
FOLDER_WHAT = {"steinbock": "a steinbock output folder", "cellprofiler": "a CellProfiler ExportToSpreadsheet folder",
               "mcmicro": "an MCMICRO project folder", "halo": "a folder of HALO object tables",
               "inform": "a folder of inForm cell_seg_data tables", "qupath": "a folder of QuPath measurement exports"}


def what_it_is(found: Signature, path: Path) -> str:
    """What ``path``, recognised as ``found``'s, is, for messages: the tool's table, or its output folder."""
    return FOLDER_WHAT.get(found.key, found.what) if path.is_dir() else found.what


__all__ = ["BY_KEY", "SIGNATURES", "Signature", "cellprofiler_object_tables", "header_names", "is_gzip",
           "folder_tables", "known_tools", "mcquant_tables", "other_tool_advice", "recognise",
           "recognise_header", "steinbock_table_folders", "tables_by_tool", "what_it_is"]
