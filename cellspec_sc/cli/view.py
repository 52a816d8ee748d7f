"""``cellspec view SCENE``: serve an existing Luxar scene with luxar's own viewer on 127.0.0.1, compiling nothing."""

from __future__ import annotations

import argparse
from pathlib import Path


def serve(scene: str | Path, *, port: int | None = None, data_port: int | None = None,
          open_browser: bool = True) -> int:
    """Serve ``scene`` until Ctrl-C (or SIGTERM); prints the address first."""
    from cellspec_sc.bridges.luxar_viewer import LuxarViewer

    viewer = LuxarViewer(scene, port=port, data_port=data_port, open_browser=open_browser).start()
    print(f"serving {scene} at {viewer.url}  (Ctrl-C stops the viewer)", flush=True)
    viewer.wait()
    return 0


def cmd_view(args: argparse.Namespace) -> int:
    return serve(args.scene, port=args.port, data_port=args.data_port, open_browser=not args.no_browser)


def register(sub: argparse._SubParsersAction) -> None:
    from cellspec_sc.cli.luxar import add_serve_options

    p = sub.add_parser("view", help="serve an existing Luxar scene (.luxar.zarr) with luxar's viewer")
    p.add_argument("scene", help="a scene directory written by 'cellspec luxar' or to_luxar")
    add_serve_options(p)
    p.set_defaults(func=cmd_view)
