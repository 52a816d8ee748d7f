"""The preview widget: ipywidgets 8 controls over four panels (Features, Channels, Space, Validation).

Only plain ipywidgets are used (Dropdown, ToggleButtons, Tab, Image, HTML), so
the widget needs no JavaScript beyond what JupyterLab, Notebook 7 and VS Code
already ship, and nothing is fetched from the internet. Figures are PNG images
rendered by matplotlib from rasters; the numbers behind them come from
:class:`~cellspec_sc.widgets._data.PreviewData` and are exposed as ``*_data()``
methods so tests (and users) can check what is drawn.

>>> from cellspec_sc import example
>>> w = preview(example(), feature="nucleus:FOXP3:mean")
>>> w.feature, w.statistic.value, w.image.value
('nucleus:FOXP3:mean', 'mean', 'img1')
>>> w.select("cell:area"); w.kind.value, w.marker.value
('shape', '')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ipywidgets as W
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from cellspec_sc.display import channels_html, format_number, overview_html, robust_window, table_html
from cellspec_sc.errors import InputError
from cellspec_sc.images import ImageInput, checked_images
from cellspec_sc.io import PNG_FILE, check_target, publishing
from cellspec_sc.model import format_html
from cellspec_sc.widgets import _compute as compute
from cellspec_sc.widgets import _figures as figures
from cellspec_sc.widgets._data import DENSITY, FEATURE, PreviewData, as_cellspec
from cellspec_sc.widgets._images import ChannelImages, composite_png, thumbnails_png
from cellspec_sc.widgets._snapshot import write_snapshot

TABS = ("Features", "Channels", "Space", "Validation")
NONE_LABEL = "—"
_MEMO_SIZE = 32


@dataclass(frozen=True)
class SpaceView:
    """What the Space panel draws: the grid, the RGBA raster and either a colour range or a legend."""

    image_id: str
    colour_by: str
    grid: compute.Grid
    rgba: np.ndarray
    title: str
    raster: compute.ValueRaster | compute.CategoryRaster
    colour_range: tuple[float, float, str, str] | None = None
    legend: tuple[compute.LegendEntry, ...] = ()

    def drawing(self) -> dict[str, Any]:
        """The keyword arguments of :func:`~cellspec_sc.widgets._figures.draw_space` (an NA swatch only when
        some bins hold only NA).

        Returns
        -------
        dict
            ``grid``, ``rgba``, ``title``, ``colour_range``, ``legend`` and ``na``.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")

        >>> view = w.space_data(colour_by="classification")
        >>> sorted(view.drawing()), view.drawing()["legend"][0].label
        (['colour_range', 'grid', 'legend', 'na', 'rgba', 'title'], 'Stroma')
        """
        na = isinstance(self.raster, compute.ValueRaster) and bool(self.raster.na_only.any())
        return {"grid": self.grid, "rgba": self.rgba, "title": self.title, "colour_range": self.colour_range,
                "legend": self.legend, "na": na}


def preview(obj: Any, *, image: str | None = None, feature: str | None = None,
            images: Mapping[str, ImageInput] | None = None, channels: Sequence[str] | None = None,
            region: tuple[float, float, float, float] | None = None, verify: bool = True) -> Preview:
    """An interactive preview of a CellSpec (or an AnnData from ``to_anndata``).

    ``images={image_id: path or cs.open_image(...)}`` (each checked against the object first, ``verify``
    comparing SHA-256) adds to the Channels tab a thumbnail of every channel and a composite of ``channels``
    (up to six; default the first three) with the cells on top, over ``region`` (x0, y0, x1, y1 in
    micrometres; default the whole image); see ``docs/images.md``.

    Parameters
    ----------
    obj
        A :class:`~cellspec_sc.CellSpec`, or an AnnData made by :func:`~cellspec_sc.to_anndata`.
    image
        The image shown first (default: the first one).
    feature
        The feature shown first, by its id (default: the first intensity feature).

    Returns
    -------
    Preview
        The widget: display it as a cell's last expression; ``save_png`` and ``save_html`` export its view.

    Raises
    ------
    MissingExtraError
        Without the ``[widgets]`` extra (raised when ``cellspec_sc.preview`` is first used).

    Examples
    --------
    >>> from cellspec_sc import example
    >>> preview(example(), image="img2").image.value
    'img2'
    """
    return Preview(as_cellspec(obj), image=image, feature=feature, images=images, channels=channels, region=region,
                   verify=verify)


class Preview(W.VBox):
    """Features, Channels, Space and Validation panels of one object; see :func:`preview`."""

    def __init__(self, x: Any, *, image: str | None = None, feature: str | None = None,
                 images: Mapping[str, ImageInput] | None = None, channels: Sequence[str] | None = None,
                 region: tuple[float, float, float, float] | None = None, verify: bool = True):
        self.data = PreviewData(as_cellspec(x))
        opened = checked_images(self.data.x, images, verify=verify)
        self.channel_images = ChannelImages(self.data, opened, channels, region) if opened else None
        self._memo: dict[tuple, Any] = {}
        self._updating = False
        self._stale: set[str] = set()
        self._shown = False  # panels are drawn when the widget is first displayed (or draw() is called)
        d = self.data
        if image is not None and image not in d.image_ids:
            raise InputError(f"unknown image_id {image!r}; images: {', '.join(d.image_ids)}")
        if feature is not None and feature not in d.x.feature_ids:
            raise InputError(f"unknown feature_id {feature!r}; see x.features()")

        layout = W.Layout(width="auto")
        style = {"description_width": "initial"}
        self.kind = W.Dropdown(description="kind", layout=layout, style=style)
        self.marker = W.Dropdown(description="marker", layout=layout, style=style)
        self.compartment = W.Dropdown(description="compartment", layout=layout, style=style)
        self.statistic = W.Dropdown(description="statistic", layout=layout, style=style)
        self.image = W.Dropdown(description="image", options=d.image_ids, layout=layout, style=style,
                                value=image if image is not None else (d.image_ids[0] if d.image_ids else None))
        self.scale = W.ToggleButtons(options=["linear", "log"], value="linear", description="scale",
                                     style={"button_width": "64px", "description_width": "initial"})
        colour_options = [("selected feature", FEATURE), ("cell density", DENSITY)]
        colour_options += [(c, c) for c in d.categorical_columns]
        self.colour_by = W.Dropdown(description="colour by", options=colour_options, layout=layout, style=style,
                                    value=FEATURE if d.x.feature_ids else DENSITY)

        self.histogram_image = W.Image(format="png", layout=W.Layout(max_width="640px"))
        self.summary_html = W.HTML()
        self.overview_html = W.HTML(overview_html(compute.marker_compartment_overview(d.x.dictionary)))
        self.channels_html = W.HTML()
        self.space_image = W.Image(format="png", layout=W.Layout(max_width="680px"))
        self.validation_html = W.HTML("<i>validation runs when this tab is opened</i>")

        features_panel = W.VBox([self.scale, self.histogram_image, W.HTML("<b>Summary</b>"), self.summary_html,
                                 W.HTML("<b>Features by marker and compartment</b>"), self.overview_html])
        space_panel = W.VBox([self.colour_by, self.space_image])
        channels_panel = self.channels_html if self.channel_images is None else \
            W.VBox([self.channels_html, self.channel_images])
        self.tabs = W.Tab(children=[features_panel, channels_panel, space_panel, self.validation_html],
                          titles=TABS)
        selectors = W.HBox([self.kind, self.marker, self.compartment, self.statistic, self.image],
                           layout=W.Layout(flex_flow="row wrap"))
        super().__init__([W.HTML(format_html(d.x)), selectors, self.tabs])
        self.add_class("cellspec-preview")

        wanted = compute.levels_of(d.levels, feature) if feature is not None else {}
        self._set_levels(compute.choose_feature(d.levels, **wanted))
        for control in (self.kind, self.marker, self.compartment, self.statistic):
            control.observe(self._on_level, names="value")
        self.image.observe(lambda _: self._refresh("features", "channels", "space"), names="value")
        self.scale.observe(lambda _: self._refresh("features"), names="value")
        self.colour_by.observe(lambda _: self._refresh("space", "channels"), names="value")
        self.tabs.observe(self._on_tab, names="selected_index")
        self._refresh("features", "channels", "space", "validation")

    # -- state -----------------------------------------------------------------------------------
    @property
    def feature(self) -> str | None:
        """The selected feature id (None for an object without features).

        Returns
        -------
        str or None
            A value of ``dictionary.feature_id``.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")

        >>> w.feature
        'cell:area'
        """
        return self._choice.feature_id

    @property
    def image_id(self) -> str | None:
        """The selected image id (None for an object without images).

        Returns
        -------
        str or None
            A value of ``images.image_id``.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")

        >>> w.image_id, preview(example(), image="img2").image_id
        ('img1', 'img2')
        """
        return self.image.value

    @property
    def panel(self) -> str:
        """The name of the open tab.

        Returns
        -------
        str
            ``"Features"``, ``"Channels"``, ``"Space"`` or ``"Validation"``.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")

        >>> w.panel
        'Features'
        """
        return TABS[self.tabs.selected_index or 0]

    def select(self, feature: str | None = None, *, image: str | None = None, colour_by: str | None = None,
               scale: str | None = None, panel: str | None = None) -> None:
        """Set the controls from Python (as a user would through them); redraws once.

        Parameters
        ----------
        feature
            A feature id; the kind, marker, compartment and statistic controls follow it.
        image
            An image id.
        colour_by
            What the Space panel colours by: ``"feature"``, ``"density"`` or a categorical column of cells.
        scale
            ``"linear"`` or ``"log"`` (the histogram's axis).
        panel
            The tab to open: ``"Features"``, ``"Channels"``, ``"Space"`` or ``"Validation"``.

        Returns
        -------
        None
            The widget changes in place.

        Raises
        ------
        InputError
            A value the control does not offer (unknown feature, image, column, scale or panel).

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")

        >>> w.select("cell:CD3e:mean", image="img2", panel="Space")
        >>> w.feature, w.image_id, w.panel
        ('cell:CD3e:mean', 'img2', 'Space')
        """
        if feature is not None:
            if feature not in self.data.x.feature_ids:
                raise InputError(f"unknown feature_id {feature!r}; see x.features()")
            self._updating = True
            try:
                self._set_levels(compute.choose_feature(self.data.levels, **compute.levels_of(self.data.levels,
                                                                                               feature)))
            finally:
                self._updating = False
            self._refresh("features", "space")
        if image is not None:
            self.image.value = _offered(image, self.data.image_ids, "image_id")
        if colour_by is not None:
            value = {"feature": FEATURE, "density": DENSITY}.get(colour_by, colour_by)
            self.colour_by.value = _offered(value, [v for _, v in self.colour_by.options], "colour_by",
                                            ["feature", "density", *self.data.categorical_columns])
        if scale is not None:
            self.scale.value = _offered(scale, list(self.scale.options), "scale")
        if panel is not None:
            self.tabs.selected_index = TABS.index(_offered(panel, list(TABS), "panel"))

    def _set_levels(self, choice: compute.FeatureChoice) -> None:
        self._choice = choice
        for level in compute.LEVELS:
            control: W.Dropdown = getattr(self, level)
            options = [(value or NONE_LABEL, value) for value in choice.options[level]]
            if list(control.options) != options:
                control.options = options
            control.value = choice.selected[level] if options else None

    def _on_level(self, change: dict) -> None:
        if self._updating:
            return
        self._updating = True
        try:
            wanted = {level: getattr(self, level).value for level in compute.LEVELS}
            self._set_levels(compute.choose_feature(self.data.levels, **wanted))
        finally:
            self._updating = False
        self._refresh("features", "space")

    def _on_tab(self, change: dict) -> None:
        self._refresh()

    def _refresh(self, *parts: str) -> None:
        """Mark parts stale and redraw the one in the open tab (the others redraw when opened)."""
        self._stale.update(parts)
        visible = self.panel.lower()
        if self._shown and visible in self._stale:
            self._stale.discard(visible)
            getattr(self, f"_draw_{visible}")()

    def draw(self) -> Preview:
        """Draw the open panel now; from then on every change redraws (displaying the widget does this).

        Returns
        -------
        Preview
            The widget itself.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")

        >>> w.draw() is w, bytes(w.histogram_image.value[1:4])
        (True, b'PNG')
        """
        self._shown = True
        self._refresh()
        return self

    def _repr_mimebundle_(self, **kwargs: Any):
        self.draw()
        return super()._repr_mimebundle_(**kwargs)

    def render_all(self) -> None:
        """Draw every panel now.

        Returns
        -------
        None
            The panels' images and tables are filled in place.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")

        >>> w.render_all()
        >>> bytes(w.space_image.value[1:4]), "<table" in w.validation_html.value
        (b'PNG', True)
        """
        self._shown = True
        for part in ("features", "channels", "space", "validation"):
            self._stale.discard(part)
            getattr(self, f"_draw_{part}")()

    # -- data behind the figures -------------------------------------------------------------------
    def _cached(self, key: tuple, make):
        if key not in self._memo:
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.pop(next(iter(self._memo)))
            self._memo[key] = make()
        return self._memo[key]

    def histogram_data(self) -> compute.Histogram | None:
        """Counts per image of the selected feature on the current scale.

        Returns
        -------
        Histogram or None
            Bin edges and counts per image (None for an object without features).

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")

        >>> hist = w.histogram_data()
        >>> hist.scale, int(sum(c.sum() for c in hist.counts.values()))
        ('linear', 80)
        """
        f = self.feature
        return None if f is None else self._cached(("hist", f, self.scale.value),
                                                    lambda: self.data.histogram(f, scale=self.scale.value))

    def summary_data(self) -> pd.DataFrame | None:
        """Summary statistics of the selected feature per image and over all images.

        Returns
        -------
        pandas.DataFrame or None
            One row per image and ``all``: n, na, quantiles, mean ... (None for an object without features).

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")

        >>> w.summary_data().loc[["img1", "all"], "n"].tolist()
        [40, 80]
        """
        f = self.feature
        return None if f is None else self._cached(("summary", f), lambda: self.data.summary(f))

    def overview_data(self) -> pd.DataFrame:
        """The features by marker (rows) and compartment (columns), as the Features panel shows them.

        Returns
        -------
        pandas.DataFrame
            The statistics measured for each marker and compartment.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")

        >>> w.overview_data().loc["FOXP3", "nucleus"]
        'mean, median'
        """
        return compute.marker_compartment_overview(self.data.x.dictionary)

    def channel_data(self) -> pd.DataFrame:
        """The channels of the selected image, with the features measured on each marker.

        Returns
        -------
        pandas.DataFrame
            One row per channel (empty for an object without images).

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")

        >>> w.channel_data()["channel_name"].tolist()
        ['DAPI', 'CD3e', 'Pan-Cytokeratin', 'FOXP3']
        """
        return self.data.channels(self.image_id) if self.image_id is not None else pd.DataFrame()

    def validation_data(self) -> pd.DataFrame:
        """The report as rows, failures first.

        Returns
        -------
        pandas.DataFrame
            :meth:`ValidationReport.to_frame <cellspec_sc.ValidationReport.to_frame>` of the object.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")

        >>> w.validation_data()["status"].tolist().count("fail")
        0
        """
        return self.data.report().to_frame()

    def space_data(self, colour_by: str | None = None, image: str | None = None,
                   feature: str | None = None) -> SpaceView | None:
        """The raster, colours and colour bar or legend of the Space panel (default: the current controls).

        Parameters
        ----------
        colour_by
            A categorical column of cells (default: what the colour control shows).
        image
            An image id (default: the selected image).
        feature
            The feature to colour by when colouring by feature (default: the selected one).

        Returns
        -------
        SpaceView or None
            What the panel draws (None for an object without images).

        Raises
        ------
        InputError
            ``colour_by`` is not a categorical column of cells.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")

        >>> w.space_data().title
        'img1: cell:area (mean per bin), 40 cells'
        >>> w.space_data(colour_by="classification", image="img2").title
        'img2: classification, 40 cells'
        """
        image = self.image_id if image is None else image
        colour_by = self.colour_by.value if colour_by is None else colour_by
        if image is None:
            return None
        feature = (feature or self.feature) if colour_by == FEATURE else None
        if colour_by == FEATURE and feature is None:
            colour_by = DENSITY
        return self._cached(("space", image, colour_by, feature), lambda: self._space_view(image, colour_by, feature))

    def _space_view(self, image: str, colour_by: str, feature: str | None) -> SpaceView:
        d = self.data
        n = d.rows(image).size
        if colour_by in (FEATURE, DENSITY):
            if colour_by == FEATURE:
                grid, raster, (lo, hi) = d.value_map(feature, image)
                label, title = _unit_label(d, feature), f"{image}: {feature} (mean per bin)"
            else:
                grid, index = d.bins(image)
                raster = compute.value_raster(index, np.ones(index.size), grid)
                raster = compute.ValueRaster(raster.cells.astype(float), raster.cells, raster.finite, raster.sum)
                lo, hi = robust_window(raster.mean[raster.cells > 0].astype(float))
                label, title = "cells per bin", f"{image}: cell density"
            lo, hi = (lo, hi) if hi > lo else (lo - 0.5, lo + 0.5)
            return SpaceView(image, colour_by, grid, compute.value_rgba(raster, lo, hi),
                             f"{title}, {format_number(n)} cells", raster, colour_range=(lo, hi, "viridis", label))
        grid, raster, legend = d.category_map(colour_by, image)
        colours = d.label_colours(colour_by, list(raster.categories))
        return SpaceView(image, colour_by, grid, compute.category_rgba(raster, colours),
                         f"{image}: {colour_by}, {format_number(n)} cells", raster, legend=tuple(legend))

    # -- drawing ---------------------------------------------------------------------------------
    def histogram_png(self) -> bytes:
        """The Features panel's histogram of the selected feature as PNG.

        Returns
        -------
        bytes
            A PNG image (a short message instead for an object without features).

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")

        >>> w.histogram_png()[1:4]
        b'PNG'
        """
        hist = self.histogram_data()
        if hist is None:
            return _message_png("this object has no features")
        return figures.histogram_png(hist, title=self.feature, unit=self.data.unit(self.feature))

    def space_png(self) -> bytes:
        """The Space panel's map of the selected image as PNG.

        Returns
        -------
        bytes
            A PNG image (a short message instead for an object without images).

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")

        >>> w.space_png()[1:4]
        b'PNG'
        """
        view = self.space_data()
        if view is None:
            return _message_png("this object has no images")
        return figures.space_png(**view.drawing())

    def _draw_features(self) -> None:
        self.histogram_image.value = self.histogram_png()
        summary = self.summary_data()
        self.summary_html.value = table_html(summary) if summary is not None else ""
        self.overview_html.value = overview_html(self.overview_data(), self._choice.selected)

    def _draw_space(self) -> None:
        self.space_image.value = self.space_png()

    def _draw_channels(self) -> None:
        self.channels_html.value = channels_html(self.image_id, self.channel_data(),
                                                  self.data.unmatched_markers(self.image_id) if self.image_id else [])
        if self.channel_images is not None:
            self.channel_images.draw(self.image_id, self.colour_by.value, self.feature)

    def image_pngs(self, *, cells: bool = True) -> tuple[bytes, bytes] | None:
        """(thumbnails, composite with the cells on top unless ``cells=False``) of the selected image as PNG;
        None without an image for it.

        Parameters
        ----------
        cells
            Draw the cells on top of the composite.

        Returns
        -------
        tuple of bytes or None
            The two PNG images; None when the preview was made without ``images`` for the selected image.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")

        >>> w.image_pngs() is None  # made without images=
        True
        """
        if self.channel_images is None:
            return None
        view = self.channel_images.view(self.image_id, self.colour_by.value, self.feature)
        return None if view is None else (thumbnails_png(view), composite_png(view, cells=cells))

    def _draw_validation(self) -> None:
        self.validation_html.value = self.data.report()._repr_html_()

    # -- exports ---------------------------------------------------------------------------------
    def save_png(self, path: str | Path, *, overwrite: bool = True) -> Path:
        """Write the current view (histogram of the selected feature next to the map of the image) as PNG.

        An existing PNG file at ``path`` is replaced (never any other file; ``overwrite=False`` refuses
        it), see :mod:`cellspec_sc.io._publish`.

        Parameters
        ----------
        path
            The PNG file to write.
        overwrite
            Replace an existing PNG file at ``path``.

        Returns
        -------
        pathlib.Path
            ``path``.

        Raises
        ------
        TargetExists
            ``path`` exists and ``overwrite`` is false, or it is not a PNG file.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")
        >>> import pathlib, tempfile
        >>> w.save_png(pathlib.Path(tempfile.mkdtemp()) / "view.png").read_bytes()[1:4]
        b'PNG'
        """
        check_target(path, PNG_FILE, overwrite=overwrite)
        view = self.space_data()
        space = None if view is None else view.drawing()
        png = figures.view_png(self.histogram_data(), space, title=self.feature or "",
                               unit=self.data.unit(self.feature))
        pictures = self.image_pngs()
        if pictures is not None:
            png = figures.stacked_png([png, *pictures])
        with publishing(path, PNG_FILE, overwrite=overwrite) as payload:
            payload.write_bytes(png)
        return Path(path)

    def save_html(self, path: str | Path, *, features: Any = None, max_features: int = 24,
                  overwrite: bool = True) -> Path:
        """Write a standalone HTML snapshot (no kernel, no internet); see :mod:`cellspec_sc.widgets._snapshot`.
        An existing HTML file at ``path`` is replaced (never any other file; ``overwrite=False`` refuses it).

        Parameters
        ----------
        path
            The HTML file to write.
        features
            The features the snapshot offers (ids, or a dictionary query; default: a choice of them).
        max_features
            At most this many features.
        overwrite
            Replace an existing HTML file at ``path``.

        Returns
        -------
        pathlib.Path
            ``path``.

        Raises
        ------
        TargetExists
            ``path`` exists and ``overwrite`` is false, or it is not an HTML file.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> w = preview(example(), feature="cell:area")
        >>> import pathlib, tempfile
        >>> page = w.save_html(pathlib.Path(tempfile.mkdtemp()) / "view.html", max_features=2)
        >>> page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
        True
        """
        return write_snapshot(self, path, features=features, max_features=max_features, overwrite=overwrite)


# -- small helpers ---------------------------------------------------------------------------------
def _offered(value: str, allowed: list[str], what: str, shown: list[str] | None = None) -> str:
    if value not in allowed:
        raise InputError(f"unknown {what} {value!r}; choose from {', '.join(map(str, shown or allowed))}")
    return value


def _unit_label(d: PreviewData, feature: str) -> str:
    unit = d.unit(feature)
    return f"{feature} ({unit})" if unit else feature


def _message_png(text: str) -> bytes:
    fig = Figure(figsize=(5, 1.2))
    fig.text(0.5, 0.5, text, ha="center", va="center", fontsize=11, color="#555555")
    return figures.to_png(fig)
