"""``cellspec import``: turn a tool export into a cellspec directory.

    cellspec import qupath    FILE|FOLDER OUT_DIR [--pixel-size UM] [--image-id ID] [--sample-id ID] [--marker OLD=NEW]
    cellspec import mcmicro   FILE|FOLDER OUT_DIR [--pixel-size UM | --image IMAGE] [--markers markers.csv] ...
    cellspec import steinbock FOLDER OUT_DIR [--pixel-size UM] [--aggregation mean] [--no-neighbors] ...
    cellspec import halo      FILE|FOLDER OUT_DIR --pixel-size UM [--image-id ID] [--sample-id ID] [--marker OLD=NEW]
    cellspec import inform    FILE|FOLDER OUT_DIR --pixel-size UM [--position-unit pixels|microns] ...
    cellspec import cellprofiler FILE|FOLDER OUT_DIR --pixel-size UM [--objects Cells] [--compartment cell] ...
    cellspec import auto      PATH OUT_DIR [--pixel-size UM] [--sample-id ID] [any option of the tools above] ...

``auto`` recognises the tool from the file's header line or the folder's layout, says which reader it chose
and refuses an export no reader knows, listing the tools they know; it takes every tool's options (:data:`FLAGS`,
each defined once) and refuses those the recognised tool's command does not take. The target is checked first (an
existing OUT_DIR needs ``--overwrite``), then the export is read through the reader pipeline
(:func:`cellspec_sc.readers.read_export_report`), validated once, and written with :func:`cellspec_sc.write`
(which reuses that report); a short summary and the validation verdict are printed. Refused input exits with
status 2 and a message naming file, line and column.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cellspec_sc.errors import InputError
from cellspec_sc.io import CELLSPEC_DIRECTORY, TargetExists, check_target, write
from cellspec_sc.readers import adapter_for, read_export_report, recognised_reader, tool_adapter, what_it_is
from cellspec_sc.spec import vocabulary


def _marker_map(pairs: list[str] | None) -> dict[str, str]:
    out = {}
    for pair in pairs or []:
        old, sep, new = pair.partition("=")
        if not sep or not old.strip():
            raise InputError(f"--marker {pair!r}: expected OLD=NEW")
        out[old.strip()] = new
    return out


def _check_target(args: argparse.Namespace) -> None:
    """Refuse OUT_DIR before the export is read, however big it is, in the CLI's own words (``--overwrite``)."""
    try:
        check_target(args.out_dir, CELLSPEC_DIRECTORY, overwrite=args.overwrite)
    except TargetExists as err:
        detail = err.detail.replace("overwrite=True (CLI: --overwrite)", "--overwrite")
        raise InputError(f"{err.directory}: {detail}") from None


def _import(adapter, source: str, args: argparse.Namespace) -> int:
    """Read ``source`` with ``adapter`` (validated once), refuse an invalid object, write with its report."""
    x, report = read_export_report(adapter, source)
    report.raise_if_failed(f"{source}: the {adapter.name} reader built an invalid object")
    path = write(x, args.out_dir, format=args.format, overwrite=args.overwrite, report=report)
    counts = x.provenance["counts"]
    print(f"wrote {path}: {x.n_cells} cells, {len(x.feature_ids)} features, {len(x.images)} image(s); "
          f"rows read {counts['rows_read']}, kept {counts['rows_kept']}, NaN->NA {counts['na_converted']}, "
          f"inf->NA {counts['nonfinite_converted']}")
    warnings = [r.name for r in report.warnings]
    print("validation: ok" + (f" (warnings: {', '.join(warnings)})" if warnings else ""))
    return 0


@dataclass(frozen=True)
class ToolFlag:
    """A command-line option of one or more tools' readers: its flag, the reader's keyword it sets, what argparse needs
    (``default`` is never given: an option not given leaves the reader's own default) and how its value becomes the
    keyword's (``given``)."""

    flag: str
    keyword: str
    argparse: dict[str, Any]
    given: Callable[[Any], Any] = lambda value: value  # noqa: E731 - the value as given

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")


# The values of tools' options that are tools' words, not the spec's (a test checks them against each tool's plan;
# importing the plans here would import every reader to parse a command line).
STEINBOCK_AGGREGATIONS = ("mean", "median", "sum", "min", "max", "std", "var")
STEINBOCK_NEIGHBOR_TYPES = ("borders", "expansion", "centroids")
INFORM_POSITION_UNITS = ("pixels", "microns")

# Every tool's own options, each defined once: a tool's command takes its own, ``auto`` takes them all and refuses
# those of the tools it did not recognise.
FLAGS = {flag.flag: flag for flag in (
    ToolFlag("--object-types", "object_types", {"nargs": "+", "metavar": "TYPE",
             "help": "keep rows of these Object type values (default: Cell Detection)"}, tuple),
    ToolFlag("--all-objects", "object_types", {"action": "store_const", "const": True,
             "help": "keep every row whatever its Object type"}, lambda _: None),
    ToolFlag("--markers", "markers_csv", {"metavar": "CSV", "help": "MCMICRO markers.csv (channel order and names)"}),
    ToolFlag("--image", "image", {"metavar": "IMAGE",
             "help": "OME-TIFF (or .ome.xml) to read PhysicalSizeX and the image size from"}),
    ToolFlag("--strict", "strict", {"action": "store_const", "const": True,
             "help": "refuse a markers.csv that does not fit the table (names none or only part of the marker "
                     "columns, channels without a column, names in quotes the columns lack)"}),
    ToolFlag("--aggregation", "aggregation", {"choices": STEINBOCK_AGGREGATIONS,
             "help": "the --aggr steinbock measured intensities with (default: mean, with a warning: the tables do "
                     "not say)"}),
    ToolFlag("--no-neighbors", "neighbors", {"action": "store_const", "const": True,
             "help": "do not turn the neighbour tables (steinbock's neighbors/, CellProfiler's Neighbors "
                     "relationships) into adjacency"}, lambda _: False),
    ToolFlag("--neighbors-method", "neighbors_method", {
             "choices": (*vocabulary().adjacency_methods, *STEINBOCK_NEIGHBOR_TYPES),
             "help": "how the neighbours were measured: an adjacency method (CellProfiler: when the table has no "
                     "Neighbors_*_<method> column to say it), or steinbock's --type (borders, expansion, centroids: "
                     "left out); steinbock's default is mask_touching, with a warning"}),
    ToolFlag("--segmentation", "segmentation", {"metavar": "SUBFOLDER",
             "help": "the sub-folder whose tables to read when several hold them (e.g. deepcell)"}),
    ToolFlag("--position-unit", "position_unit", {"choices": INFORM_POSITION_UNITS,
             "help": "unit of Cell X/Y Position when no header names it"}),
    ToolFlag("--objects", "objects", {"help": "object set to read when the folder has several (e.g. Cells)"}),
    ToolFlag("--compartment", "compartment", {"choices": vocabulary().compartments,
             "help": "compartment of the objects' measurements (default: from the object name)"}),
)}
TOOL_FLAGS = {
    "qupath": ("--object-types", "--all-objects"),
    "mcmicro": ("--markers", "--image", "--strict"),
    "steinbock": ("--aggregation", "--no-neighbors", "--neighbors-method", "--segmentation"),
    "halo": (),
    "inform": ("--position-unit",),
    "cellprofiler": ("--objects", "--compartment", "--no-neighbors", "--neighbors-method"),
}


def _common_options(args: argparse.Namespace) -> dict[str, Any]:
    """The reader keywords of the options every import takes (those given)."""
    given = {"pixel_size": args.pixel_size, "image_id": getattr(args, "image_id", None),
             "sample_id": args.sample_id, "marker_map": _marker_map(args.marker) or None, "encoding": args.encoding}
    return {keyword: value for keyword, value in given.items() if value is not None}


def _tool_options(args: argparse.Namespace, flags: Sequence[str]) -> dict[str, Any]:
    """The reader keywords of the tool options among ``flags`` that were given."""
    out = {}
    for flag in (FLAGS[f] for f in flags):
        value = getattr(args, flag.dest, None)
        if value is not None:
            out[flag.keyword] = flag.given(value)
    return out


def _given_flags(args: argparse.Namespace) -> list[str]:
    return [flag for flag, spec in FLAGS.items() if getattr(args, spec.dest, None) is not None]


def _foreign_flags(args: argparse.Namespace, tool: str) -> list[str]:
    """The options given that ``cellspec import <tool>`` does not take."""
    image_id = ["--image-id"] if tool in WITHOUT_IMAGE_ID and getattr(args, "image_id", None) is not None else []
    return image_id + [flag for flag in _given_flags(args) if flag not in TOOL_FLAGS[tool]]


def cmd_import_tool(args: argparse.Namespace) -> int:
    """``cellspec import <tool>``: the tool's adapter with the options given."""
    _check_target(args)
    adapter = tool_adapter(args.tool, **_common_options(args), **_tool_options(args, TOOL_FLAGS[args.tool]))
    return _import(adapter, args.source, args)


def cmd_import_auto(args: argparse.Namespace) -> int:
    _check_target(args)
    found, _, source = recognised_reader(args.source, {})  # recognised once; refused when no reader knows it
    foreign = _foreign_flags(args, found.key)
    if foreign:  # an option of another tool, in the CLI's words
        raise InputError(f"{args.source}: recognised as {what_it_is(found, Path(args.source))}, which "
                         f"`cellspec import {found.key}` reads; it takes no {', '.join(foreign)}")
    adapter = adapter_for(found, source, {**_common_options(args), **_tool_options(args, _given_flags(args))})
    print(f"{args.source}: recognised as {what_it_is(found, Path(args.source))}; reading with {found.reader}")
    return _import(adapter, args.source, args)


def _common(p: argparse.ArgumentParser, source: str = "file", image_id: bool = True) -> None:
    p.add_argument("source", metavar=source.upper(), help="the tool's export")
    p.add_argument("out_dir", metavar="OUT_DIR", help="cellspec directory to write")
    p.add_argument("--pixel-size", type=float, default=None, metavar="UM", help="micrometres per pixel")
    if image_id:
        p.add_argument("--image-id", default=None, help="image identifier (default: from the file)")
    p.add_argument("--sample-id", default=None, help="sample identifier (default: the image id)")
    p.add_argument("--marker", action="append", metavar="OLD=NEW", help="rename a marker (repeatable)")
    p.add_argument("--format", choices=("parquet", "tsv"), default="parquet", help="cell table format")
    p.add_argument("--overwrite", action="store_true", help="replace an existing cellspec directory")
    p.add_argument("--encoding", default=None, help="text encoding of the export (default: UTF-8, else cp1252)")


def _add_flags(p: argparse.ArgumentParser, flags: Sequence[str]) -> None:
    for flag in (FLAGS[f] for f in flags):
        p.add_argument(flag.flag, dest=flag.dest, default=None, **flag.argparse)


TOOL_HELP = {
    "qupath": ("file", "QuPath 'Export measurements' table (TSV, or CSV if named .csv), or a folder of them"),
    "mcmicro": ("file", "MCMICRO mcquant table (<image>--<segmentation>_<mask>.csv), or the project folder that "
                "holds it (markers.csv and registration/<image>.ome.tif are taken from it unless given)"),
    "steinbock": ("folder", "steinbock output folder (intensities/, regionprops/, neighbors/, panel.csv, images.csv)"),
    "halo": ("file", "HALO object data table (CSV: Object Id, XMin/XMax/YMin/YMax, ...), or a folder of them"),
    "inform": ("file", "inForm cell_seg_data.txt (tab-separated, Cell X Position, ...), or a folder of them (a "
               "batch export: one per field)"),
    "cellprofiler": ("file", "CellProfiler ExportToSpreadsheet object table (Cells.csv) or its folder"),
}
# the tools whose reader takes no image_id (the image ids come from the folder or the per-image table)
WITHOUT_IMAGE_ID = ("steinbock", "cellprofiler")


def register(p: argparse.ArgumentParser) -> None:
    tools = p.add_subparsers(dest="tool", metavar="TOOL", required=True)
    for tool, (source, help_text) in TOOL_HELP.items():
        command = tools.add_parser(tool, help=help_text)
        _common(command, source=source, image_id=tool not in WITHOUT_IMAGE_ID)
        _add_flags(command, TOOL_FLAGS[tool])
        command.set_defaults(func=cmd_import_tool)
    a = tools.add_parser("auto", help="any export the readers know: the tool is recognised from the file's header "
                                      "line or the folder's layout; the options of every tool are taken, and those "
                                      "of another tool than the one recognised are refused")
    _common(a, source="path")
    _add_flags(a, list(FLAGS))
    a.set_defaults(func=cmd_import_auto)
