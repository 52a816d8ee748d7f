"""How cells look on screen, shared by the notebook widgets and the Luxar bridge: colours, robust display
ranges and HTML fragments.

>>> hex_colour((1.0, 0.0, 0.0))
'#ff0000'
"""

from cellspec_sc.display._colors import (
           EMPTY,
           NA_COLOUR,
           NA_GREY,
           OTHER_GREY,
           UNCOLOURED,
           category_colour_map,
           category_order,
           category_rgb,
           hex_colour,
           image_colours,
)
from cellspec_sc.display._html import channels_html, overview_html, table_html
from cellspec_sc.display._ranges import robust_range, robust_window

__all__ = ["EMPTY", "NA_COLOUR", "NA_GREY", "OTHER_GREY", "UNCOLOURED", "category_colour_map", "category_order",
           "category_rgb", "channels_html", "hex_colour", "image_colours", "overview_html", "robust_range",
           "robust_window", "table_html"]
