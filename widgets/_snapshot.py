"""A standalone HTML snapshot of a preview: one file that opens without a kernel and without internet.

``ipywidgets.embed`` and nbconvert load the widget manager from a CDN, so the
snapshot is built here instead: every figure is a PNG data URI, every table is
inline HTML, and a few lines of inline JavaScript (no ``src=``) switch between
the embedded features and colourings. Nothing in the page refers to a network
address.

>>> import tempfile, pathlib
>>> from cellspec_sc import example
>>> from cellspec_sc.widgets import preview
>>> out = pathlib.Path(tempfile.mkdtemp()) / "report.html"
>>> text = write_snapshot(preview(example()), out, max_features=2).read_text()
>>> "data:image/png;base64," in text, "http" in text
(True, False)
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cellspec_sc.display import channels_html, overview_html, table_html
from cellspec_sc.errors import InputError
from cellspec_sc.io import HTML_FILE, check_target, publishing
from cellspec_sc.model import format_html
from cellspec_sc.progress import progress
from cellspec_sc.widgets import _figures as figures
from cellspec_sc.widgets._data import FEATURE

if TYPE_CHECKING:
    from cellspec_sc.widgets._preview import Preview

STATE_ID = "cellspec-state"


def data_uri(png: bytes) -> str:
    """A PNG as a ``data:`` URI."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def snapshot_features(w: Preview, features: Any = None, max_features: int = 24) -> list[str]:
    """Features to embed: ``"all"``, a list of ids, or (None) the selected one then dictionary order up to
    ``max_features``."""
    ids = w.data.x.feature_ids
    if features == "all":
        return list(ids)
    if features is not None:
        chosen = [str(f) for f in features]
        unknown = [f for f in chosen if f not in ids]
        if unknown:
            raise InputError(f"unknown feature_id(s) {', '.join(unknown)}; see x.features()")
        return list(dict.fromkeys(chosen))
    ordered = ([w.feature] if w.feature else []) + list(ids)
    return list(dict.fromkeys(ordered))[:max(max_features, 1)]


def snapshot_state(w: Preview, features: Sequence[str]) -> dict[str, Any]:
    """The embedded state: per feature its histogram, summary table and map; per categorical column its map."""
    state: dict[str, Any] = {"image": w.image_id, "scale": w.scale.value, "features": {}, "maps": {}}
    maps = [value for value, _label in _colourings(w) if value != FEATURE] if w.image_id is not None else []
    # each figure reads a column of every cell: the work grows with cells x figures
    with progress(len(features) + len(maps), "preview figures", unit="figures",
                  size=w.data.x.n_cells * (len(features) + len(maps))) as bar:
        for f in features:
            hist = w.data.histogram(f, scale=w.scale.value)
            entry = {"histogram": data_uri(figures.histogram_png(hist, title=f, unit=w.data.unit(f))),
                     "summary": table_html(w.data.summary(f))}
            if w.image_id is not None:
                entry["map"] = data_uri(_space_png(w, FEATURE, f))
            state["features"][f] = entry
            bar.update(1)
        for value in maps:
            state["maps"][value] = data_uri(_space_png(w, value, None))
            bar.update(1)
    return state


def _space_png(w: Preview, colour_by: str, feature: str | None) -> bytes:
    view = w.space_data(colour_by=colour_by, feature=feature)
    return figures.space_png(**view.drawing())


def _colourings(w: Preview) -> list[tuple[str, str]]:
    options = [(value, label) for label, value in w.colour_by.options]
    return options if w.data.x.feature_ids else [o for o in options if o[0] != FEATURE]


def render_snapshot(w: Preview, *, features: Any = None, max_features: int = 24, title: str | None = None) -> str:
    """The snapshot page as a string."""
    chosen = snapshot_features(w, features, max_features)
    state = snapshot_state(w, chosen)
    first = state["features"].get(chosen[0]) if chosen else None
    colourings = _colourings(w)
    current_colour = w.colour_by.value if any(v == w.colour_by.value for v, _ in colourings) else colourings[0][0]
    if current_colour == FEATURE and first is not None:
        map_src = first.get("map", "")
    else:
        map_src = state["maps"].get(current_colour, "")
    omitted = len(w.data.x.feature_ids) - len(chosen)
    title = title or f"cellspec preview ({w.data.x.n_cells} cells)"
    channels = "".join(channels_html(i, w.data.channels(i), w.data.unmatched_markers(i)) for i in w.data.image_ids)
    channels += _image_panels(w)
    report = w.data.report()._repr_html_()

    feature_select = "".join(f"<option value='{html.escape(f, quote=True)}'>{html.escape(f)}</option>" for f in chosen)
    colour_select = "".join(
        f"<option value='{html.escape(v, quote=True)}'{' selected' if v == current_colour else ''}>"
        f"{html.escape(label)}</option>" for v, label in colourings)
    features_section = (
        f"<label>feature <select id='feature'>{feature_select}</select></label>"
        + (f" <span class='note'>{omitted} more feature(s) not embedded; "
           f"use save_html(features='all') or --features all</span>" if omitted > 0 else "")
        + f"<div><img id='histogram' alt='histogram' src='{first['histogram']}'></div>"
        + f"<h3>Summary</h3><div id='summary'>{first['summary']}</div>"
        if first is not None else "<p><i>this object has no features</i></p>")
    body = f"""
<h1>{html.escape(title)}</h1>
{format_html(w.data.x)}
<nav><a href='#features'>Features</a> · <a href='#channels'>Channels</a> · <a href='#space'>Space</a> ·
<a href='#validation'>Validation</a></nav>
<section id='features'><h2>Features</h2>
{features_section}
<h3>Features by marker and compartment</h3>{overview_html(w.overview_data())}
</section>
<section id='channels'><h2>Channels</h2>{channels}</section>
<section id='space'><h2>Space: {html.escape(str(w.image_id))}</h2>
<label>colour by <select id='colour'>{colour_select}</select></label>
<div><img id='map' alt='map of cells' src='{map_src}'></div></section>
<section id='validation'><h2>Validation</h2>{report}</section>
<script type='application/json' id='{STATE_ID}'>{_json_for_script(state)}</script>
<script>{_SCRIPT}</script>
"""
    return f"""<!DOCTYPE html>
<html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>
<style>{_STYLE}</style></head><body>{body}</body></html>
"""


def _image_panels(w: Preview) -> str:
    """The selected image's channel thumbnails and composite with the cells, when images were handed over."""
    pictures = w.image_pngs()
    if pictures is None:
        return ""
    return (f"<div id='channel-images'><h3>{html.escape(str(w.image_id))}: channels</h3>"
            f"<img alt='channel thumbnails' src='{data_uri(pictures[0])}'><br>"
            f"<img alt='composite of channels with cells' src='{data_uri(pictures[1])}'></div>")


def write_snapshot(w: Preview, path: str | Path, *, features: Any = None, max_features: int = 24,
                   overwrite: bool = True) -> Path:
    """Write :func:`render_snapshot` to ``path`` (UTF-8), replacing an existing HTML file only (and only
    with ``overwrite=True``), see :mod:`cellspec_sc.io._publish`."""
    check_target(path, HTML_FILE, overwrite=overwrite)
    page = render_snapshot(w, features=features, max_features=max_features)
    with publishing(path, HTML_FILE, overwrite=overwrite) as payload:
        payload.write_text(page, encoding="utf-8")
    return Path(path)


_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                              "\u2029": "\\u2029"})


def _json_for_script(state: dict[str, Any]) -> str:
    r"""JSON text that cannot end or change its ``<script>`` element (``</script>``, ``<!--``) nor break a
    JavaScript string (U+2028/2029): those characters as ``\u003c``-style escapes, which JSON reads back as themselves.

    >>> _json_for_script({"a": "</script><!--&\u2028"})
    '{"a": "\\u003c/script\\u003e\\u003c!--\\u0026\\u2028"}'
    """
    return json.dumps(state, ensure_ascii=False).translate(_SCRIPT_SAFE)


_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1100px; }
section { border-top: 1px solid #ccc; margin-top: 1.5em; padding-top: 0.5em; }
img { max-width: 100%; }
.note { color: #666; font-size: 12px; }
nav a { margin-right: 0.3em; }
"""

_SCRIPT = """
(function () {
  const state = JSON.parse(document.getElementById('cellspec-state').textContent);
  const feature = document.getElementById('feature');
  const colour = document.getElementById('colour');
  function show() {
    const entry = feature ? state.features[feature.value] : null;
    if (entry) {
      document.getElementById('histogram').src = entry.histogram;
      document.getElementById('summary').innerHTML = entry.summary;
    }
    const map = colour.value === '__feature__' ? (entry && entry.map) : state.maps[colour.value];
    if (map) { document.getElementById('map').src = map; }
  }
  if (feature) { feature.addEventListener('change', show); }
  colour.addEventListener('change', show);
})();
"""
