"""A folder of one export table per image or field, read as one object.

inForm's batch export writes a ``cell_seg_data.txt`` per field, a TMA's MCMICRO run an mcquant table per core, and
HALO and QuPath a table per image when asked. The readers of these tools take such a folder: every table is read by
the tool's reader as if it were given alone (its own checks, messages naming the file and line), then
:func:`combined` puts the objects together (the pipeline validates the whole once), refusing what cannot be one
object: tables that measure other features or carry other columns, and an image held by two tables. Provenance lists
every table (and each side file once) as an input, sums the counts, and keeps each parameter once when every table
has the same value, merged when they are per-image mappings (``pixel_size``), and per table otherwise
(``parameters["by_table"]``).

A tool that writes a table per mask (MCMICRO's mcquant run with a cell and a nuclei mask) measures the same cells in
several compartments: the objects of each mask's tables are then put side by side by :func:`joined_compartments`,
matched by image and cell id.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc.errors import InputError
from cellspec_sc.model import CellSpec, HandedOver, new_provenance, sealed
from cellspec_sc.readers._table import listed
from cellspec_sc.spec import SPEC_VERSION, vocabulary


def combined(parts: Sequence[CellSpec], names: Sequence[str]) -> CellSpec:
    """One object of the objects read from the tables ``names`` of a folder (in that order); refuses what cannot be
    one object, naming the tables (see the module docstring). The parts are the folder read's own: one part's
    matrix and tables are taken as they are (a mask's one table, before :func:`joined_compartments`)."""
    first = parts[0]
    for part, name in zip(parts[1:], names[1:], strict=True):
        _check_same_features(first, part, names[0], name)
    _check_images_apart(parts, names)
    adjacency = [p.adjacency for p in parts]
    return CellSpec(
        spec_version=SPEC_VERSION,
        cells=HandedOver(_stacked(parts, names, "cells")),
        measurements=sealed(first.measurements if len(parts) == 1 else np.concatenate([p.measurements for p in parts])),
        dictionary=HandedOver(first.dictionary.copy()),
        images=HandedOver(_stacked(parts, names, "images")),
        channels=HandedOver(_stacked(parts, names, "channels")),
        provenance=combined_provenance([p.provenance for p in parts], names),
        adjacency=None if any(a is None for a in adjacency) else HandedOver(pd.concat(adjacency, ignore_index=True)),
    )


def joined_compartments(objects: Sequence[CellSpec], tables: Sequence[Sequence[str]]) -> CellSpec:
    """One object of objects that measure the same cells in different compartments, read from the tables
    ``tables`` (a list per object; MCMICRO's mcquant writes a table per mask): the first object's cells, in its
    order, with every object's features side by side, matched by image and cell id. The objects are the folder
    read's own: their tables are taken, not copied, and the matrix is written once.

    A cell that another object lacks (a cell without a nucleus) has NA for that object's features, counted in
    ``parameters["cells_without"]``; an object's cell that the first lacks is refused, naming its table. The later
    objects' centroids become cells columns ``<compartment>_x`` and ``<compartment>_y`` (micrometres), their
    features of kind other are named after their compartment (``other:nucleus_<name>``); their images and channels
    must be the first's. Provenance: every input once, the counts summed (``rows_kept``: the cells), each parameter
    once when equal, else per compartment (``parameters["by_compartment"]``).
    """
    first = objects[0]
    n = first.n_cells
    cells, dictionaries = first.cells.copy(deep=False), [first.dictionary]  # new columns, no copy of the old
    compartments, without, placed = [_compartment_of(first, tables[0])], {}, []
    for part, names in zip(objects[1:], tables[1:], strict=True):
        compartment = _compartment_of(part, names)
        _check_same_images(first, part, tables[0], names)
        at = _rows_in(first, part)
        if (at < 0).any():
            row = int(np.flatnonzero(at < 0)[0])
            image, cell = part.cells["image_id"].iloc[row], part.cells["cell_id"].iloc[row]
            raise InputError(f"{listed(names)}: cell {cell!r} of image {image!r} is in no table of "
                             f"{listed(tables[0])}; the tables of the masks of one segmentation are joined by cell id "
                             "and the first mask's tables hold every cell: read the tables one by one")
        dictionaries.append(_others_named(part.dictionary, compartment))
        for axis in ("x", "y"):
            cells[f"{compartment}_{axis}"] = _rows_at(part.cells[axis].to_numpy(np.float64), at, n)
        compartments.append(compartment)
        without[compartment] = n - len(at)
        placed.append((part.measurements, at))
    dictionary = pd.concat(dictionaries, ignore_index=True)
    repeated = dictionary["feature_id"][dictionary["feature_id"].duplicated()].tolist()
    if repeated:
        raise InputError(f"{listed([name for names in tables for name in names])}: the masks' tables measure the same "
                         f"features ({listed(repeated)}); read them one by one")
    return CellSpec(
        spec_version=SPEC_VERSION,
        cells=HandedOver(cells),
        measurements=sealed(_side_by_side(first.measurements, placed, len(dictionary))),
        dictionary=HandedOver(dictionary),
        images=HandedOver(first.images),
        channels=HandedOver(first.channels),
        provenance=_joined_provenance([o.provenance for o in objects], compartments, tables, n, without),
        adjacency=None if first.adjacency is None else HandedOver(first.adjacency),
    )


def _side_by_side(matrix: np.ndarray, placed: Sequence[tuple[np.ndarray, np.ndarray]], width: int) -> np.ndarray:
    """``matrix`` and, beside it, each of ``placed``'s matrices at its rows (NA elsewhere), written into one new
    matrix of ``width`` columns.

    >>> _side_by_side(np.ones((3, 1)), [(np.full((1, 2), 2.0), np.array([1]))], 3).tolist()
    [[1.0, nan, nan], [1.0, 2.0, 2.0], [1.0, nan, nan]]
    """
    out = np.empty((len(matrix), width))
    out[:, :matrix.shape[1]] = matrix
    column = matrix.shape[1]
    for values, at in placed:
        block = out[:, column:column + values.shape[1]]
        block.fill(np.nan)
        block[at] = values
        column += values.shape[1]
    return out


def _rows_in(first: CellSpec, part: CellSpec) -> np.ndarray:
    """The row of ``first`` of each cell of ``part`` (-1: none), matched by image and cell id: both ids encoded over
    the two tables at once (Arrow), then one integer key per cell (about half the time a pandas MultiIndex of the
    strings takes: a million cells in about a second on two busy cores, against 2.5 s).

    >>> import cellspec_sc as cs
    >>> x = cs.example()
    >>> _rows_in(x, x.subset(cells=[5, 2])).tolist()
    [5, 2]
    """
    n = first.n_cells
    image, _ = _codes(first.cells["image_id"], part.cells["image_id"])
    cell, distinct = _codes(first.cells["cell_id"], part.cells["cell_id"])
    keys = image * distinct + cell
    return pd.Index(keys[:n]).get_indexer(keys[n:])


def _codes(ours: pd.Series, theirs: pd.Series) -> tuple[np.ndarray, int]:
    """The code of each value of ``ours`` then ``theirs`` in one encoding, and the number of distinct values."""
    values = pa.chunked_array([*_chunks(ours), *_chunks(theirs)], type=pa.string())
    encoded = pc.dictionary_encode(values.combine_chunks())
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), len(encoded.dictionary)


def _chunks(values: pd.Series) -> list[pa.Array]:
    """The Arrow text arrays of a text column (pandas may hold it in several chunks)."""
    arrow = pa.array(values, type=pa.string())
    return arrow.chunks if isinstance(arrow, pa.ChunkedArray) else [arrow]


def _rows_at(values: np.ndarray, at: np.ndarray, n: int) -> np.ndarray:
    """``values`` placed at rows ``at`` of ``n`` rows, NA elsewhere."""
    out = np.full((n, *values.shape[1:]), np.nan)
    out[at] = values
    return out


def _compartment_of(x: CellSpec, names: Sequence[str]) -> str:
    """The one compartment of ``x``'s intensity and shape features (refused when they measure several)."""
    found = list(dict.fromkeys(x.dictionary["compartment"].dropna().tolist()))
    if len(found) != 1:
        raise InputError(f"{listed(names)}: the features measure {listed(found) if found else 'no compartment'}; "
                         "the tables of the masks of one segmentation are joined when each measures one compartment: "
                         "read them one by one")
    return found[0]


def _others_named(dictionary: pd.DataFrame, compartment: str) -> pd.DataFrame:
    """``dictionary`` with its features of kind other named after ``compartment`` (``other:nucleus_<name>``)."""
    other = (dictionary["kind"] == "other").to_numpy()
    if not other.any():
        return dictionary
    out = dictionary.copy()
    statistic = compartment + "_" + out.loc[other, "statistic"]
    rule = vocabulary().feature_id_rule("other")  # the spec's naming rule, as every reader's ids
    out.loc[other, "statistic"] = statistic
    out.loc[other, "feature_id"] = [rule.format(compartment=None, marker=None, statistic=s) for s in statistic]
    return out


def _check_same_images(first: CellSpec, part: CellSpec, first_names: Sequence[str], names: Sequence[str]) -> None:
    """Refuse a part with an image the first lacks, or whose images or channels are not the first's (the same image
    read with other side files)."""
    lacking = sorted(set(part.images["image_id"]) - set(first.images["image_id"]))
    if lacking:
        raise InputError(f"{listed(names)}: image(s) {listed(lacking)} have no table among {listed(first_names)}; the "
                         "tables of the masks of one segmentation are joined by cell id and the first mask's tables "
                         "hold every cell: read the tables one by one")
    for table in ("images", "channels"):
        ours = getattr(first, table)
        theirs = getattr(part, table)
        same = ours[ours["image_id"].isin(theirs["image_id"])].reset_index(drop=True)
        if not (len(same) == len(theirs) and same.equals(theirs.reset_index(drop=True))):
            raise InputError(f"{listed(names)}: its {table} differ from those of {listed(first_names)}; the "
                             "tables of the masks of one segmentation are read as one object of the same images: "
                             "read them one by one")


def _joined_provenance(records: Sequence[dict[str, Any]], compartments: Sequence[str],
                       tables: Sequence[Sequence[str]], cells: int, without: dict[str, int]) -> dict[str, Any]:
    counts = {**_summed_counts(records), "rows_kept": cells}
    parameters = merged_parameters([r["parameters"] for r in records], compartments)
    if "by_table" in parameters:
        parameters["by_compartment"] = parameters.pop("by_table")
    parameters.update(tables=[n for names in tables for n in names], joined_on=["image_id", "cell_id"],
                      cells_without=without)
    return _provenance_of(records, counts, parameters)


def _stacked(parts: Sequence[CellSpec], names: Sequence[str], table: str) -> pd.DataFrame:
    """The ``table`` of every part, one after another; refused, naming the first table that differs, when their
    columns or column types differ (pandas would add columns of NA, or make a column of mixed types)."""
    frames = [getattr(p, table) for p in parts]
    if len(frames) == 1:
        return frames[0]
    out = pd.concat(frames, ignore_index=True)
    if list(out.columns) != list(frames[0].columns) or not out.dtypes.equals(frames[0].dtypes):
        for frame, name in zip(frames[1:], names[1:], strict=True):
            _check_same_columns(frames[0], frame, table, names[0], name)
    return out


def _check_same_features(first: CellSpec, part: CellSpec, first_name: str, name: str) -> None:
    if part.dictionary is first.dictionary or part.dictionary.equals(first.dictionary):  # one, if built once
        return
    ours, theirs = first.feature_ids, part.feature_ids
    only_here = [f for f in theirs if f not in ours]
    only_there = [f for f in ours if f not in theirs]
    how = "; ".join(what for what in (
        f"only in {name}: {listed(only_here)}" if only_here else "",
        f"only in {first_name}: {listed(only_there)}" if only_there else "") if what)
    raise InputError(f"{name}: its features differ from those of {first_name} "
                     f"({how or 'the same ids, in another order or with other units or names'}); the tables of a "
                     "folder are read as one object and must measure the same features: read them one by one")


def _check_same_columns(first: pd.DataFrame, part: pd.DataFrame, table: str, first_name: str, name: str) -> None:
    if list(part.columns) == list(first.columns) and part.dtypes.equals(first.dtypes):
        return
    only_here = [c for c in part.columns if c not in first.columns]
    only_there = [c for c in first.columns if c not in part.columns]
    typed = [c for c in part.columns if c in first.columns and part[c].dtype != first[c].dtype]
    how = "; ".join(what for what in (
        f"only in {name}: {listed(only_here)}" if only_here else "",
        f"only in {first_name}: {listed(only_there)}" if only_there else "",
        f"of other types: {listed(typed)}" if typed else "") if what)
    raise InputError(f"{name}: its {table} columns differ from those of {first_name} "
                     f"({how or 'in another order'}); the tables of a folder are read as one object: read them one "
                     "by one")


def _check_images_apart(parts: Sequence[CellSpec], names: Sequence[str]) -> None:
    """Refuse an image held by two tables (each table is read as its own images)."""
    holder: dict[str, str] = {}
    for part, name in zip(parts, names, strict=True):
        for image in part.images["image_id"].tolist():
            if image in holder:
                raise InputError(f"{name}: image {image!r} is in {holder[image]} too; each table of a folder holds "
                                 "images of its own (given image_id= names every table's image the same)")
            holder[image] = name


@contextmanager
def each_warning_once(names: Sequence[str]) -> Iterator[None]:
    """Warnings raised while the tables ``names`` of a folder are read, each said once when the block ends (or
    fails): one that several tables give in the same words but for the table's name names the first table and the
    others (a batch of two hundred fields warns once, not two hundred times).
    """
    said: list[tuple[type, str]] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                yield
            finally:
                said = grouped_warnings(caught, names)
    finally:  # said after the filters are restored, also when a table was refused
        for category, message in said:
            warnings.warn(message, category, stacklevel=4)


def grouped_warnings(caught: Sequence[warnings.WarningMessage], names: Sequence[str]) -> list[tuple[type, str]]:
    """(category, message) of each distinct warning of ``caught``, in order: warnings alike but for the table name
    in them as one, the first table's message naming the others.

    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     for name in ("a.txt", "b.txt", "c.txt"):
    ...         warnings.warn(f"{name}: column 'X' holds text", UserWarning)
    >>> [message for _, message in grouped_warnings(caught, ["a.txt", "b.txt", "c.txt"])]
    ["a.txt: column 'X' holds text (the same in 2 other table(s) of the folder: 'b.txt', 'c.txt')"]
    """
    tables: dict[tuple[type, str], list[str]] = {}
    first: dict[tuple[type, str], str] = {}
    for w in caught:
        text = str(w.message)
        name = max((n for n in names if n in text), key=len, default=None)
        key = (w.category, text.replace(name, "\0") if name else text)
        first.setdefault(key, text)
        if name is not None and name not in tables.setdefault(key, []):
            tables[key].append(name)
    out = []
    for key, text in first.items():
        others = tables.get(key, [])[1:]
        out.append((key[0], text + (f" (the same in {len(others)} other table(s) of the folder: {listed(others)})"
                                    if others else "")))
    return out


def combined_provenance(records: Sequence[dict[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    """One provenance record of the records of the tables ``names``: every input once, the counts summed, the
    parameters merged (see the module docstring).

    >>> a = {"producer": {"tool": "t"}, "reader": {"adapter": "a", "adapter_version": "1"}, "inputs": [{"n": 1}],
    ...      "counts": {"rows_read": 2}, "parameters": {"unit": "px", "pixel_size": {"i": 0.5}, "source": "x"}}
    >>> b = {**a, "inputs": [{"n": 2}], "parameters": {"unit": "px", "pixel_size": {"j": 0.5}, "source": "y"}}
    >>> p = combined_provenance([a, b], ["a.txt", "b.txt"])
    >>> p["counts"], p["parameters"]["pixel_size"], p["parameters"]["by_table"]
    ({'rows_read': 4}, {'i': 0.5, 'j': 0.5}, {'a.txt': {'source': 'x'}, 'b.txt': {'source': 'y'}})
    """
    parameters = merged_parameters([r["parameters"] for r in records], names)
    return _provenance_of(records, _summed_counts(records), {**parameters, "tables": list(names)})


def _summed_counts(records: Sequence[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in records:
        for key, value in record["counts"].items():
            counts[key] = counts.get(key, 0) + value
    return counts


def _provenance_of(records: Sequence[dict[str, Any]], counts: dict[str, int], parameters: dict[str, Any]
                   ) -> dict[str, Any]:
    """A new provenance record of the first record's producer and reader, every input of ``records`` once."""
    first = records[0]
    return new_provenance(producer=dict(first["producer"]), adapter=first["reader"]["adapter"],
                          adapter_version=first["reader"]["adapter_version"],
                          inputs=_each_once([i for r in records for i in r["inputs"]]), counts=counts,
                          parameters=parameters)


def _each_once(inputs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The input records in order, a side file every table's read used (``markers.csv``) listed once."""
    out: list[dict[str, Any]] = []
    for record in inputs:
        if record not in out:
            out.append(record)
    return out


def merged_parameters(each: Sequence[dict[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    """Each key once: its value when every table has the same, the union of per-image mappings that agree where
    they meet, else each table's value under ``by_table``."""
    out: dict[str, Any] = {}
    by_table: dict[str, dict[str, Any]] = {}
    keys = list(dict.fromkeys(k for parameters in each for k in parameters))
    for key in keys:
        values = [parameters.get(key) for parameters in each]
        union = _union(values)
        if all(v == values[0] for v in values):
            out[key] = values[0]
        elif union is not None:
            out[key] = union
        else:
            for name, value in zip(names, values, strict=True):
                by_table.setdefault(name, {})[key] = value
    if by_table:
        out["by_table"] = by_table
    return out


def _union(values: Sequence[Any]) -> dict[str, Any] | None:
    """The union of mappings that agree on every key they share, or None."""
    if not all(isinstance(v, dict) for v in values):
        return None
    out: dict[str, Any] = {}
    for value in values:
        for key, item in value.items():
            if key in out and out[key] != item:
                return None
            out[key] = item
    return out


__all__ = ["combined", "combined_provenance", "each_warning_once", "grouped_warnings", "joined_compartments",
           "merged_parameters"]
