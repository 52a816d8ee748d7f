"""What the readers of one-table exports with several images per file share (HALO, inForm, CellProfiler): each
row's image from a text column (or the file name), checked cell ids, per-image pixel sizes, and the cells table of
pixel centroids.

>>> file_stem(Path("Core[1,5,6,1]_cell_seg_data.txt"))
'Core[1,5,6,1]_cell_seg_data'
>>> image_name("C:\\\\slides\\\\tumour 1.svs")
'tumour 1.svs'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath

import numpy as np
import pandas as pd
import pyarrow as pa

from cellspec_sc.errors import InputError
from cellspec_sc.model import arrow_code_array
from cellspec_sc.readers._table import (
    Header,
    Parsed,
    arrow_objects,
    check_finite_centroids,
    check_missing_text,
    check_unique_ids,
    constant_strings,
    has_missing_text,
    ids_are_unique,
    pixel_size_for,
    string_column,
)


def file_stem(path: Path) -> str:
    """The file name without its table extension (``.csv``, ``.tsv``, ``.txt``)."""
    name = path.name
    for suffix in (".csv", ".tsv", ".txt"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def image_name(value: str) -> str:
    """The file name of an image path as a tool wrote it (Windows or POSIX separators)."""
    return PureWindowsPath(value).name or value


@dataclass(frozen=True)
class ImageRows:
    """Each kept row's image: ``ids`` (Arrow strings), the images in order of first appearance (``order``) and each
    row's position in it (``index``)."""

    ids: pa.ChunkedArray | pa.Array
    order: list[str]
    index: np.ndarray


def image_rows(header: Header, parsed: Parsed, column: str | None, image_id: str | None, *,
               basename: bool = False) -> ImageRows:
    """The image of every row: ``image_id`` for a file of one image, else the text ``column`` (its file names when
    ``basename``), else the file name. Refuses a missing value, and ``image_id`` for a file of several images."""
    n = parsed.n
    if column is None:
        return _one_image(header, image_id, n)
    index, distinct = parsed.groups(column)
    if image_id is not None and len(distinct) + _any_missing(index) <= 1:  # the column holds one value (or none)
        return _one_image(header, image_id, n)
    _check_present(header, parsed, column, index, distinct)
    if image_id is not None:
        raise InputError(f"{header.path.name}: image_id={image_id!r} given, but column {column!r} names "
                         f"{len(distinct)} images ({', '.join(map(repr, distinct[:4]))}); leave image_id unset")
    names = [image_name(v) for v in distinct] if basename else distinct
    if len(set(names)) < len(names):  # two folders hold images of one name: keep the paths
        names = distinct
    ids = pa.array(names, type=pa.string()).take(pa.array(index))
    return ImageRows(ids, names, index)


def _one_image(header: Header, image_id: str | None, n: int) -> ImageRows:
    name = image_id if image_id is not None else file_stem(header.path)
    return ImageRows(constant_strings(name, n), [name], np.zeros(n, dtype=np.int64))


def grouped_rows(header: Header, parsed: Parsed, column: str) -> tuple[np.ndarray, list[str]]:
    """(each kept row's position among the distinct values of text ``column``, those values in order of first
    appearance: :meth:`Parsed.groups`), once no value is missing or empty (else the refusal names its line).

    >>> parsed = Parsed(3, None, {"image": pa.chunked_array([["b", "a", "b"]])}, {}, {}, np.zeros((3, 0)), {})
    >>> index, values = grouped_rows(Header(Path("t.csv"), ",", ("image",)), parsed, "image")
    >>> index.tolist(), values
    ([0, 1, 0], ['b', 'a'])
    """
    index, distinct = parsed.groups(column)
    _check_present(header, parsed, column, index, distinct)
    return index, distinct


def _any_missing(codes: np.ndarray) -> bool:
    return bool(len(codes)) and int(codes.min()) < 0


def _check_present(header: Header, parsed: Parsed, column: str, codes: np.ndarray, distinct: list[str]) -> None:
    """Refuse a missing or empty value of text ``column`` (``codes``, ``distinct``: :meth:`Parsed.groups`), naming
    its line."""
    if "" in distinct or _any_missing(codes):
        check_missing_text(header.path, parsed.text(column), column, parsed.rows)


def checked_cell_ids(header: Header, parsed: Parsed, column: str, rows: ImageRows) -> tuple[pa.Array, np.ndarray]:
    """The cell ids of ``column`` as one Arrow string array and their dense codes, once every id is present and
    (image, id) unique; else the refusal names the lines."""
    values = parsed.arrow(column)
    if has_missing_text(values):
        check_missing_text(header.path, parsed.text(column), column, parsed.rows)
    ids = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    codes = arrow_code_array(ids)
    if not ids_are_unique(rows.index, codes):
        check_unique_ids(header.path, arrow_objects(rows.ids), arrow_objects(ids), column, parsed.rows)
    return ids, codes


def image_pixel_sizes(header: Header, order: list[str], pixel_size: float | Mapping[str, float] | None,
                      advice: str) -> dict[str, float]:
    """Micrometres per pixel of every image from ``pixel_size``; without it the reader stops with ``advice``
    (spec section 8: a reader of pixel centroids MUST know the pixel size)."""
    sizes = pixel_size_for(order, pixel_size)
    if sizes is None:
        raise InputError(f"{header.path.name}: {advice}")
    return sizes


def pixel_cells(header: Header, rows: ImageRows, ids: pa.Array, x_px: np.ndarray, y_px: np.ndarray,
                columns: tuple[str, str], sizes: Mapping[str, float], sample_id: str | None,
                parsed_rows: np.ndarray | None) -> dict[str, object]:
    """The cells columns of pixel centroids ``x_px``, ``y_px`` (checked finite, named ``columns`` in refusals):
    ids, image and sample, micrometre centroids from each image's pixel size, and the pixel centroids."""
    for values, column in ((x_px, columns[0]), (y_px, columns[1])):
        check_finite_centroids(header.path, values, column, parsed_rows)
    per_row = np.array([sizes[i] for i in rows.order], dtype=np.float64)[rows.index]
    images = string_column(rows.ids)
    samples = images if sample_id is None else string_column(constant_strings(sample_id, len(rows.index)))
    return {"cell_id": string_column(ids), "image_id": images, "sample_id": samples,  # the frame copies each
            "x": x_px * per_row, "y": y_px * per_row, "x_px": x_px, "y_px": y_px}


def images_frame(rows: ImageRows, sizes: Mapping[str, float], sample_id: str | None) -> dict[str, list]:
    """The images table: id, sample and pixel size of every image."""
    return {"image_id": list(rows.order),
            "sample_id": [sample_id if sample_id is not None else i for i in rows.order],
            "pixel_size": [sizes[i] for i in rows.order]}


def flag_column(values: np.ndarray) -> pd.api.extensions.ExtensionArray | np.ndarray:
    """A column of 0/1 flags (phenotype calls) as nullable integers, or as written when not whole numbers."""
    finite = np.isfinite(values)
    if np.all(values[finite] == np.round(values[finite])):
        flags = pd.array(np.where(finite, values, 0).astype(np.int64), dtype="Int64")
        flags[~finite] = pd.NA
        return flags
    return values


__all__ = ["ImageRows", "checked_cell_ids", "file_stem", "flag_column", "grouped_rows", "image_name",
           "image_pixel_sizes", "image_rows", "images_frame", "pixel_cells"]
