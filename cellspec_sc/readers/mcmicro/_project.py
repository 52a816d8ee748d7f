"""An MCMICRO project folder as the pipeline leaves it, and what a read finds in it.

MCMICRO writes one folder per sample: ``markers.csv`` (the channels, in channel order) at its top,
``registration/<sample>.ome.tif`` (the stitched and registered image, whose OME-XML gives the pixel size and the
image size) and ``quantification/<image>--<segmentation>_<mask>.csv``, the mcquant tables. A table read from such a
folder takes the side files the user did not give from it: ``markers.csv`` unless ``markers_csv=`` is given, the
registered image of the table's image unless ``image=`` or ``pixel_size=`` is given (the image is then an input of
the read and is hashed for provenance). The project folder itself, or its ``quantification/`` folder, is read as
its one mcquant table, or, when it holds tables of several images (a TMA's cores), as one object of all of them
(:mod:`~cellspec_sc.readers._folder`). The tables of several masks of one segmentation (``<image>--unmicst_cell.csv``
and ``<image>--unmicst_nuclei.csv``: mcquant run with several masks) are read as one object, their features joined by
cell id (:func:`compartment_groups`); other tables of one image (two segmentations) are refused, naming them.

>>> import tempfile
>>> project = Path(tempfile.mkdtemp()) / "exemplar-001"
>>> (project / "quantification").mkdir(parents=True)
>>> _ = (project / "markers.csv").write_text("cycle,marker_name\\n1,DNA_1\\n")
>>> _ = (project / "quantification" / "exemplar-001--unmicst_cell.csv").write_text("CellID,X_centroid,Y_centroid\\n")
>>> found = project_files(project, markers_csv=None, image=None, pixel_size=0.65)
>>> found.table.name, found.markers_csv.name, found.image, found.found
('exemplar-001--unmicst_cell.csv', 'markers.csv', None, ('markers.csv',))
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cellspec_sc.errors import InputError
from cellspec_sc.readers._recognise import mcquant_tables, other_tool_advice
from cellspec_sc.readers._table import listed
from cellspec_sc.readers.mcmicro._plan import mask_compartment, segmentation_of, split_file_name
from cellspec_sc.spec import vocabulary

LOG = logging.getLogger("cellspec_sc.readers")

MARKERS = "markers.csv"
TABLES = "quantification"
REGISTRATION = "registration"
# The registered image's names MCMICRO writes, for an image (sample) name.
IMAGE_SUFFIXES = (".ome.tif", ".ome.tiff")


@dataclass(frozen=True)
class ProjectFiles:
    """The table to read and its side files: given by the user, or found in the project folder (``found``: their
    paths relative to the project, for provenance)."""

    table: Path
    markers_csv: str | os.PathLike | None
    image: str | os.PathLike | None
    found: tuple[str, ...] = ()


def project_files(path: Path, *, markers_csv: str | os.PathLike | None, image: str | os.PathLike | None,
                  pixel_size: object) -> ProjectFiles:
    """The table at ``path`` (or the one mcquant table of the project folder ``path``) with the side files the user
    gave, completed from the MCMICRO project folder the table is in (see the module docstring); logged. A folder of
    tables of several images is returned as it is: each of its tables finds its side files when it is read."""
    table = tables_to_read(path) if path.is_dir() else path
    if table.is_dir():
        return ProjectFiles(table, markers_csv, image)
    project = table.parent.parent if table.parent.name == TABLES else None
    if project is None:
        return ProjectFiles(table, markers_csv, image)
    found = []
    if markers_csv is None and (project / MARKERS).is_file():
        markers_csv = project / MARKERS
        found.append(MARKERS)
    if image is None and pixel_size is None:
        image = registered_image(project, table)
        if image is not None:
            found.append(image.relative_to(project).as_posix())
    if found:
        LOG.info("%s: found %s in the MCMICRO project folder %s", table.name, " and ".join(found), project.name)
    return ProjectFiles(table, markers_csv, image, tuple(found))


def tables_to_read(folder: Path) -> Path:
    """The one mcquant table of a project folder (under ``quantification/``) or of a ``quantification/`` folder, or
    the folder that holds the tables when they are of several images (a TMA's cores, a folder of slides' tables:
    read as one object, the masks of one segmentation joined); refuses a folder with none, or with several tables of
    one image that are not masks of one segmentation, naming them."""
    tables = mcquant_tables(folder)
    if not tables:
        advice = other_tool_advice(folder, "mcmicro")  # a steinbock or CellProfiler folder names its reader
        if advice is not None:
            raise InputError(advice)
        raise InputError(f"{folder.name}: no mcquant table (a CSV with CellID and centroid columns) in the folder or "
                         f"its {TABLES}/ folder; pass the table itself")
    if len(tables) == 1:
        return tables[0]
    images = [image_of(t) for t in tables]
    repeated = [t.name for t, image in zip(tables, images, strict=True) if images.count(image) > 1]
    if not repeated or compartment_groups(tables) is not None:
        return tables[0].parent
    raise InputError(f"{folder.name}: {len(repeated)} mcquant tables of one image in {tables[0].parent.name}/ "
                     f"({listed(repeated)}), not masks of one segmentation that measure different compartments "
                     "(those are read as one object, joined by CellID); pass the one to read: "
                     f"read_mcmicro({str(tables[0].parent / repeated[0])!r}) or `cellspec import mcmicro "
                     f"{tables[0].parent / repeated[0]} OUT`")


def compartment_groups(tables: Sequence[Path]) -> list[list[Path]] | None:
    """The tables of a folder grouped by the compartment their mask measures, in the spec's order of compartments
    (``cell`` first), when the tables of each image are the masks of one segmentation and measure different
    compartments (mcquant run with several masks: ``<image>--unmicst_cell.csv`` and ``<image>--unmicst_nuclei.csv``);
    None when an image has tables that are not (two segmentations, a mask of no known compartment, two masks of one
    compartment). A folder of one table per image is one group.

    >>> names = ["a--unmicst_nuclei.csv", "a--unmicst_cell.csv", "b--unmicst_cell.csv", "b--unmicst_nuclei.csv"]
    >>> [[p.name for p in group] for group in compartment_groups([Path(n) for n in names])]
    [['a--unmicst_cell.csv', 'b--unmicst_cell.csv'], ['a--unmicst_nuclei.csv', 'b--unmicst_nuclei.csv']]
    >>> compartment_groups([Path("a--unmicst_cell.csv"), Path("a--ilastik_cell.csv")]) is None
    True
    """
    keys = {t: (image_of(t), segmentation_of(_plain_name(t)), mask_compartment(split_file_name(_plain_name(t))[1]))
            for t in tables}
    by_image: dict[str, list[tuple[str | None, str | None]]] = {}
    for image, segmentation, compartment in keys.values():
        by_image.setdefault(image, []).append((segmentation, compartment))
    if all(len(found) == 1 for found in by_image.values()):
        return [list(tables)]
    for found in by_image.values():
        segmentations, compartments = {s for s, _ in found}, [c for _, c in found]
        if len(segmentations) > 1 or None in compartments or len(set(compartments)) < len(compartments):
            return None
    order = vocabulary().compartments
    present = sorted({c for _, _, c in keys.values()}, key=order.index)
    return [sorted((t for t in tables if keys[t][2] == c), key=lambda t: t.name) for c in present]


def _plain_name(table: Path) -> str:
    """The file name without ``.gz``."""
    return table.name[:-3] if table.name.lower().endswith(".gz") else table.name


def image_of(table: Path) -> str:
    """The image a table's file name names (``<image>--<segmentation>_<mask>.csv[.gz]``)."""
    return split_file_name(_plain_name(table))[0]


def registered_image(project: Path, table: Path) -> Path | None:
    """``registration/<image>.ome.tif`` of the table's image in the project, or None."""
    candidates = [project / REGISTRATION / f"{image_of(table)}{suffix}" for suffix in IMAGE_SUFFIXES]
    return next((c for c in candidates if c.is_file()), None)
