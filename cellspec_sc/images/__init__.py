"""The image beside the cells: opening OME-TIFF and OME-Zarr images lazily, checking them against a cells
object, and reading them down for display.

>>> import tempfile, numpy as np, tifffile
>>> path = tempfile.mkdtemp() + "/one.ome.tif"
>>> tifffile.imwrite(path, np.zeros((1, 4, 6), np.uint8), metadata={"axes": "CYX"})
>>> open_image(path).shape
(1, 4, 6)
"""

from cellspec_sc.images._checks import ImageInput, check_image, checked_images, file_sha256
from cellspec_sc.images._image import Image
from cellspec_sc.images._open import open_image
from cellspec_sc.images._render import COMPOSITE_COLOURS, composite, read_downsampled, windowed

__all__ = ["COMPOSITE_COLOURS", "Image", "ImageInput", "check_image", "checked_images", "composite",
           "file_sha256", "open_image", "read_downsampled", "windowed"]
