"""Values the spec allows but a target format cannot store, found before anything is written.

``.h5ad`` (h5py) cannot store a NUL character in text; zarr stores (AnnData and
SpatialData) make column names and image ids into file names, which most file
systems limit to 255 bytes (a region layer name may be longer by the spec's
pattern). The bridges refuse such objects with :class:`~cellspec_sc.errors.Unstorable`
before writing; :func:`cellspec_sc.validate` reports them as the ``portability``
warning (a note, never a failure).

>>> import cellspec_sc as cs
>>> x = cs.example()
>>> cells = x.cells.copy()
>>> cells.loc[3, "cell_id"] = "c\\x00d"
>>> unstorable_text(x.replace(cells=cells))
"cells.cell_id row 3 holds a NUL character ('c\\\\x00d')"
>>> unstorable_text(x) is None
True
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from cellspec_sc.errors import Unstorable
from cellspec_sc.spec import (
    column_names,
    column_values,
    is_arrow_text,
    python_values,
    spec_type_of,
    without_repeated_names,
)

NAME_MAX_BYTES = 255
TABLES = ("cells", "dictionary", "images", "channels", "adjacency")
RULE = ("every target format can store the object: no NUL character in text (.h5ad), no column name or "
        f"image_id longer than {NAME_MAX_BYTES} bytes (zarr stores make them file names)")


def _tables(x: Any) -> list[tuple[str, pd.DataFrame]]:
    return [(name, frame) for name in TABLES if isinstance(frame := getattr(x, name, None), pd.DataFrame)]


Columns = Callable[[str, pd.DataFrame], Iterable[tuple[Any, Any]]]
"""(name, values) of each column of a table whose name is not duplicated (values as
:func:`~cellspec_sc.spec.column_values` gives them), given the table's name and frame."""


def unique_columns(table: str, frame: pd.DataFrame) -> list[tuple[Any, Any]]:
    """:data:`Columns` straight from the frame (validation passes the columns its checks already made)."""
    return without_repeated_names(column_values(frame))


def unstorable_text(x: Any, columns: Columns = unique_columns) -> str | None:
    """Where ``x`` holds text with a NUL character (the first such value), or None."""
    for table, frame in _tables(x):
        for column, values in columns(table, frame):
            arrow = is_arrow_text(values)
            if not arrow and (_holds_no_text(values) or spec_type_of(values) != "character"):
                continue
            text = values if arrow else pd.Series(values, copy=False).astype("string").array
            if not _any_nul_byte(text):
                continue
            found = pd.Series(text, copy=False).str.contains("\x00", regex=False).fillna(False).to_numpy(dtype=bool)
            if found.any():
                row = int(found.argmax())
                return f"{table}.{column} row {row} holds a NUL character ({values[row]!r})"
    return None


def _holds_no_text(values: Any) -> bool:
    """Whether a column's values are a numpy array of numbers (or dates): no text, without asking for its spec type."""
    return isinstance(values, np.ndarray) and values.dtype.kind in "biufcmM"


_OFFSET_FORMATS = {pa.string(): "i", pa.large_string(): "q"}


def _any_nul_byte(text: pd.api.extensions.ExtensionArray) -> bool:
    """Whether a NUL byte is among the bytes of the values of a text column (one pass over each chunk's
    bytes at memory speed; UTF-8 holds byte 0 only for the NUL character). Only the bytes between a chunk's
    first and last offset are read: Arrow pads a data buffer (an empty column has 8 zero bytes) and a slice
    shares its parent's. A missing value may still own bytes: a True is checked value by value, a False is
    certain.

    >>> [_any_nul_byte(pd.array(values, dtype="string")) for values in (["a", None, "b"], ["a\\x00"], [])]
    [False, True, False]
    """
    arrow = pa.array(text) if is_arrow_text(text) else pa.array(text, from_pandas=True)
    for chunk in arrow.chunks if isinstance(arrow, pa.ChunkedArray) else [arrow]:
        offsets_format = _OFFSET_FORMATS.get(chunk.type)
        if offsets_format is None:
            return True  # another layout (string views): checked value by value
        _, offsets, data = chunk.buffers()
        if data is None or not len(chunk):
            continue
        ends = memoryview(offsets).cast("B").cast(offsets_format)  # two offsets read, no array made
        first, last = ends[chunk.offset], ends[chunk.offset + len(chunk)]
        if last > first and np.frombuffer(data, np.uint8, last - first, first).min() == 0:
            return True
    return False


def unstorable_name(x: Any, limit: int = NAME_MAX_BYTES, columns: Columns = unique_columns) -> str | None:
    """A column name or image id of ``x`` longer than ``limit`` bytes (the first), or None."""
    image_ids = None
    for table, frame in _tables(x):
        for column in map(str, column_names(frame)):  # every name, repeated ones too
            if _longer_than(column, limit):
                return f"{table} column {column[:40]!r}... is {len(os.fsencode(column))} bytes long"
        if table == "images" and "image_id" in frame.columns:
            image_ids = dict(columns(table, frame)).get("image_id")
    for value in _present_values(image_ids) if image_ids is not None else ():
        if _longer_than(value := str(value), limit):
            return f"image_id {value[:40]!r}... is {len(os.fsencode(value))} bytes long"
    return None


def _present_values(values: Any) -> list[Any]:
    """The values of a column (as :func:`~cellspec_sc.spec.column_values` gives them) that are not missing, as
    Python objects (Arrow text read by Arrow)."""
    return [value for value in python_values(values) if value is not None]


def _longer_than(name: str, limit: int) -> bool:
    """Whether ``name`` as a file name takes more than ``limit`` bytes: never when it has at most ``limit / 4``
    characters (UTF-8 writes a character in at most four bytes), which spares encoding the usual short names.

    >>> _longer_than("é" * 128, 255), _longer_than("é" * 127, 255), _longer_than("a" * 255, 255)
    (True, False, False)
    """
    return len(name) * 4 > limit and len(os.fsencode(name)) > limit


def refuse_unstorable(x: Any, target: str | os.PathLike, format_name: str, *, text: bool, names: bool) -> None:
    """Raise Unstorable when ``x`` holds what ``format_name`` cannot store (``text``: NUL characters,
    ``names``: names longer than a file name may be)."""
    found = (unstorable_text(x) if text else None) or (unstorable_name(x, _name_max(target)) if names else None)
    if found:
        raise Unstorable(f"{target}: {found}, which {format_name} cannot store; nothing was written "
                         "(a cellspec directory can hold it)")


def _name_max(target: str | os.PathLike) -> int:
    parent = os.path.dirname(os.path.abspath(target))
    while parent and not os.path.isdir(parent):
        parent = os.path.dirname(parent)
    try:
        return min(NAME_MAX_BYTES, os.pathconf(parent, "PC_NAME_MAX"))
    except (OSError, ValueError):
        return NAME_MAX_BYTES


def portability_problems(x: Any, columns: Columns = unique_columns) -> list[str]:
    """Every kind of value of ``x`` some target format cannot store (for validate's note)."""
    found = [(unstorable_text(x, columns), "an .h5ad file cannot store it"),
             (unstorable_name(x, columns=columns), "zarr stores (AnnData, SpatialData) cannot use it as a file name")]
    return [f"{what}: {why}" for what, why in found if what]
