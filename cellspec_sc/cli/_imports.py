"""``cellspec import``: turn a tool export into a cellspec directory.

    cellspec import qupath    FILE OUT_DIR [--pixel-size UM] [--image-id ID] [--sample-id ID] [--marker OLD=NEW]
    cellspec import mcmicro   FILE OUT_DIR (--pixel-size UM | --image IMAGE) [--markers markers.csv] ...
    cellspec import steinbock FOLDER OUT_DIR [--pixel-size UM] [--aggregation mean] [--no-neighbors] ...
    cellspec import halo      FILE OUT_DIR --pixel-size UM [--image-id ID] [--sample-id ID] [--marker OLD=NEW]
    cellspec import inform    FILE OUT_DIR --pixel-size UM [--position-unit pixels|microns] ...
    cellspec import cellprofiler FILE|FOLDER OUT_DIR --pixel-size UM [--objects Cells] [--compartment cell] ...
    cellspec import auto      PATH OUT_DIR [--pixel-size UM] [--sample-id ID] [--marker OLD=NEW] ...

``auto`` recognises the tool from the file's header line or the folder's layout, says which reader it chose
and refuses an export no reader knows, listing the tools they know. The target is checked first (an existing
OUT_DIR needs ``--overwrite``), then the export is read through the reader pipeline
(:func:`cellspec_sc.readers.read_export_report`), validated once, and written with :func:`cellspec_sc.write`
(which reuses that report); a short summary and the validation verdict are printed. Refused input exits with
status 2 and a message naming file, line and column.
"""

from __future__ import annotations

import argparse

from cellspec_sc.errors import InputError
from cellspec_sc.io import CELLSPEC_DIRECTORY, TargetExists, check_target, write
from cellspec_sc.readers import (
    CellProfilerAdapter,
    HaloAdapter,
    InformAdapter,
    McquantAdapter,
    QuPathAdapter,
    SteinbockAdapter,
    read_export_report,
    recognised_adapter,
)


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


def cmd_import_qupath(args: argparse.Namespace) -> int:
    _check_target(args)
    adapter = QuPathAdapter(pixel_size=args.pixel_size, image_id=args.image_id, sample_id=args.sample_id,
                            marker_map=_marker_map(args.marker), encoding=args.encoding,
                            object_types=None if args.all_objects else tuple(args.object_types))
    return _import(adapter, args.file, args)


def cmd_import_mcmicro(args: argparse.Namespace) -> int:
    _check_target(args)
    adapter = McquantAdapter(pixel_size=args.pixel_size, image_id=args.image_id, sample_id=args.sample_id,
                             marker_map=_marker_map(args.marker), markers_csv=args.markers, image=args.image,
                             strict=args.strict, encoding=args.encoding)
    return _import(adapter, args.file, args)


def cmd_import_steinbock(args: argparse.Namespace) -> int:
    _check_target(args)
    adapter = SteinbockAdapter(pixel_size=args.pixel_size, sample_id=args.sample_id,
                               marker_map=_marker_map(args.marker), aggregation=args.aggregation,
                               neighbors=not args.no_neighbors, neighbors_method=args.neighbors_method,
                               encoding=args.encoding, segmentation=args.segmentation)
    return _import(adapter, args.folder, args)


def cmd_import_halo(args: argparse.Namespace) -> int:
    _check_target(args)
    adapter = HaloAdapter(pixel_size=args.pixel_size, image_id=args.image_id, sample_id=args.sample_id,
                          marker_map=_marker_map(args.marker), encoding=args.encoding)
    return _import(adapter, args.file, args)


def cmd_import_inform(args: argparse.Namespace) -> int:
    _check_target(args)
    adapter = InformAdapter(pixel_size=args.pixel_size, position_unit=args.position_unit, image_id=args.image_id,
                            sample_id=args.sample_id, marker_map=_marker_map(args.marker), encoding=args.encoding)
    return _import(adapter, args.file, args)


def cmd_import_cellprofiler(args: argparse.Namespace) -> int:
    _check_target(args)
    adapter = CellProfilerAdapter(pixel_size=args.pixel_size, objects=args.objects, compartment=args.compartment,
                                  neighbors=not args.no_neighbors, neighbors_method=args.neighbors_method,
                                  sample_id=args.sample_id, marker_map=_marker_map(args.marker),
                                  encoding=args.encoding)
    return _import(adapter, args.file, args)


def cmd_import_auto(args: argparse.Namespace) -> int:
    _check_target(args)
    given = {"pixel_size": args.pixel_size, "image_id": args.image_id, "sample_id": args.sample_id,
             "marker_map": _marker_map(args.marker) or None, "encoding": args.encoding}
    adapter, found = recognised_adapter(args.file, **{k: v for k, v in given.items() if v is not None})
    print(f"{args.file}: recognised as {found.what}; reading with {found.reader}")
    return _import(adapter, args.file, args)


def _common(p: argparse.ArgumentParser, source: str = "file", image_id: bool = True) -> None:
    p.add_argument(source, metavar=source.upper(), help="the tool's export")
    p.add_argument("out_dir", metavar="OUT_DIR", help="cellspec directory to write")
    p.add_argument("--pixel-size", type=float, default=None, metavar="UM", help="micrometres per pixel")
    if image_id:
        p.add_argument("--image-id", default=None, help="image identifier (default: from the file)")
    p.add_argument("--sample-id", default=None, help="sample identifier (default: the image id)")
    p.add_argument("--marker", action="append", metavar="OLD=NEW", help="rename a marker (repeatable)")
    p.add_argument("--format", choices=("parquet", "tsv"), default="parquet", help="cell table format")
    p.add_argument("--overwrite", action="store_true", help="replace an existing cellspec directory")
    p.add_argument("--encoding", default=None, help="text encoding of the export (default: UTF-8, else cp1252)")


def register(p: argparse.ArgumentParser) -> None:
    tools = p.add_subparsers(dest="tool", metavar="TOOL", required=True)

    q = tools.add_parser("qupath", help="QuPath 'Export measurements' table (TSV, or CSV if named .csv)")
    _common(q)
    q.add_argument("--object-types", nargs="+", default=["Cell", "Detection"], metavar="TYPE",
                   help="keep rows of these Object type values (default: Cell Detection)")
    q.add_argument("--all-objects", action="store_true", help="keep every row whatever its Object type")
    q.set_defaults(func=cmd_import_qupath)

    m = tools.add_parser("mcmicro", help="MCMICRO mcquant table (<image>--<segmentation>_<mask>.csv)")
    _common(m)
    m.add_argument("--markers", default=None, metavar="CSV", help="MCMICRO markers.csv (channel order and names)")
    m.add_argument("--image", default=None, metavar="IMAGE",
                   help="OME-TIFF (or .ome.xml) to read PhysicalSizeX and the image size from")
    m.add_argument("--strict", action="store_true",
                   help="refuse a markers.csv that does not fit the table (names none or only part of the marker "
                        "columns, channels without a column, names in quotes the columns lack)")
    m.set_defaults(func=cmd_import_mcmicro)

    s = tools.add_parser("steinbock", help="steinbock output folder (intensities/, regionprops/, neighbors/, "
                                           "panel.csv, images.csv)")
    _common(s, source="folder", image_id=False)
    s.add_argument("--aggregation", default=None, choices=("mean", "median", "sum", "min", "max", "std", "var"),
                   help="the --aggr steinbock measured intensities with (default: mean, with a warning: the tables "
                        "do not say)")
    s.add_argument("--no-neighbors", action="store_true", help="do not turn the CSV files of neighbors/ into adjacency")
    s.add_argument("--neighbors-method", default=None,
                   choices=("mask_touching", "polygon_intersection", "delaunay", "borders", "expansion", "centroids"),
                   help="how the neighbours were measured: an adjacency method, or steinbock's --type (borders, "
                        "expansion, centroids: left out); default mask_touching, with a warning")
    s.add_argument("--segmentation", default=None, metavar="SUBFOLDER",
                   help="the sub-folder whose tables to read when several hold them (e.g. deepcell)")
    s.set_defaults(func=cmd_import_steinbock)

    h = tools.add_parser("halo", help="HALO object data table (CSV: Object Id, XMin/XMax/YMin/YMax, ...)")
    _common(h)
    h.set_defaults(func=cmd_import_halo)

    i = tools.add_parser("inform", help="inForm cell_seg_data.txt (tab-separated, Cell X Position, ...)")
    _common(i)
    i.add_argument("--position-unit", choices=("pixels", "microns"), default=None,
                   help="unit of Cell X/Y Position when no header names it")
    i.set_defaults(func=cmd_import_inform)

    c = tools.add_parser("cellprofiler", help="CellProfiler ExportToSpreadsheet object table (Cells.csv) or its "
                                              "folder")
    _common(c, image_id=False)
    c.add_argument("--objects", default=None, help="object set to read when the folder has several (e.g. Cells)")
    c.add_argument("--compartment", default=None, choices=("cell", "nucleus", "cytoplasm", "membrane"),
                   help="compartment of the objects' measurements (default: from the object name)")
    c.add_argument("--no-neighbors", action="store_true", help="do not turn Neighbors relationships into adjacency")
    c.add_argument("--neighbors-method", default=None,
                   choices=("mask_touching", "polygon_intersection", "delaunay"),
                   help="adjacency method when the table has no Neighbors_*_<method> column to say it")
    c.set_defaults(func=cmd_import_cellprofiler)

    a = tools.add_parser("auto", help="any export the readers know: the tool is recognised from the file's header "
                                      "line or the folder's layout")
    _common(a)
    a.set_defaults(func=cmd_import_auto)
