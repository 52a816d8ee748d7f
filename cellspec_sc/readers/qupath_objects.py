"""Which rows of a QuPath export are cells: its ``Object type`` column (QuPath 0.2+), or in QuPath 0.1
exports, which have none, the class name that ``Name`` shows for an object without a name of its own.

Annotations, tiles and TMA cores are regions of the image, not cells: they are skipped by default (the
rows filter of :class:`~cellspec_sc.readers.qupath.QuPathAdapter`), refused in a 0.1 export, and kept
only when ``object_types=`` allows them, with a warning.

>>> sorted(OLD_CLASS_TYPES.values())
['Annotation', 'Root object', 'TMA core', 'Tile']
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc.errors import InputError
from cellspec_sc.readers.headers import Header
from cellspec_sc.readers.notices import notice
from cellspec_sc.readers.parsing import Parsed, read_as_text
from cellspec_sc.readers.values import first_line_where

CELL_TYPES = ("Cell", "Detection")
# QuPath 0.1's class names of the objects that are not cells -> the Object type later versions write.
OLD_CLASS_TYPES = {"PathAnnotationObject": "Annotation", "TMACoreObject": "TMA core", "PathTileObject": "Tile",
                   "PathRootObject": "Root object"}
NOT_CELLS = "annotations, tiles and TMA cores are regions of the image (their areas are whole regions), not cells"


def no_kept_rows(header: Header, column: str, object_types: Sequence[str]) -> InputError:
    """The refusal of an export with no row of the wanted object types, naming the types it has."""
    table = read_as_text(header, [column])
    found = ", ".join(sorted(str(v) for v in pc.unique(table.column(column)).to_pylist() if v is not None)[:6])
    return InputError(f"{header.path.name}: no rows with Object type in {list(object_types)} (found: {found}); "
                      "export cell or detection measurements, or pass object_types=")


def warn_not_cells(header: Header, parsed: Parsed) -> None:
    """Kept rows of other object types (annotations: whole regions; tiles) are not cells: say so."""
    column = header.find("Object type")
    if column is None:
        return
    counts = pc.value_counts(parsed.arrow(column)).to_pylist()
    other = {str(c["values"]): c["counts"] for c in counts if c["values"] not in CELL_TYPES}
    if other:
        found = ", ".join(f"{n} {t!r}" for t, n in other.items())
        notice(f"{header.path.name}: column {column!r}: {found} row(s) kept as cells because object_types allows "
               f"them; {NOT_CELLS}")


def check_old_object_names(header: Header, parsed: Parsed, object_types: Sequence[str] | None) -> None:
    """In a QuPath 0.1 export (no ``Object type``), rows whose ``Name`` is the class name of an annotation,
    tile or TMA core are refused unless ``object_types`` allows their type; then they are kept with a warning."""
    column = header.find("Name")
    if column is None or header.find("Object type") is not None:
        return
    names = parsed.arrow(column)
    regions = pc.fill_null(pc.is_in(names, value_set=pa.array(list(OLD_CLASS_TYPES))), False).to_numpy(
        zero_copy_only=False)
    if not regions.any():
        return
    types = Counter(OLD_CLASS_TYPES[str(n)] for n in pc.filter(names, pa.array(regions)).to_pylist())
    found = ", ".join(f"{n} {t!r}" for t, n in types.items())
    if object_types is None or set(types) <= set(object_types):
        notice(f"{header.path.name}: column {column!r}: {found} row(s) of a QuPath 0.1 export kept as cells because "
               f"object_types allows them; {NOT_CELLS}")
        return
    first = int(np.flatnonzero(regions)[0])
    raise InputError(f"{header.path.name}: line {first_line_where(regions, parsed.rows)}, column {column!r}: "
                     f"{names[first].as_py()!r} marks a QuPath 0.1 object that is not a cell (the export has no "
                     f"'Object type' column; {found} row(s)); {NOT_CELLS}: export detection measurements, or pass "
                     "object_types=None (CLI --all-objects) to keep them")


def refuse_tma_core_table(header: Header) -> None:
    """A QuPath 0.1 TMA core export (one row per core, with its ``Missing`` flag, no ``Object type``) has no
    cells: say so before its True/False flags are refused as numbers."""
    column = header.find("Missing")
    if column is not None and header.find("Object type") is None:
        raise InputError(f"{header.path.name}: line 1, column {column!r}: a QuPath TMA core table (one row per core, "
                         "with its Missing flag), not cells; export detection measurements instead")
