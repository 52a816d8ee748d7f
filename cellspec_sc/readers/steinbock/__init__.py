"""Read a steinbock (imaging mass cytometry) output folder into a CellSpec.

steinbock writes one CSV per image and kind of measurement (``intensities/``, ``regionprops/``,
``neighbors/``), indexed by the mask label ``Object``, beside ``panel.csv`` and ``images.csv``. The folder's
layout and the side files are data in :mod:`cellspec_sc.readers.steinbock._plan`; the adapter that executes a
plan is :class:`SteinbockAdapter`. See ``docs/readers.md``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from cellspec_sc.model import CellSpec
from cellspec_sc.readers._pipeline import check_reader_arguments, read_export
from cellspec_sc.readers.steinbock import _plan as grammar  # the tool's grammar as data (docs tables)
from cellspec_sc.readers.steinbock._adapter import SteinbockAdapter

__all__ = ["SteinbockAdapter", "grammar", "read_steinbock"]


def read_steinbock(
    folder: str | os.PathLike,
    *,
    pixel_size: float | Mapping[str, float] | None = None,
    sample_id: str | None = None,
    marker_map: Mapping[str, str] | None = None,
    aggregation: str | None = None,
    neighbors: bool = True,
    neighbors_method: str | None = None,
    encoding: str | None = None,
    segmentation: str | None = None,
) -> CellSpec:
    """Read a steinbock output folder (``intensities/``, ``regionprops/``, ``neighbors/``, ``panel.csv``,
    ``images.csv``) into a CellSpec, as pipelines leave it: the tables may be in a segmentation's sub-folder
    (``deepcell/intensities``), ``images.csv`` under ``img/``, ``panel.csv`` written with a pandas index column, or
    in the early layout (``cell_intensities/``, ``cell_regionprops/``, ``cell_graphs/`` with ``Object1``/``Object2``).

    Parameters
    ----------
    folder
        steinbock's output folder.
    pixel_size
        Micrometres per pixel (a number or ``{image: size}``); else ``images.csv``'s
        ``acquisition_width_um / width_px``. Without either the reader stops.
    sample_id
        Defaults to the image id.
    marker_map
        Renames markers (the original is kept in ``marker_source``).
    aggregation
        The ``--aggr`` steinbock measured intensities with. The files do not say: without it they are read as the
        mean (steinbock's default) with a warning, and provenance records the assumption.
    neighbors
        Read ``neighbors/<image>.csv`` into the adjacency table: one row per unordered pair,
        ``shared_boundary`` 0 (steinbock does not measure it).
    neighbors_method
        How the neighbours were measured: an adjacency method of the spec (``"mask_touching"`` ...), or
        steinbock's ``--type`` (``"borders"``, ``"expansion"``, ``"centroids"``: distance-limited or expanded
        neighbours, which no method of the spec describes, so they are left out with a warning). The files do not
        say: without it they are read as mask_touching with a warning, and provenance records the assumption.
    encoding
        Defaults to UTF-8, or the Windows code page (cp1252) with a warning when a file is not UTF-8.
    segmentation
        The sub-folder whose tables to read (``"deepcell"``) when several hold per-image tables.

    Returns
    -------
    The validated object.

    Raises
    ------
    InputError
        When the folder cannot be read, naming file, line, column and rule.

    Examples
    --------
    >>> import cellspec_sc as cs
    >>> x = cs.read_steinbock("steinbock_output/", pixel_size=1.0)  # doctest: +SKIP
    """
    check_reader_arguments("read_steinbock", folder, pixel_size=pixel_size, sample_id=sample_id, marker_map=marker_map,
                           flags={"neighbors": neighbors})
    adapter = SteinbockAdapter(pixel_size=pixel_size, sample_id=sample_id, marker_map=marker_map,
                               aggregation=aggregation, neighbors=neighbors, neighbors_method=neighbors_method,
                               encoding=encoding, segmentation=segmentation)
    return read_export(adapter, folder)
