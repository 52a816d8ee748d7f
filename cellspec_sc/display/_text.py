"""Names in figures: long image names shortened in the middle (their start and end tell images apart) or
wrapped, so that no label runs across a plot.

>>> short_name("slide_2024-03-11_patient-017_region-04_scan-2.ome.tiff", 24)
'slide_2024-…n-2.ome.tiff'
>>> print(wrapped("img_" + "a" * 30 + ": cell:CD3e:mean (mean per bin)", 24))
img_aaaaaaaaaaaaaaaaaaaa
aaaaaaaaaa:
cell:CD3e:mean (mean per
bin)
"""

from __future__ import annotations

import textwrap

NAME_LIMIT = 28  # characters of a name in a figure legend
# characters of any name drawn (figure titles, Luxar legends and titles); the full text stays in the data and in
# tooltips. Drawing every character of a 100,000-character marker name took minutes.
LABEL_LIMIT = 80


def short_name(name: str, limit: int = NAME_LIMIT) -> str:
    """``name`` at most ``limit`` characters long, shortened in the middle with an ellipsis."""
    name = str(name)
    if len(name) <= limit:
        return name
    head = (limit - 1) // 2
    return name[:head] + "…" + name[len(name) - (limit - 1 - head):]


def wrapped(text: str, width: int) -> str:
    """``text`` broken into lines of at most ``width`` characters (long words broken too)."""
    return "\n".join(textwrap.wrap(str(text), width=width, break_long_words=True, break_on_hyphens=False)) or ""
