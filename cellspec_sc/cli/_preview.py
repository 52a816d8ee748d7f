"""``cellspec preview SOURCE -o report.html``: the notebook preview as a standalone HTML snapshot.

The page opens in any browser without Jupyter, a kernel or internet access
(images are embedded, nothing is loaded from a CDN).

>>> import tempfile, pathlib
>>> from cellspec_sc.cli.main import main
>>> out = pathlib.Path(tempfile.mkdtemp()) / "report.html"
>>> main(["preview", "example", "-o", str(out), "--max-features", "2"])
0
>>> out.read_text().startswith("<!DOCTYPE html>")
True
"""

from __future__ import annotations

import argparse
import sys

from cellspec_sc.cli._images import add_image_options, image_paths
from cellspec_sc.cli._sources import load
from cellspec_sc.errors import InputError
from cellspec_sc.io import HTML_FILE, PNG_FILE, check_target
from cellspec_sc.progress import step
from cellspec_sc.widgets import preview


def cmd_preview(args: argparse.Namespace) -> int:
    check_target(args.output, HTML_FILE, overwrite=True)  # before SOURCE is read; only our kind is replaced
    if args.png:
        check_target(args.png, PNG_FILE, overwrite=True)
    images, bare = image_paths(args.image, allow_bare=True)
    if len(bare) > 1:
        raise InputError(f"--image without =PATH selects the image shown; given {len(bare)}: {', '.join(bare)}")
    x = load(args.source)
    selected = bare[0] if bare else (next(iter(images)) if images else None)
    w = preview(x, image=selected, feature=args.feature, images=images, channels=args.channels,
                region=args.region, verify=not args.no_verify)
    if args.colour_by:
        w.select(colour_by=args.colour_by)
    if args.log:
        w.select(scale="log")
    features = "all" if args.features == ["all"] else args.features
    with step(f"writing the preview {args.output}"):
        out = w.save_html(args.output, features=features, max_features=args.max_features)
    print(f"wrote {out}", file=sys.stderr)
    if args.png:
        with step(f"drawing the preview PNG {args.png}"):
            png = w.save_png(args.png)
        print(f"wrote {png}", file=sys.stderr)
    return 0


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", help="a cellspec directory, a supported file, or 'example'")
    p.add_argument("-o", "--output", required=True,
                   help="HTML file to write, e.g. report.html (an HTML file there is replaced, anything else refused)")
    add_image_options(p, also_selects=True)
    p.add_argument("--channels", nargs="+", default=None, metavar="CHANNEL",
                   help="channels of the composite drawn under the cells (at most six; default the first three)")
    p.add_argument("--region", type=float, nargs=4, default=None, metavar=("X0", "Y0", "X1", "Y1"),
                   help="zoom the image panels into this box, in micrometres")
    p.add_argument("--feature", default=None, help="feature_id selected first (default: the first)")
    p.add_argument("--features", nargs="+", default=None, metavar="FEATURE_ID",
                   help="feature ids to embed, or 'all' (default: the selected one, then dictionary order)")
    p.add_argument("--max-features", type=int, default=24,
                   help="how many features to embed when --features is not given (default 24)")
    p.add_argument("--colour-by", default=None,
                   help="'feature', 'density' or a categorical cells column such as classification")
    p.add_argument("--log", action="store_true", help="log-scaled histograms")
    p.add_argument("--png", default=None, help="also write the current view as PNG (replaces a PNG file only)")
    p.set_defaults(func=cmd_preview)
