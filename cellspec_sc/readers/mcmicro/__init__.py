"""Read MCMICRO ``mcquant`` single-cell tables (``<image>--<segmentation>_<mask>.csv``) into a CellSpec.

mcquant's grammar (column, mask and file names) is data in :mod:`cellspec_sc.readers.mcmicro._plan`; the names
here besides :func:`read_mcmicro` are the ones other readers of mcquant tables (the AnnData bridge's presets)
share, so that a table means the same to both.

>>> split_file_name("exemplar-001--unmicst_cell.csv")
('exemplar-001', 'cell')
>>> mask_compartment("nucleiRingMask")
'cytoplasm'
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from cellspec_sc.model import CellSpec
from cellspec_sc.readers._pipeline import check_reader_arguments, read_export
from cellspec_sc.readers.mcmicro import _plan as grammar  # the tool's grammar as data (docs tables)
from cellspec_sc.readers.mcmicro._adapter import McquantAdapter
from cellspec_sc.readers.mcmicro._plan import SHAPES, classify_columns, mask_compartment, split_file_name

__all__ = ["SHAPES", "classify_columns", "grammar", "mask_compartment", "read_mcmicro", "split_file_name"]


def read_mcmicro(
    path: str | os.PathLike,
    *,
    pixel_size: float | None = None,
    image_id: str | None = None,
    sample_id: str | None = None,
    marker_map: Mapping[str, str] | None = None,
    markers_csv: str | os.PathLike | None = None,
    image: str | os.PathLike | None = None,
    strict: bool = False,
    encoding: str | None = None,
) -> CellSpec:
    """Read an mcquant table into a CellSpec.

    Parameters
    ----------
    path
        The mcquant table, or an MCMICRO project folder (or its ``quantification/`` folder) with one table, or with
        tables of several images (a TMA's cores: read as one object), or of several masks of one segmentation
        (``<image>--unmicst_cell.csv`` and ``<image>--unmicst_nuclei.csv``: their features joined by cell id, see
        ``docs/readers.md``). A table in a project folder takes ``markers.csv`` and ``registration/<image>.ome.tif``
        from it when ``markers_csv``, or ``image`` and ``pixel_size``, are not given (``provenance["parameters"]
        ["found_in_project"]``).
    pixel_size
        Micrometres per pixel; else the OME-XML ``PhysicalSizeX`` of ``image`` is used. Without either the
        reader stops.
    image_id
        Defaults to the part of the file name before ``--`` (or before ``_<mask>``).
    sample_id
        Defaults to the image id.
    marker_map
        Renames markers (the original is kept in ``marker_source``).
    markers_csv
        MCMICRO's ``markers.csv``: channel order and names. When it does not fit the table (it names none or only
        part of the marker columns, names channels without a column, or writes names in quotes the columns lack),
        a ReaderWarning says how (``strict=True``: refused).
    image
        An OME-TIFF, or a companion ``.ome.xml``, for the pixel size and the image size.
    strict
        Refuse what would otherwise be a warning about ``markers_csv``.
    encoding
        Defaults to UTF-8, or the Windows code page (cp1252) with a warning when the file is not UTF-8.

    Returns
    -------
    The validated object.

    Raises
    ------
    InputError
        When the table cannot be read, naming file, line, column and rule.

    Examples
    --------
    >>> import cellspec_sc as cs
    >>> x = cs.read_mcmicro("exemplar-001--unmicst_cell.csv", pixel_size=0.65)  # doctest: +SKIP
    """
    check_reader_arguments("read_mcmicro", path, pixel_size=pixel_size, image_id=image_id, sample_id=sample_id,
                           marker_map=marker_map, flags={"strict": strict})
    adapter = McquantAdapter(pixel_size=pixel_size, image_id=image_id, sample_id=sample_id, marker_map=marker_map,
                             markers_csv=markers_csv, image=image, strict=strict, encoding=encoding)
    return read_export(adapter, path)
