"""``cellspec view SCENE``: serve an existing Luxar scene with luxar's own viewer on 127.0.0.1, compiling nothing.

SIGTERM and SIGINT stop the viewer and its data server whenever they arrive, during start-up included.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cellspec_sc.bridges.luxar import LuxarViewer, signals_interrupt


def serve(scene: str | Path, *, port: int | None = None, data_port: int | None = None,
          open_browser: bool = True) -> int:
    """Serve ``scene`` until Ctrl-C (or SIGTERM); prints the address first."""
    with signals_interrupt():  # from here on SIGTERM unwinds like Ctrl-C, so the viewer is always stopped
        viewer = LuxarViewer(scene, port=port, data_port=data_port, open_browser=open_browser)
        try:  # also when the signal lands between start() and wait(), e.g. while the address is printed
            viewer.start()
            print(f"serving {scene} at {viewer.url}  (Ctrl-C stops the viewer)", flush=True)
            return viewer.wait()
        finally:
            viewer.stop()


def cmd_view(args: argparse.Namespace) -> int:
    return serve(args.scene, port=args.port, data_port=args.data_port, open_browser=not args.no_browser)


def add_serve_options(p: argparse.ArgumentParser) -> None:
    """``--port``, ``--data-port`` and ``--no-browser``, shared by ``cellspec view`` and ``cellspec luxar --open``."""
    p.add_argument("--port", type=int, default=None, help="viewer port (default: a free port)")
    p.add_argument("--data-port", type=int, default=None, help="data port (default: a free port)")
    p.add_argument("--no-browser", action="store_true", help="serve without opening a browser")


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("scene", help="a scene directory written by 'cellspec luxar' or to_luxar")
    add_serve_options(p)
    p.set_defaults(func=cmd_view)
