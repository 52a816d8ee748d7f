"""Read inForm (Akoya Vectra/Polaris) ``cell_seg_data.txt`` tables into a CellSpec.

inForm's grammar (column names, compartments, statistics, units, missing values) is data in
:mod:`cellspec_sc.readers.inform._plan`; the adapter that executes a plan is :class:`InformAdapter`. See
``docs/readers.md``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from cellspec_sc.model import CellSpec
from cellspec_sc.readers._pipeline import check_reader_arguments, read_export
from cellspec_sc.readers.inform import _plan as grammar  # the tool's grammar as data (docs tables)
from cellspec_sc.readers.inform._adapter import InformAdapter

__all__ = ["InformAdapter", "grammar", "read_inform"]


def read_inform(
    path: str | os.PathLike,
    *,
    pixel_size: float | Mapping[str, float] | None = None,
    position_unit: str | None = None,
    image_id: str | None = None,
    sample_id: str | None = None,
    marker_map: Mapping[str, str] | None = None,
    encoding: str | None = None,
) -> CellSpec:
    """Read an inForm ``cell_seg_data.txt`` table (tab-separated; one field, or several merged) into a CellSpec.

    Parameters
    ----------
    path
        The table, or a folder of them (a batch export: one per field), read as one object (docs/readers.md,
        "Folders of one table per image").
    pixel_size
        Micrometres per pixel, a number or ``{sample name: size}``; inForm tables carry none, so without it the
        reader stops.
    position_unit
        ``"pixels"`` or ``"microns"``: the unit of ``Cell X Position``. Needed only when no header names its unit
        (``Nucleus Area (pixels)``, ``(square microns)``); refused when it contradicts them.
    image_id
        Renames the single field of the file (default: ``Sample Name``, else the file name).
    sample_id
        Defaults to the image id.
    marker_map
        Renames markers (the original is kept in ``marker_source``).
    encoding
        Defaults to UTF-8, or the Windows code page (cp1252) with a warning when the file is not UTF-8.

    Returns
    -------
    The validated object: ``#N/A`` is missing (NA), percentages written as text (``Confidence``) are numbers in
    cells columns, phenotypes and tissue categories are cells columns.

    Raises
    ------
    InputError
        When the table cannot be read as inForm cell segmentation data, naming file, line, column and rule.

    Examples
    --------
    >>> import cellspec_sc as cs
    >>> x = cs.read_inform("Core[1,5,6,1]_cell_seg_data.txt", pixel_size=0.5)  # doctest: +SKIP
    """
    check_reader_arguments("read_inform", path, pixel_size=pixel_size, image_id=image_id, sample_id=sample_id,
                           marker_map=marker_map)
    adapter = InformAdapter(pixel_size=pixel_size, position_unit=position_unit, image_id=image_id,
                            sample_id=sample_id, marker_map=marker_map, encoding=encoding)
    return read_export(adapter, path)
