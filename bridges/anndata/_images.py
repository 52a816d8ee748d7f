"""Images in the AnnData, as squidpy and scanpy expect them: ``uns["spatial"][<image_id>]`` with
``images["hires"]`` (the image read down to a longest side of at most :data:`HIRES_SIDE` pixels, every channel
windowed to 0..1 by the display rule, shape (y, x, c)) and ``scalefactors`` mapping ``obsm["spatial"]``
(micrometres) to hires pixels; ``obs["image_id"]`` is the library key. ``metadata["channel_names"]`` names the
channels (pick one with squidpy's ``img_channel=``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from cellspec_sc.images import Image, read_downsampled, windowed
from cellspec_sc.model import CellSpec

HIRES_SIDE = 2000
LIBRARY_KEY = "image_id"


def spatial_uns(x: CellSpec, opened: Mapping[str, Image]) -> dict[str, Any]:
    """``uns["spatial"]`` for the opened images of ``x``."""
    return {image_id: _library(x, image_id, image) for image_id, image in opened.items()}


def _library(x: CellSpec, image_id: str, image: Image) -> dict[str, Any]:
    pixels, _ = read_downsampled(image, HIRES_SIDE)
    hires = np.stack([windowed(plane) for plane in pixels], axis=-1).astype(np.float32)
    pixel_size = float(x.images.loc[x.images["image_id"].astype(str) == image_id, "pixel_size"].iloc[0])
    per_um = hires.shape[1] / (image.width * pixel_size)  # hires pixels per micrometre
    area = x.cells.loc[x.cells["image_id"].astype(str) == image_id, "area"] if "area" in x.cells else pd.Series()
    area = pd.to_numeric(area, errors="coerce").dropna()
    diameter = float(2 * np.sqrt(area.median() / np.pi)) if len(area) else 10.0
    return {"images": {"hires": hires},
            "scalefactors": {"tissue_hires_scalef": per_um, "spot_diameter_fullres": diameter},
            "metadata": {"channel_names": list(image.channel_names), "source_image": str(image.path.name)}}
