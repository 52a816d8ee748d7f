"""Read QuPath "Export measurements" tables of cells or detections (spec sections 3-8).

QuPath writes one row per object, tab-separated (comma-separated when the file name ends in ``.csv``).
Fixed columns identify the object (``Image``, ``Object ID``, ``Object type``, ``Classification`` or
``Class``, ``Parent``, ``Centroid X µm`` ...); every other column is a measurement whose name says what
it is, in one of the styles QuPath has used:

=========================  ==========================================  ===========================
style                      example                                     written by
=========================  ==========================================  ===========================
cell detection             ``Nucleus: DAPI mean``, ``Cell: Area``       cell detection (<= 0.4 names)
channel first              ``CD3: Nucleus: Mean``                      object measurements <= 0.5
compartment first          ``Nucleus: CD3: Mean``                      object measurements >= 0.6
shape                      ``Cell: Area µm^2``, ``Nucleus: Length µm``  shape features (>= 0.4)
=========================  ==========================================  ===========================

The grammar (column names, header styles, object types) is data in :mod:`cellspec_sc.readers.qupath._plan`;
the adapter that executes a plan is :class:`QuPathAdapter`. See ``docs/readers.md``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from cellspec_sc.model import CellSpec
from cellspec_sc.readers._pipeline import check_reader_arguments, read_export
from cellspec_sc.readers.qupath import _plan as grammar  # the tool's grammar as data (docs tables)
from cellspec_sc.readers.qupath._adapter import QuPathAdapter

__all__ = ["QuPathAdapter", "grammar", "read_qupath"]


def read_qupath(
    path: str | os.PathLike,
    *,
    pixel_size: float | Mapping[str, float] | None = None,
    image_id: str | None = None,
    sample_id: str | None = None,
    marker_map: Mapping[str, str] | None = None,
    object_types: Sequence[str] | None = ("Cell", "Detection"),
    encoding: str | None = None,
) -> CellSpec:
    """Read a QuPath measurement export (TSV, or CSV when the name ends in ``.csv``) into a CellSpec.

    Parameters
    ----------
    path
        The export, or a folder of them (one per image), read as one object (docs/readers.md, "Folders of one
        table per image").
    pixel_size
        Micrometres per pixel, or ``{image: size}``; needed unless the file has both micrometre and pixel
        centroids, from which it is derived.
    image_id
        Renames the single image of the file (default: the ``Image`` column, else the file name).
    sample_id
        Defaults to the image id.
    marker_map
        Renames markers (the original is kept in ``marker_source``).
    object_types
        Rows whose ``Object type`` is not one of these are skipped (``None`` keeps every row); kept rows that
        are not cells or detections (annotations, tiles) give a :class:`~cellspec_sc.readers.ReaderWarning`.
    encoding
        Defaults to UTF-8, or the Windows code page (cp1252) with a warning when the file is not UTF-8.

    Returns
    -------
    The validated object.

    Raises
    ------
    InputError
        When the file cannot be read as a QuPath export, naming file, line, column and rule.

    Examples
    --------
    >>> import cellspec_sc as cs
    >>> x = cs.read_qupath("measurements.tsv", pixel_size=0.5)  # doctest: +SKIP
    """
    check_reader_arguments("read_qupath", path, pixel_size=pixel_size, image_id=image_id, sample_id=sample_id,
                           marker_map=marker_map, object_types=object_types)
    adapter = QuPathAdapter(pixel_size=pixel_size, image_id=image_id, sample_id=sample_id, marker_map=marker_map,
                            object_types=object_types, encoding=encoding)
    return read_export(adapter, path)
