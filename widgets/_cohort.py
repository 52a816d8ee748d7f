"""The cohort preview: an image x marker heatmap of medians and of the NA fraction, and outlier images.

Built from :meth:`Cohort.summary` (computed on the workers; pass one to reuse
it). For the chosen intensity feature family (compartment and statistic, e.g.
``cell`` / ``mean``) each cell of the heatmap is the median over an image's
cells of that marker's feature; an image is an **outlier** for a marker when
its median lies more than 3 MADs from the cohort's median of the image
medians (MAD: median absolute deviation scaled by 1.4826, so that it estimates
the standard deviation of normal data, like R's ``mad()``). Choosing an image in the list opens
its single-object :func:`cellspec_sc.preview` below (that image's cells only,
read on the client). Plain ipywidgets and PNG images: works offline.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> from cellspec_sc.cohort.example import write_example_cohort
>>> c = cs.open_cohort(write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20))
>>> w = c.preview()
>>> w.family.value, w.medians().shape
(('cell', 'mean'), (4, 4))
>>> w.images.value = "slide02_img1"; w.opened.data.x.images["image_id"].tolist()
['slide02_img1']
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from cellspec_sc.widgets._figures import capped_label, plain_text, to_png
from cellspec_sc.widgets._preview import preview

MADS = 3.0
MAD_SCALE = 1.4826  # consistency constant: scaled MAD = SD for normal data


def families(dictionary: pd.DataFrame) -> list[tuple[str, str]]:
    """(compartment, statistic) pairs of the intensity features, in dictionary order."""
    if not {"kind", "marker", "compartment", "statistic"} <= set(dictionary.columns):
        return []
    rows = dictionary[(dictionary["kind"] == "intensity").fillna(False).to_numpy()]
    pairs = zip(rows["compartment"].astype(object), rows["statistic"].astype(object), strict=True)
    return list(dict.fromkeys((str(c), str(s)) for c, s in pairs if not pd.isna(c) and not pd.isna(s)))


def marker_features(dictionary: pd.DataFrame, family: tuple[str, str]) -> dict[str, str]:
    """{marker: feature_id} of one family, in dictionary order."""
    compartment, statistic = family
    keep = ((dictionary["kind"] == "intensity") & (dictionary["compartment"] == compartment) &
            (dictionary["statistic"] == statistic)).fillna(False).to_numpy()
    rows = dictionary[keep]
    return dict(zip(rows["marker"].astype(str), rows["feature_id"].astype(str), strict=True))


def image_marker_table(summary: pd.DataFrame, features: dict[str, str], column: str) -> pd.DataFrame:
    """images x markers of one summary column (``median``) or ``na_fraction``, images in summary order."""
    rows = summary[summary["feature_id"].isin(list(features.values())).to_numpy()].copy()
    rows["na_fraction"] = rows["na"] / (rows["n"] + rows["na"]).where(lambda t: t > 0)
    table = rows.pivot(index="image_id", columns="feature_id", values=column)
    order = list(dict.fromkeys(summary["image_id"].astype(str)))
    table = table.reindex(index=order, columns=list(features.values()))
    table.columns = list(features)
    table.index = table.index.astype(str)
    return table.astype(np.float64)


def outliers(medians: pd.DataFrame, mads: float = MADS) -> pd.DataFrame:
    """Boolean images x markers: the image median is more than ``mads`` MADs from the cohort median.

    >>> t = pd.DataFrame({"CD3": [1.0, 1.1, 0.9, 1.0, 9.0]}, index=list("abcde"))
    >>> outliers(t)["CD3"].tolist()
    [False, False, False, False, True]
    """
    centre = medians.median(axis=0)
    mad = MAD_SCALE * (medians - centre).abs().median(axis=0)
    return ((medians - centre).abs() > mads * mad).fillna(False)


@plain_text
def heatmap_png(medians: pd.DataFrame, na_fraction: pd.DataFrame, flagged: pd.DataFrame, title: str) -> bytes:
    """Two heatmaps side by side: medians (each marker scaled to its range over images) and NA fraction;
    outlier cells are boxed."""
    n_images, n_markers = medians.shape
    fig = Figure(figsize=(2.5 + 0.9 * n_markers * 2, 1.2 + 0.28 * max(n_images, 1)))
    left, right = fig.subplots(1, 2, sharey=True)
    low, high = medians.min(axis=0), medians.max(axis=0)
    scaled = ((medians - low) / (high - low).where(lambda r: r > 0)).fillna(0.5)
    for ax, values, name, cmap in ((left, scaled, f"median ({title}), scaled per marker", "viridis"),
                                   (right, na_fraction, "NA fraction", "magma_r")):
        image = ax.imshow(values.to_numpy(dtype=float), aspect="auto", cmap=cmap,
                          vmin=0, vmax=1 if values is na_fraction else None, interpolation="nearest")
        ax.set_xticks(range(n_markers), [capped_label(c) for c in medians.columns], rotation=60, ha="right",
                      fontsize=8)
        ax.set_yticks(range(n_images), [capped_label(i) for i in medians.index], fontsize=8)
        ax.set_title(name, fontsize=9)
        fig.colorbar(image, ax=ax, fraction=0.05)
    for i, j in zip(*np.nonzero(flagged.to_numpy()), strict=True):
        left.add_patch(_box(j, i))
    fig.tight_layout()
    return to_png(fig)


def _box(x: int, y: int) -> Rectangle:
    return Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2)


class CohortPreview(W.VBox):
    """See the module docstring; ``c.preview()`` builds one."""

    def __init__(self, cohort: Any, *, summary: pd.DataFrame | None = None, client: Any = None):
        self.cohort = cohort
        self.summary = summary if summary is not None else cohort.summary(client)
        options = families(cohort.dictionary)
        self.family = W.Dropdown(options=[(f"{c} {s}", (c, s)) for c, s in options], description="features",
                                 value=options[0] if options else None)
        self.heatmap = W.Image(format="png", layout=W.Layout(max_width="960px"))
        self.flags = W.HTML()
        self.images = W.Select(description="open image", rows=8, layout=W.Layout(width="420px"),
                               style={"description_width": "initial"})
        self.detail = W.VBox()
        self.opened: Any = None
        self.family.observe(lambda _: self.draw(), names="value")
        self.images.observe(lambda change: self.open_image(change["new"]), names="value")
        super().__init__([W.HTML(f"<b>{html.escape(repr(cohort))}</b>"), self.family, self.heatmap, self.flags,
                          self.images, self.detail])
        self.add_class("cellspec-cohort-preview")
        self.draw()

    def _features(self) -> dict[str, str]:
        return marker_features(self.cohort.dictionary, self.family.value) if self.family.value else {}

    def medians(self) -> pd.DataFrame:
        """images x markers of the medians drawn."""
        return image_marker_table(self.summary, self._features(), "median")

    def na_fraction(self) -> pd.DataFrame:
        return image_marker_table(self.summary, self._features(), "na_fraction")

    def outliers(self) -> pd.DataFrame:
        return outliers(self.medians())

    def draw(self) -> None:
        medians, flagged = self.medians(), self.outliers()
        title = " ".join(self.family.value) if self.family.value else ""
        self.heatmap.value = heatmap_png(medians, self.na_fraction(), flagged, title)
        bad = flagged.any(axis=1)
        listed = [f"{i}: {', '.join(flagged.columns[flagged.loc[i].to_numpy()])}" for i in bad[bad].index]
        self.flags.value = (f"<b>Outlier images</b> (median more than {MADS:g} MADs from the cohort): "
                            + (html.escape("; ".join(listed)) if listed else "none"))
        directory = dict(zip(self.cohort.images["image_id"].astype(str), self.cohort.images["directory"],
                             strict=True))
        self.images.options = [(f"{'! ' if bad.get(i, False) else ''}{i}  ({directory.get(i, '')})", i)
                               for i in medians.index]
        self.images.value = None

    def open_image(self, image_id: str | None) -> None:
        """Show the single-object preview of ``image_id`` (its cells only) below the heatmap."""
        if image_id is None:
            return
        member = self.cohort.select(images=[image_id]).members[0]
        self.opened = preview(member.load())
        self.detail.children = [W.HTML(f"<b>{html.escape(image_id)}</b>"), self.opened]
