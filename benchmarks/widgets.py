"""Widgets: switching the feature or the image of ``preview(x)`` on a slide redraws within about a second.

The preview is built and drawn once in the (untimed) setup, as a user would see it
in a notebook; each repetition then switches to a feature (or image) not shown yet,
so nothing comes from the widget's cache. The baseline draws a matplotlib
histogram of the same column to PNG, the least a hand-made notebook would do.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from .cases import Case, Env, Op

REQUIRES = ("cellspec_sc.widgets",)


def _preview(env: Env, panel: str) -> tuple[Any, Any]:
    import cellspec_sc as cs
    from cellspec_sc.widgets import preview

    x = cs.read(env.slide)
    widget = preview(x)
    widget.select(panel=panel)
    widget.draw()
    return x, widget


def switch_feature(panel: str):
    def setup(env: Env) -> Op:
        x, widget = _preview(env, panel)
        features = [f for f in x.features(kind="intensity") if f != widget.feature]
        return Op(lambda i: widget.select(feature=features[i]))
    return setup


def switch_image(env: Env) -> Op:
    x, widget = _preview(env, "Space")
    images = [i for i in x.images["image_id"].astype(str) if i != widget.image_id]
    return Op(lambda i: widget.select(image=images[i % len(images)]))


def histogram_png(env: Env) -> Op:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import cellspec_sc as cs

    m = cs.read(env.slide).measurements

    def run(i: int) -> bytes:
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.hist(m[:, i + 1][np.isfinite(m[:, i + 1])], bins=50)
        out = io.BytesIO()
        fig.savefig(out, format="png")
        plt.close(fig)
        return out.getvalue()

    return Op(run)


def redraw_goal(row: dict[str, Any]) -> bool:
    return row["ours_cpu_min_s"] <= 1.0


GOAL = "redraw <= ~1 s (CPU time of the redraw)"
CASES = [
    Case("preview: switch feature (Features tab)", "matplotlib histogram PNG", switch_feature("Features"),
         histogram_png, GOAL, redraw_goal, requires=REQUIRES),
    Case("preview: switch feature (Space tab)", "matplotlib histogram PNG", switch_feature("Space"), histogram_png,
         GOAL, redraw_goal, requires=REQUIRES),
    Case("preview: switch image (Space tab)", "matplotlib histogram PNG", switch_image, histogram_png, GOAL,
         redraw_goal, requires=REQUIRES),
]
