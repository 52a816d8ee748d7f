"""HTML fragments with inline styles (they render the same in JupyterLab, Notebook, VS Code and a standalone
page): compact tables, colour swatches, and the preview's overview and channel tables.

>>> table_html(pd.DataFrame({"n": [1.5, float("nan")]}), index=False).count("<td")
2
>>> swatch("#ff0000")
'<span style="color:#ff0000">&#9679;</span>'
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pandas as pd

from cellspec_sc.display._numbers import format_number

TABLE_STYLE = "border-collapse:collapse;font-size:12px;margin:4px 0"
CELL_STYLE = "padding:2px 8px;border-bottom:1px solid #ddd;text-align:right"
SELECTED_ROW = "background:#fff3c4"
UNMEASURED_ROW = "color:#888;font-style:italic"


def format_value(value: Any) -> str:
    """A table cell as text: yes/no for booleans, numbers in the one number format (:func:`format_number`:
    integers with thousands separators), NA for missing.

    >>> format_value(True), format_value(2 / 3), format_value(None), format_value("CD3"), format_value(11200.0)
    ('yes', '0.6667', 'NA', 'CD3', '11,200')
    """
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return format_number(value)
    if value is None or value is pd.NA:
        return "NA"
    return str(value)


def table_html(frame: pd.DataFrame, *, index: bool = True, row_styles: list[str] | None = None) -> str:
    """A compact HTML table with inline styles (works in any front end and in the snapshot)."""
    head_cells = ([frame.index.name or ""] if index else []) + [str(c) for c in frame.columns]
    head = "".join(f"<th style='{CELL_STYLE};font-weight:bold'>{html.escape(c)}</th>" for c in head_cells)
    body = []
    for i, (label, row) in enumerate(frame.iterrows()):
        cells = ([label] if index else []) + list(row)
        style = row_styles[i] if row_styles else ""
        body.append(f"<tr style='{style}'>" + "".join(f"<td style='{CELL_STYLE}'>{html.escape(format_value(v))}</td>"
                                                       for v in cells) + "</tr>")
    return f"<table style='{TABLE_STYLE}'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def swatch(colour: str) -> str:
    """A coloured dot for a legend line (``colour`` as ``"#rrggbb"``)."""
    return f'<span style="color:{colour}">&#9679;</span>'


def overview_html(overview: pd.DataFrame, selected: dict[str, str] | None = None) -> str:
    """The features-by-marker-and-compartment table, the selected feature's row highlighted.

    >>> "fff3c4" in overview_html(pd.DataFrame({"mean": [1]}, index=["CD3"]), {"marker": "CD3"})
    True
    """
    styles = None
    if selected is not None:
        row = "(shape)" if selected.get("kind") == "shape" else selected.get("marker")
        styles = [SELECTED_ROW if label == row else "" for label in overview.index]
    return table_html(overview, row_styles=styles) if len(overview) else "<i>no intensity or shape features</i>"


def channels_html(image_id: str | None, table: pd.DataFrame, unmatched: list[str]) -> str:
    """The channel table of one image (channels without measurements in grey italics) and the measured
    markers missing from its channels."""
    if image_id is None:
        return "<i>no images</i>"
    styles = ["" if m else UNMEASURED_ROW for m in table.get("measured", [])]
    note = (f"<p style='color:#c62828'>markers measured but not among this image's channels: "
            f"{html.escape(', '.join(unmatched))}</p>") if unmatched else ""
    n_free = int((~table["measured"]).sum()) if len(table) else 0
    legend = (f"<p style='font-size:12px;color:#555'>{n_free} channel(s) without measurements shown in grey "
              f"italics.</p>") if n_free else ""
    return (f"<b>Channels of {html.escape(image_id)}</b>" + table_html(table, index=False, row_styles=styles)
            + legend + note)
