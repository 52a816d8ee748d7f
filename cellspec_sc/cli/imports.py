"""``cellspec import``: turn a tool export into a cellspec directory.

    cellspec import qupath  FILE OUT_DIR [--pixel-size UM] [--image-id ID] [--sample-id ID] [--marker OLD=NEW]
    cellspec import mcmicro FILE OUT_DIR (--pixel-size UM | --image IMAGE) [--markers markers.csv] ...

The object is read with :func:`cellspec_sc.read_qupath` / :func:`cellspec_sc.read_mcmicro` and written
with :func:`cellspec_sc.write`; a short summary and the validation verdict are printed. Refused input
exits with status 2 and a message naming file, line and column.
"""

from __future__ import annotations

import argparse

from cellspec_sc.errors import InputError
from cellspec_sc.io.publish import CELLSPEC_DIRECTORY, check_target


def _marker_map(pairs: list[str] | None) -> dict[str, str]:
    out = {}
    for pair in pairs or []:
        old, sep, new = pair.partition("=")
        if not sep or not old.strip():
            raise InputError(f"--marker {pair!r}: expected OLD=NEW")
        out[old.strip()] = new
    return out


def _write_and_report(x, args: argparse.Namespace) -> int:
    from cellspec_sc.io.directory import write
    from cellspec_sc.validation.runner import validate

    path = write(x, args.out_dir, format=args.format, overwrite=args.overwrite)
    report = validate(x)
    counts = x.provenance["counts"]
    print(f"wrote {path}: {x.n_cells} cells, {len(x.feature_ids)} features, {len(x.images)} image(s); "
          f"rows read {counts['rows_read']}, kept {counts['rows_kept']}, NaN->NA {counts['na_converted']}, "
          f"inf->NA {counts['nonfinite_converted']}")
    warnings = [r.name for r in report.warnings]
    print("validation: ok" + (f" (warnings: {', '.join(warnings)})" if warnings else ""))
    return 0


def _check_out_dir(args: argparse.Namespace) -> None:
    """Refuse OUT_DIR before the export is read, however big it is."""
    check_target(args.out_dir, CELLSPEC_DIRECTORY, overwrite=args.overwrite)


def cmd_import_qupath(args: argparse.Namespace) -> int:
    from cellspec_sc.readers.qupath import read_qupath

    _check_out_dir(args)
    x = read_qupath(args.file, pixel_size=args.pixel_size, image_id=args.image_id, sample_id=args.sample_id,
                    marker_map=_marker_map(args.marker),
                    object_types=None if args.all_objects else tuple(args.object_types))
    return _write_and_report(x, args)


def cmd_import_mcmicro(args: argparse.Namespace) -> int:
    from cellspec_sc.readers.mcmicro import read_mcmicro

    _check_out_dir(args)
    x = read_mcmicro(args.file, pixel_size=args.pixel_size, image_id=args.image_id, sample_id=args.sample_id,
                     marker_map=_marker_map(args.marker), markers_csv=args.markers, image=args.image)
    return _write_and_report(x, args)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="the tool's export")
    p.add_argument("out_dir", metavar="OUT_DIR", help="cellspec directory to write")
    p.add_argument("--pixel-size", type=float, default=None, metavar="UM", help="micrometres per pixel")
    p.add_argument("--image-id", default=None, help="image identifier (default: from the file)")
    p.add_argument("--sample-id", default=None, help="sample identifier (default: the image id)")
    p.add_argument("--marker", action="append", metavar="OLD=NEW", help="rename a marker (repeatable)")
    p.add_argument("--format", choices=("parquet", "tsv"), default="parquet", help="cell table format")
    p.add_argument("--overwrite", action="store_true", help="replace an existing cellspec directory")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="import a QuPath or MCMICRO export into a cellspec directory")
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
    m.set_defaults(func=cmd_import_mcmicro)
