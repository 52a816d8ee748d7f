"""The public names of cellspec_sc.widgets are a listed set (an addition is a decision), and each resolves."""

from __future__ import annotations

import cellspec_sc.widgets as widgets

PUBLIC = {"Preview", "SpaceView", "preview"}


def test_the_public_names_are_the_listed_ones_and_resolve():
    assert set(widgets.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(widgets, name).__module__ == "cellspec_sc.widgets._preview"
