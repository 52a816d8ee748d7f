"""Notebook widgets that preview a cellspec object inline.

>>> from cellspec_sc import example
>>> from cellspec_sc.widgets import preview
>>> w = preview(example())
>>> w.feature
'cell:DAPI:mean'
"""

from __future__ import annotations

from cellspec_sc.errors import needs_extra

with needs_extra("widgets", "cellspec_sc.widgets"):  # ipywidgets and matplotlib: pip install "cellspec_sc[widgets]"
    from cellspec_sc.widgets._preview import Preview, SpaceView, preview

__all__ = ["Preview", "SpaceView", "preview"]
