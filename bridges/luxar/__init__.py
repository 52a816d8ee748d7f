"""Luxar scenes of cells: :func:`to_luxar` compiles a CellSpec (or an AnnData from ``to_anndata``) into a
``.luxar.zarr`` scene for luxar's browser viewer; :func:`show_luxar` and :class:`LuxarViewer` serve one.

Internals: ``_compile`` (``to_luxar``: layers, options, publishing), ``_input`` (what a scene is built from),
``_scene`` (the nodes of a scene and where they go), ``_colour`` (how a colour layer colours cells in Luxar, and
its legend), ``_record`` (the versioned cellspec record a scene carries), ``_viewer`` (serving a scene).

The compiler's names are imported on first use (PEP 562): ``cellspec view`` serves a scene without loading
pandas or numpy.

>>> from cellspec_sc.bridges.luxar import parse_layer
>>> parse_layer("marker:CD3e")
LayerSpec(kind='marker', argument='CD3e')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cellspec_sc._lazy import lazy_names
from cellspec_sc.bridges.luxar._viewer import LuxarViewer, show_luxar, signals_interrupt

if TYPE_CHECKING:
    from cellspec_sc.bridges.luxar._compile import LUXAR_SCENE, LayerSpec, cell_radii, parse_layer, scene_path, to_luxar

__all__ = ["to_luxar", "show_luxar", "LuxarViewer", "scene_path", "LUXAR_SCENE", "signals_interrupt", "parse_layer",
           "LayerSpec", "cell_radii"]

_COMPILER = ("to_luxar", "scene_path", "LUXAR_SCENE", "parse_layer", "LayerSpec", "cell_radii")


_HOMES = {name: "cellspec_sc.bridges.luxar._compile" for name in _COMPILER}
__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
