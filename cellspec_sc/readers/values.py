"""Checks and conversions of parsed values that every reader shares (spec sections 2 and 8).

Each check names the file, the line (data row i of a file is line i + 2) and the column of the first
offending value; the quick Arrow tests (:func:`has_missing_text`, :func:`ids_are_unique`) let readers
skip the slow path that names a problem when there is none.

>>> first_line_where(np.array([False, True]))
3
>>> arrow_objects(pa.chunked_array([["a", None]])).tolist()
['a', None]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc.errors import InputError
from cellspec_sc.model import all_distinct, arrow_code_array
from cellspec_sc.validation import duplicated_pairs


def first_line_where(mask: np.ndarray, rows: np.ndarray | None = None) -> int:
    """File line of the first True in ``mask`` (data row i of the file is line i + 2)."""
    pos = int(np.flatnonzero(mask)[0])
    return (int(rows[pos]) if rows is not None else pos) + 2


def check_finite_centroids(path: Path, values: np.ndarray, column: str, rows: np.ndarray | None) -> None:
    """x and y MUST be finite (section 2): name the first line that is not."""
    bad = ~np.isfinite(values)
    if bad.any():
        raise InputError(f"{path.name}: line {first_line_where(bad, rows)}, column {column!r}: centroid is missing "
                         f"or not finite ({int(bad.sum())} row(s)); every cell needs a finite centroid")


def check_unique_ids(path: Path, image_ids: np.ndarray, cell_ids: np.ndarray, column: str,
                     rows: np.ndarray | None) -> None:
    """(image_id, cell_id) MUST be unique: name both lines of the first duplicate."""
    keys = pd.DataFrame({"image": pd.Series(image_ids, dtype=object), "cell": pd.Series(cell_ids, dtype=object)})
    dup = keys.duplicated(keep=False).to_numpy()
    if dup.any():
        first = int(np.flatnonzero(dup)[0])
        image, cell = keys.iat[first, 0], keys.iat[first, 1]
        same = np.flatnonzero(((keys["image"] == image) & (keys["cell"] == cell)).to_numpy())
        lines = [(int(rows[p]) if rows is not None else int(p)) + 2 for p in same[:2]]
        raise InputError(f"{path.name}: lines {lines[0]} and {lines[1]}, column {column!r}: object id {cell!r} "
                         f"appears twice in image {image!r} ({int(dup.sum())} rows with duplicated ids)")


def first_repeat(values: Sequence[str]) -> tuple[int, int] | None:
    """Positions of the first value seen before, and of where it was first seen (None: all distinct).

    >>> first_repeat(["a", "b", "a", "b"]), first_repeat(["a", "b"])
    ((0, 2), None)
    """
    seen: dict[str, int] = {}
    for i, value in enumerate(values):
        if value in seen:
            return seen[value], i
        seen[value] = i
    return None


def check_missing_text(path: Path, values: np.ndarray, column: str, rows: np.ndarray | None) -> None:
    """Identifiers must be present: name the first line where one is missing or empty."""
    bad = pd.isna(pd.Series(values, dtype=object)).to_numpy() | (pd.Series(values, dtype=object) == "").to_numpy()
    if bad.any():
        raise InputError(f"{path.name}: line {first_line_where(bad, rows)}, column {column!r}: missing identifier")


def check_image_ids(path: Path, ids: pa.ChunkedArray | pa.Array, column: str, image: str,
                    rows: np.ndarray | None = None) -> np.ndarray:
    """The cell ids of one image MUST be present and unique: quick Arrow tests first, then the slow path
    (:func:`check_missing_text`, :func:`check_unique_ids`) that names the lines only when one fails. Returns the
    ids' dense codes (:func:`~cellspec_sc.validation.matrix_stats.arrow_code_array`), which validation reuses."""
    if has_missing_text(ids):
        check_missing_text(path, arrow_objects(ids), column, rows)
    codes = arrow_code_array(ids)
    if not all_distinct(codes):
        check_unique_ids(path, np.full(len(ids), image, dtype=object), arrow_objects(ids), column, rows)
    return codes


def has_missing_text(values: pa.ChunkedArray | pa.Array) -> bool:
    """Whether an Arrow text column has a missing or empty value (what :func:`check_missing_text` refuses)."""
    return bool(values.null_count) or bool(pc.any(pc.equal(values, "")).as_py())


def ids_are_unique(image_index: np.ndarray, cell_codes: np.ndarray) -> bool:
    """Whether (image, cell id) pairs are unique (``image_index``: the image of each row as a small integer;
    ``cell_codes``: the ids' dense codes, :func:`~cellspec_sc.validation.matrix_stats.arrow_code_array`). Only a
    quick yes; :func:`check_unique_ids` names the duplicates.

    >>> ids_are_unique(np.array([0, 1]), np.array([0, 0])), ids_are_unique(np.array([1, 1]), np.array([0, 0]))
    (True, False)
    """
    if all_distinct(cell_codes):  # unique over the whole file (QuPath's UUIDs), so within every image too
        return True
    return not duplicated_pairs(image_index, cell_codes).any()


def first_unknown(values: pa.ChunkedArray | pa.Array, known: pa.ChunkedArray | pa.Array) -> int | None:
    """Position of the first of ``values`` that is not one of ``known`` (a null is never known), or None.

    >>> first_unknown(pa.array(["1", "2", "7"]), pa.array(["1", "2"]))
    2
    """
    if isinstance(known, pa.ChunkedArray):
        known = known.combine_chunks() if known.num_chunks else pa.array([], type=known.type)
    position = pc.index(pc.is_in(values, value_set=known), False).as_py()
    return None if position < 0 else position


def arrow_objects(values: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Arrow strings as an object array (None for null), for the slow paths that name a problem."""
    if isinstance(values, pa.ChunkedArray) and values.num_chunks == 0:
        return np.zeros(0, dtype=object)
    return values.to_numpy(zero_copy_only=False).astype(object, copy=False)


def constant_strings(text: str, n: int) -> pa.ChunkedArray:
    """``n`` copies of ``text`` as an Arrow string column (dictionary-free, one buffer)."""
    return pa.chunked_array([pa.array([text], type=pa.string()).take(np.zeros(n, dtype=np.int64))])


def string_column(values: pa.ChunkedArray | pa.Array) -> pd.arrays.ArrowStringArray:
    """An Arrow text column as the pandas string array of the spec's ``character`` type (NA for null),
    laid out as :func:`~cellspec_sc.spec.types.as_spec_type` lays it out, without going through Python strings."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], type=values.type)
    return pd.arrays.ArrowStringArray(pa.chunked_array([values.cast(pa.large_string())]))


def pixel_size_for(image_ids: Sequence[str], pixel_size: float | Mapping[str, float] | None
                   ) -> dict[str, float] | None:
    """Per-image pixel size from a number or a {image_id: size} mapping (None when not given)."""
    if pixel_size is None:
        return None
    if isinstance(pixel_size, Mapping):
        missing = [i for i in image_ids if i not in pixel_size]
        if missing:
            unused = [k for k in pixel_size if k not in set(image_ids)]
            hint = (f"; unused key(s) {', '.join(map(repr, unused))} match no image (misspelt?)" if unused else "")
            raise InputError(f"pixel_size: no entry for image(s) {', '.join(map(repr, missing))}{hint}; the images "
                             f"are {', '.join(map(repr, image_ids))}")
        sizes = {i: float(pixel_size[i]) for i in image_ids}
    else:
        sizes = {i: float(pixel_size) for i in image_ids}
    bad = {i: s for i, s in sizes.items() if not (np.isfinite(s) and s > 0)}
    if bad:
        raise InputError(f"pixel_size must be a finite positive number of micrometres per pixel, got {bad}")
    return sizes


def positive_area(values: np.ndarray) -> np.ndarray:
    """``values`` (square micrometres) with non-positive or missing areas as NA (section 2: positive or NA)."""
    area = np.array(values, dtype=np.float64, copy=True)
    area[~(area > 0)] = np.nan
    return area
