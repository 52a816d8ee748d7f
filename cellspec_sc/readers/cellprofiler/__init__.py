"""Read CellProfiler ExportToSpreadsheet tables (an object table such as ``Cells.csv``, with ``Image.csv`` and
``Object_relationships.csv`` beside it) into a CellSpec.

CellProfiler's grammar (file and column names, measurement names) is data in
:mod:`cellspec_sc.readers.cellprofiler._plan`; the adapter that executes a plan is :class:`CellProfilerAdapter`.
See ``docs/readers.md``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from cellspec_sc.model import CellSpec
from cellspec_sc.readers._pipeline import check_reader_arguments, read_export
from cellspec_sc.readers.cellprofiler import _plan as grammar  # the tool's grammar as data (docs tables)
from cellspec_sc.readers.cellprofiler._adapter import CellProfilerAdapter

__all__ = ["CellProfilerAdapter", "grammar", "read_cellprofiler"]


def read_cellprofiler(
    path: str | os.PathLike,
    *,
    pixel_size: float | Mapping[str, float] | None = None,
    objects: str | None = None,
    compartment: str | None = None,
    image_table: str | os.PathLike | None = None,
    relationships: str | os.PathLike | None = None,
    neighbors: bool = True,
    neighbors_method: str | None = None,
    sample_id: str | None = None,
    marker_map: Mapping[str, str] | None = None,
    encoding: str | None = None,
) -> CellSpec:
    """Read a CellProfiler object table (or the folder ExportToSpreadsheet wrote) into a CellSpec.

    Parameters
    ----------
    path
        An object table (``Cells.csv``, ``MyExpt_Nuclei.csv``), or the folder holding it.
    pixel_size
        Micrometres per pixel, a number or ``{image: size}``; CellProfiler's tables carry none, so without it the
        reader stops.
    objects
        The object set to read when the folder has several object tables (``"Cells"``).
    compartment
        The spec compartment of the objects' measurements; default from the object name (Cells, Nuclei,
        Cytoplasm), else ``"cell"`` with a warning.
    image_table
        The per-image table (default: ``<prefix>Image.csv`` beside the object table): image ids from its first
        ``FileName_*`` column.
    relationships
        ``Object_relationships.csv`` (default: the one beside the object table).
    neighbors
        Read the ``Neighbors`` relationships of the objects into the adjacency table (only touching ones:
        ``Neighbors_*_Adjacent`` columns; expanded or distance-limited neighbours are left out with a warning).
    neighbors_method
        The adjacency method when the table has no ``Neighbors_*_<method>`` column to say it (else the neighbours
        are left out with a warning).
    sample_id
        Defaults to the image id.
    marker_map
        Renames markers (the image names of ``Intensity_*_<image>``; the original is kept in ``marker_source``).
    encoding
        Defaults to UTF-8, or the Windows code page (cp1252) with a warning when the file is not UTF-8.

    Returns
    -------
    The validated object.

    Raises
    ------
    InputError
        When the export cannot be read, naming file, line, column and rule.

    Examples
    --------
    >>> import cellspec_sc as cs
    >>> x = cs.read_cellprofiler("cp_output/", objects="Cells", pixel_size=1.0)  # doctest: +SKIP
    """
    check_reader_arguments("read_cellprofiler", path, pixel_size=pixel_size, sample_id=sample_id,
                           marker_map=marker_map, flags={"neighbors": neighbors})
    adapter = CellProfilerAdapter(pixel_size=pixel_size, objects=objects, compartment=compartment,
                                  image_table=image_table, relationships=relationships, neighbors=neighbors,
                                  neighbors_method=neighbors_method, sample_id=sample_id, marker_map=marker_map,
                                  encoding=encoding)
    return read_export(adapter, path)
