"""What ``to_spatialdata`` stores besides the AnnData table: the keys and names it uses, the outline files it
carries in ``uns`` byte for byte, and the warning of the SpatialData bridge.

>>> decode_files({"paths": np.array(["a.geojson"], dtype=object), "f0": np.frombuffer(b"{}", np.uint8)})
{'a.geojson': b'{}'}
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

BRIDGE_VERSION = "1"
TABLE_KEY = "table"
REGION_KEY = "cs__region"  # the spec reserves cs__ for internal use, so no cells column has this name
INSTANCE_KEY = "cell_id"
UNS_KEY = "cellspec_spatialdata"
OUTLINE_FILES_KEY = "cellspec_outline_files"
ANNDATA_UNS_KEY = "cellspec"
ATTRS_KEY = "cellspec_sc"
OUTLINES_SUFFIX = "_outlines"
PIXEL_SUFFIX = "_px"
RADIUS_FALLBACK_KEY = "radius_is_fallback"
RADIUS_RULE = "sqrt(area / pi)"
FALLBACK_RULE = ("median radius of the image's cells with an area; one pixel (pixel_size) "
                 "if no cell of the image has an area")


class SpatialDataBridgeWarning(UserWarning):
    """Something of a SpatialData was not carried into the cellspec, or an outline did not match."""


def encode_files(files: Mapping[str, Path]) -> dict[str, Any]:
    """Outline files, byte for byte, as arrays anndata writes to zarr and h5ad."""
    out: dict[str, Any] = {"paths": np.array(list(files), dtype=object)}
    for i, path in enumerate(files.values()):
        out[f"f{i}"] = np.frombuffer(path.read_bytes(), dtype=np.uint8)
    return out


def decode_files(stored: Any) -> dict[str, bytes]:
    """The outline files stored by :func:`encode_files` (``{geometry_ref: bytes}``; empty when none)."""
    if not isinstance(stored, Mapping) or "paths" not in stored:
        return {}
    paths = [str(p) for p in np.asarray(stored["paths"]).tolist()]
    return {ref: np.asarray(stored[f"f{i}"], dtype=np.uint8).tobytes() for i, ref in enumerate(paths)}

