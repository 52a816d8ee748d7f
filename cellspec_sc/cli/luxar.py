"""``cellspec luxar``: compile a cellspec directory or an ``.h5ad`` into a Luxar scene, optionally open it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cellspec_sc.errors import InputError
from cellspec_sc.io.publish import check_target


def load_for_scene(source: str) -> Any:
    """An ``.h5ad`` is read as AnnData (so obsm embeddings and scanpy colours stay available);
    everything else goes through :func:`cellspec_sc.io.sources.load`."""
    if source.endswith(".h5ad"):
        if not Path(source).is_file():
            raise InputError(f"{source}: no such file")
        import anndata

        try:
            return anndata.read_h5ad(source)
        except (OSError, ValueError, KeyError) as err:
            raise InputError(f"{source}: not a readable .h5ad file ({err})") from err
    from cellspec_sc.io.sources import load

    return load(source)


def cmd_luxar(args: argparse.Namespace) -> int:
    from cellspec_sc.bridges.luxar import LUXAR_SCENE, scene_path, to_luxar
    from cellspec_sc.bridges.luxar_viewer import LuxarViewer

    check_target(scene_path(args.out), LUXAR_SCENE, overwrite=True)  # before SOURCE is read
    obj = load_for_scene(args.source)
    out = to_luxar(obj, args.out, layers=args.layer or None, layout=args.layout, title=args.title,
                   colormap=args.colormap)
    print(f"wrote {out}")
    if not args.open:
        print(f"open it with: cellspec luxar {args.source} {out} --open   (or: luxar viewer --data {out})")
        return 0
    viewer = LuxarViewer(out, port=args.port, data_port=args.data_port, open_browser=True).start()
    print(f"serving {out} at {viewer.url}  (Ctrl-C stops the viewer)")
    viewer.wait()
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("luxar", help="compile cells into a Luxar scene for the browser viewer")
    p.add_argument("source", help="a cellspec directory, an .h5ad written from to_anndata, or 'example'")
    p.add_argument("out", help="scene directory to write, e.g. cells.luxar.zarr (a Luxar scene there is replaced, "
                                     "anything else refused)")
    p.add_argument("--layer", action="append", metavar="LAYER",
                   help="cells, adjacency, outlines, feature:<feature_id>, marker:<marker>, category:<column>, "
                        "embedding:<obsm key>; repeat for several (default: cells)")
    p.add_argument("--layout", choices=("side", "stack"), default="side",
                   help="images side by side (default) or stacked along an 'image' dimension")
    p.add_argument("--title", default=None, help="scene title (default: '<n> cells in <k> images')")
    p.add_argument("--colormap", default="viridis", help="colormap of feature layers (default viridis)")
    p.add_argument("--open", action="store_true", help="serve the scene with luxar's viewer on 127.0.0.1")
    p.add_argument("--port", type=int, default=None, help="viewer port with --open (default: a free port)")
    p.add_argument("--data-port", type=int, default=None, help="data port with --open (default: a free port)")
    p.set_defaults(func=cmd_luxar)
