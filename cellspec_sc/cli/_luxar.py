"""``cellspec luxar``: compile a cellspec directory or an ``.h5ad`` into a Luxar scene, optionally serve it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cellspec_sc.bridges.anndata import is_anndata_zarr, is_h5ad, read_anndata
from cellspec_sc.bridges.luxar import LUXAR_SCENE, scene_path, to_luxar
from cellspec_sc.cli._images import add_image_options, image_paths
from cellspec_sc.cli._sources import load
from cellspec_sc.cli._view import add_serve_options, serve
from cellspec_sc.errors import MissingPath
from cellspec_sc.io import check_target
from cellspec_sc.progress import step


def load_for_scene(source: str) -> Any:
    """An ``.h5ad`` file or an AnnData ``.zarr`` store is read as AnnData (so its obsm embeddings and scanpy's
    colours in uns stay available); everything else goes through :func:`cellspec_sc.cli._sources.load`."""
    if source.lower().endswith(".h5ad") and not Path(source).is_file():
        raise MissingPath(source, f"{source}: no such file")
    if is_h5ad(source) or is_anndata_zarr(source):
        with step(f"reading {source} as AnnData"):
            return read_anndata(source)
    return load(source)


def cmd_luxar(args: argparse.Namespace) -> int:
    check_target(scene_path(args.out), LUXAR_SCENE, overwrite=True)  # before SOURCE is read
    images, _ = image_paths(args.image)
    obj = load_for_scene(args.source)
    with step(f"compiling the Luxar scene {args.out}"):
        out = to_luxar(obj, args.out, layers=args.layer or None, layout=args.layout, title=args.title,
                       colormap=args.colormap, window=args.window, link=args.link, stack_by=args.stack_by,
                       images=images, verify=not args.no_verify)
    print(f"wrote {out}")
    if not args.open:
        print(f"open it with: cellspec view {out}")
        return 0
    return serve(out, port=args.port, data_port=args.data_port, open_browser=not args.no_browser)


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", help="a cellspec directory, an AnnData (.h5ad or .zarr: its obsm embeddings and uns "
                                  "colours are used), a SpatialData .zarr, or 'example'")
    p.add_argument("out", help="scene directory to write, e.g. cells.luxar.zarr (replaced when it exists)")
    p.add_argument("--layer", action="append", metavar="LAYER",
                   help="cells, adjacency, outlines, feature:<feature_id>, marker:<marker>, category:<column>, "
                        "embedding:<obsm key>, image:<channel>[,<channel>] (with --image); repeat for several "
                        "(default: cells)")
    p.add_argument("--layout", choices=("side", "stack"), default="side",
                   help="images side by side (default) or stacked along an 'image' dimension")
    p.add_argument("--stack-by", choices=("image_id", "sample_id"), default="image_id",
                   help="with --layout stack: one entry per image (default) or per sample")
    p.add_argument("--title", default=None, help="scene title (default: '<n> cells in <k> images')")
    p.add_argument("--colormap", default="viridis", help="matplotlib colormap of feature and marker layers")
    p.add_argument("--window", type=float, nargs=2, metavar=("LO", "HI"), default=None,
                   help="fixed colour window of feature and marker layers (default: percentiles 1-99)")
    p.add_argument("--link", default=None, metavar="URL",
                   help="right-click 'open' action, e.g. 'https://server/{image_id}/{cell_id}'")
    p.add_argument("--open", action="store_true", help="serve the scene just written with luxar's viewer")
    add_image_options(p)
    add_serve_options(p)
    p.set_defaults(func=cmd_luxar)
