"""Notebook widgets that preview a cellspec object inline.

>>> from cellspec_sc import example
>>> from cellspec_sc.widgets import preview
>>> w = preview(example())
>>> w.feature
'cell:DAPI:mean'
"""

from __future__ import annotations

from cellspec_sc.widgets._preview import Preview, SpaceView, preview

__all__ = ["Preview", "SpaceView", "preview"]
