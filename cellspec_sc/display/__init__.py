"""How cells look on screen, shared by the notebook widgets and the Luxar bridge: colours, the one home of a
category column's order and colours, colour windows, number formats and HTML fragments.

>>> hex_colour((1.0, 0.0, 0.0))
'#ff0000'
"""

from cellspec_sc.display._categories import (
           STYLE_FIELD,
           CategoryStyle,
           category_style,
           default_colours,
           present_labels,
           stored_style,
           style_record,
           with_styles,
)
from cellspec_sc.display._colors import (
           EMPTY,
           NA_COLOUR,
           NA_GREY,
           OTHER_GREY,
           UNCOLOURED,
           category_colour_map,
           category_order,
           category_rgb,
           dark_end_lift,
           hex_colour,
           image_colours,
           lifted,
           natural_order,
           relative_luminance,
)
from cellspec_sc.display._html import channels_html, overview_html, table_html
from cellspec_sc.display._numbers import format_number
from cellspec_sc.display._ranges import WINDOW_PERCENTILES, robust_window
from cellspec_sc.display._text import LABEL_LIMIT, short_name, wrapped

__all__ = ["EMPTY", "LABEL_LIMIT", "NA_COLOUR", "NA_GREY", "OTHER_GREY", "STYLE_FIELD", "UNCOLOURED",
           "WINDOW_PERCENTILES",
           "CategoryStyle", "category_colour_map", "category_order", "category_rgb", "category_style",
           "channels_html", "dark_end_lift", "default_colours", "format_number", "hex_colour", "image_colours",
           "lifted", "natural_order", "overview_html", "present_labels", "relative_luminance", "robust_window",
           "short_name", "stored_style", "style_record", "table_html", "with_styles", "wrapped"]
