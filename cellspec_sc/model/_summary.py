"""The summary block of section 1, as text (``repr``) and HTML (Jupyter).

>>> from cellspec_sc import example
>>> print(format_text(example()))  # doctest: +ELLIPSIS
<cellspec> spec 1.0.0
  cells     80 in 2 images (2 samples)
  features  19: 16 intensity, 2 shape, 1 other
  markers   4: DAPI, CD3e, Pan-Cytokeratin, FOXP3
  pixel     0.5 um/px
  adjacency none
  source    simulate 2.0.0 (cellspec_sc simulator 2.0.0)
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import numpy as np

from cellspec_sc.display import format_number
from cellspec_sc.model._provenance import source_line

if TYPE_CHECKING:
    from cellspec_sc.model._cellspec import CellSpec

_MAX_MARKERS = 8


def _safe(fn, default: Any = "?") -> Any:
    # the summary must print for invalid objects too
    try:
        return fn()
    except Exception:  # noqa: BLE001 - any broken component just prints as "?"
        return default


def feature_kinds(dictionary: Any) -> dict[str, int]:
    """Features per kind: intensity, shape, other first, then any other kind (empty when unreadable)."""
    kinds = _safe(lambda: {k: int(n) for k, n in dictionary["kind"].value_counts(sort=False).items()}, {})
    return {k: kinds.get(k, 0) for k in ("intensity", "shape", "other") if kinds.get(k, 0)} | \
        {k: v for k, v in kinds.items() if k not in ("intensity", "shape", "other")}


def summarise(x: CellSpec) -> dict[str, Any]:
    """The facts of the summary block."""
    d = x.dictionary
    markers = _safe(lambda: list(dict.fromkeys(d.loc[d["kind"] == "intensity", "marker"].dropna())), [])
    return {
        "spec_version": x.spec_version,
        "cells": _safe(lambda: len(x.cells)),
        "images": _safe(lambda: int(x.cells["image_id"].nunique()) if len(x.cells) else len(x.images)),
        "samples": _safe(lambda: int(x.cells["sample_id"].nunique()) if len(x.cells) else
                         int(x.images["sample_id"].nunique())),
        "features": _safe(lambda: len(d)),
        "kinds": feature_kinds(d),
        "markers": markers,
        "pixel_sizes": _safe(lambda: sorted({float(v) for v in x.images["pixel_size"].dropna()}), []),
        "contacts": None if x.adjacency is None else _safe(lambda: len(x.adjacency)),
        "adjacency_methods": [] if x.adjacency is None
        else _safe(lambda: sorted(x.adjacency["method"].dropna().unique()), []),
        "source": source_line(x.provenance),
    }


def pixel_text(sizes: list[float]) -> str:
    """Pixel size(s) as printed in the summary, e.g. ``0.5 um/px`` or ``0.3-0.5 um/px``."""
    if not sizes:
        return "unknown"
    fmt = [np.format_float_positional(s, trim="-") for s in (sizes[0], sizes[-1])]
    return f"{fmt[0]} um/px" if len(sizes) == 1 else f"{fmt[0]}-{fmt[1]} um/px"


def markers_text(markers: list[str]) -> str:
    """The marker line of the summary: count, then the first few names."""
    shown = ", ".join(markers[:_MAX_MARKERS])
    more = f", … (+{len(markers) - _MAX_MARKERS} more)" if len(markers) > _MAX_MARKERS else ""
    return f"{len(markers)}: {shown}{more}" if markers else "0"


def _rows(x: CellSpec) -> list[tuple[str, str]]:
    s = summarise(x)
    kinds = ", ".join(f"{_n(n)} {k}" for k, n in s["kinds"].items())
    adjacency = "none" if s["contacts"] is None else \
        f"{_n(s['contacts'])} contacts ({', '.join(s['adjacency_methods'])})"
    return [
        ("cells", f"{_n(s['cells'])} in {_n(s['images'])} images ({_n(s['samples'])} samples)"),
        ("features", f"{_n(s['features'])}: {kinds}" if kinds else f"{_n(s['features'])}"),
        ("markers", markers_text(s["markers"])),
        ("pixel", pixel_text(s["pixel_sizes"])),
        ("adjacency", adjacency),
        ("source", s["source"]),
    ]


def _n(count: Any) -> str:
    """A count with thousands separators (``11,200``); anything unreadable as it is."""
    return format_number(count) if isinstance(count, (int, np.integer)) else str(count)


def format_text(x: CellSpec) -> str:
    """The summary block of section 1."""
    lines = [f"<cellspec> spec {x.spec_version}"] + [f"  {k:<9} {v}" for k, v in _rows(x)]
    return "\n".join(lines)


def format_html(x: CellSpec) -> str:
    """The summary block as a small HTML table for Jupyter."""
    body = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
                   f"<td style='text-align:left'>{html.escape(v)}</td></tr>" for k, v in _rows(x))
    return (f"<div class='cellspec-summary'><strong>&lt;cellspec&gt;</strong> spec {html.escape(str(x.spec_version))}"
            f"<table>{body}</table></div>")

