"""Read HALO (Indica Labs) object data tables into a CellSpec.

HALO's grammar (column names, compartments, shapes and their units) is data in
:mod:`cellspec_sc.readers.halo._plan`; the adapter that executes a plan is :class:`HaloAdapter`. See
``docs/readers.md``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from cellspec_sc.model import CellSpec
from cellspec_sc.readers._pipeline import check_reader_arguments, read_export
from cellspec_sc.readers.halo import _plan as grammar  # the tool's grammar as data (docs tables)
from cellspec_sc.readers.halo._adapter import HaloAdapter

__all__ = ["HaloAdapter", "grammar", "read_halo"]


def read_halo(
    path: str | os.PathLike,
    *,
    pixel_size: float | Mapping[str, float] | None = None,
    image_id: str | None = None,
    sample_id: str | None = None,
    marker_map: Mapping[str, str] | None = None,
    encoding: str | None = None,
) -> CellSpec:
    """Read a HALO object data table (CSV, one row per object, several images per file) into a CellSpec.

    Parameters
    ----------
    path
        The object data table, or a folder of them (one per image), read as one object (docs/readers.md, "Folders
        of one table per image").
    pixel_size
        Micrometres per pixel, a number or ``{image: size}`` (image: the file name of ``Image Location``). HALO's
        bounding boxes are in pixels and the table carries no pixel size: without it the reader stops.
    image_id
        Renames the single image of the file (default: the file name of ``Image Location``, else the table's name).
    sample_id
        Defaults to the image id.
    marker_map
        Renames markers (the original is kept in ``marker_source``).
    encoding
        Defaults to UTF-8 (a byte order mark is skipped), or the Windows code page with a warning.

    Returns
    -------
    The validated object: centroids are the bounding boxes' centres; ``<dye> Positive ... Classification``
    columns and text columns (``Analysis Region``, ``Algorithm Name`` ...) are cells columns.

    Raises
    ------
    InputError
        When the table cannot be read as HALO object data, naming file, line, column and rule.

    Examples
    --------
    >>> import cellspec_sc as cs
    >>> x = cs.read_halo("object_results.csv", pixel_size=0.5)  # doctest: +SKIP
    """
    check_reader_arguments("read_halo", path, pixel_size=pixel_size, image_id=image_id, sample_id=sample_id,
                           marker_map=marker_map)
    adapter = HaloAdapter(pixel_size=pixel_size, image_id=image_id, sample_id=sample_id, marker_map=marker_map,
                          encoding=encoding)
    return read_export(adapter, path)
