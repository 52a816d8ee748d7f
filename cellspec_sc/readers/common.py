"""Machinery shared by the tool readers (spec sections 3-6 and 8).

A reader turns one export into a :class:`~cellspec_sc.CellSpec` in four steps, and this module holds
every step that does not depend on the tool:

1. :func:`read_header` checks the header line; :func:`stream_columns` parses the file with pyarrow's
   CSV reader, batch by batch, straight into the float64 measurement matrix, converting NaN and
   infinities to NA and counting them, and turns every parse failure into a
   :class:`~cellspec_sc.InputError` naming file, line and column;
2. the adapter classifies each header into a :class:`FeatureSpec` (kind, compartment, marker, statistic,
   unit, source_name); headers are matched after :func:`normalise_header`;
3. :func:`build_dictionary` applies the feature-id rules and vocabularies of :func:`vocabulary`, the
   marker rules and ``marker_map``;
4. :func:`assemble` builds images, channels and provenance and refuses an object that fails structure
   validation.

>>> normalise_header("Cell: Area \\u00c2\\u00b5m^2")
'Cell: Area um^2'
>>> other_name("Detection probability")
'detection_probability'
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from cellspec_sc.model.cellspec import CellSpec
from cellspec_sc.errors import InputError, ValidationError
from cellspec_sc.model.memory import empty_matrix
from cellspec_sc.model.names import first_free_name
from cellspec_sc.model.provenance import input_record, new_provenance
from cellspec_sc.spec.types import canonical_frame
from cellspec_sc.validation.runner import validate
from cellspec_sc.spec.vocabulary import SPEC_VERSION, vocabulary

MARKER_COLON_REPLACEMENT = "_"
_SEPARATORS = {"\t": "tab", ",": "comma", ";": "semicolon", "|": "pipe"}


# -- headers ---------------------------------------------------------------------------------------
def normalise_header(name: str) -> str:
    """A header with every micro-sign variant of the vocabulary written as ``u`` and spaces collapsed.

    The original header is kept in ``source_name``; only matching uses the normalised form.

    >>> normalise_header("Centroid X \\u03bcm"), normalise_header("Centroid X \\u00b5m")
    ('Centroid X um', 'Centroid X um')
    """
    variants = sorted((v for v in vocabulary().micro_sign_variants if v != "u"), key=len, reverse=True)
    for variant in variants:  # the two-character mis-decoded form first, so its "Â" goes too
        name = name.replace(variant, "u")
    return " ".join(name.split())


def other_name(header: str) -> str:
    """The ``<name>`` of an ``other:<name>`` feature id: the normalised header in snake_case.

    >>> other_name("Nucleus: DAPI range")
    'nucleus_dapi_range'
    """
    return re.sub(r"[^0-9a-z]+", "_", normalise_header(header).lower()).strip("_") or "unnamed"


# -- features --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FeatureSpec:
    """What a reader understood of one measurement column (a row of the dictionary to be)."""

    kind: str
    statistic: str
    unit: str
    source_name: str
    compartment: str | None = None
    marker: str | None = None

    @classmethod
    def other(cls, source_name: str, unit: str = "a.u.") -> FeatureSpec:
        """A measurement the reader cannot classify: kept as kind ``other``, never dropped."""
        return cls("other", other_name(source_name), unit, source_name)


def _checked_marker_map(marker_map: Mapping[str, str] | None) -> dict[str, str]:
    out = {}
    for old, new in (marker_map or {}).items():
        if not isinstance(new, str) or not new.strip() or new != new.strip() or ":" in new:
            raise InputError(f"marker_map: {old!r} -> {new!r}: a marker name must be non-empty, trimmed and "
                             "contain no ':' (spec section 4)")
        out[str(old).strip()] = new
    return out


def clean_marker(raw: str, marker_map: Mapping[str, str]) -> tuple[str, str]:
    """(marker, marker_source) for a marker name as written by the tool.

    The name is trimmed, ``marker_map`` applied (looked up by the trimmed name), and a ``:`` replaced;
    ``marker_source`` is the trimmed original.

    >>> clean_marker(" CD8: clone C8/144B ", {})
    ('CD8_ clone C8/144B', 'CD8: clone C8/144B')
    >>> clean_marker("CD3", {"CD3": "CD3e"})
    ('CD3e', 'CD3')
    """
    source = raw.strip()
    marker = marker_map.get(source, source).replace(":", MARKER_COLON_REPLACEMENT).strip()
    return marker, source


def build_dictionary(specs: Sequence[FeatureSpec], marker_map: Mapping[str, str] | None = None
                     ) -> tuple[pd.DataFrame, dict[str, str]]:
    """The dictionary of ``specs`` and the marker map actually applied (source marker -> marker).

    Feature ids come from :meth:`~cellspec_sc.spec.vocabulary.FeatureIdRule.format`. A spec whose
    compartment, statistic or unit is outside the vocabulary, or whose id is already taken, is kept
    as kind ``other``; ``other`` ids are made unique with ``_2``, ``_3``, ...

    >>> d, _ = build_dictionary([FeatureSpec("intensity", "mean", "a.u.", "Nucleus: CD3: Mean", "nucleus", "CD3")])
    >>> d["feature_id"].tolist()
    ['nucleus:CD3:mean']
    """
    voc = vocabulary()
    mapping = _checked_marker_map(marker_map)
    rows, seen, applied = [], set(), {}
    for spec in specs:
        spec = _within_vocabulary(spec, voc)
        source_marker = None
        if spec.kind == "intensity":
            marker, source_marker = clean_marker(spec.marker or "", mapping)
            if not marker:
                spec = FeatureSpec.other(spec.source_name)
            else:
                spec = replace(spec, marker=marker)
                applied[source_marker] = marker
                _check_distinct_markers(applied, marker, source_marker)
        fid = _feature_id(spec, voc)
        if fid in seen and spec.kind != "other":
            spec, source_marker = FeatureSpec.other(spec.source_name, spec.unit), None
            fid = _feature_id(spec, voc)
        fid = _unique(fid, seen)
        seen.add(fid)
        rows.append((fid, spec.kind, spec.marker, spec.compartment, spec.statistic, spec.unit, spec.source_name,
                     source_marker))
    columns = ["feature_id", "kind", "marker", "compartment", "statistic", "unit", "source_name", "marker_source"]
    frame = pd.DataFrame(rows, columns=columns) if rows else pd.DataFrame({c: [] for c in columns})
    if not any(src is not None and src != m for _, _, m, _, _, _, _, src in rows):
        frame = frame.drop(columns="marker_source")
    return canonical_frame(frame, "dictionary"), applied


def _check_distinct_markers(applied: Mapping[str, str], marker: str, source: str) -> None:
    clash = [src for src, m in applied.items() if m == marker and src != source]
    if clash:
        raise InputError(f"markers {clash[0]!r} and {source!r} would both be called {marker!r} (marker_map or ':' "
                         "replacement); give them distinct names in marker_map")


def _within_vocabulary(spec: FeatureSpec, voc) -> FeatureSpec:
    unit = spec.unit if spec.unit in voc.units else "a.u."
    if spec.kind == "other":
        return replace(spec, unit=unit, compartment=None, marker=None)
    allowed = voc.statistics(spec.kind) or ()
    if spec.compartment not in voc.compartments or spec.statistic not in allowed or spec.unit not in voc.units:
        return FeatureSpec.other(spec.source_name, unit)
    return spec


def _feature_id(spec: FeatureSpec, voc) -> str:
    return voc.feature_id_rule(spec.kind).format(compartment=spec.compartment, marker=spec.marker,
                                                 statistic=spec.statistic)


def _unique(fid: str, seen: set[str]) -> str:
    return first_free_name(fid, seen)


# -- parsing ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Header:
    """The first line of an export: the column names as written and where they were read from."""

    path: Path
    delimiter: str
    names: tuple[str, ...]

    @property
    def normalised(self) -> dict[str, str]:
        """Lower-cased normalised header -> header as written (first occurrence)."""
        out: dict[str, str] = {}
        for name in self.names:
            out.setdefault(normalise_header(name).lower(), name)
        return out

    def find(self, *candidates: str) -> str | None:
        """The header as written that matches one of ``candidates`` after normalisation."""
        norm = self.normalised
        for cand in candidates:
            hit = norm.get(normalise_header(cand).lower())
            if hit is not None:
                return hit
        return None


def read_header(path: str | os.PathLike, delimiter: str, tool: str) -> Header:
    """Read and check the header line: not empty, not duplicated, the expected separator.

    Raises InputError naming the file and line 1.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    with open(path, "rb") as handle:
        first = handle.readline()
    text = first.decode("utf-8-sig", errors="replace").rstrip("\r\n")
    if not text.strip():
        raise InputError(f"{path.name}: line 1: the file is empty; expected a {tool} table with a header line")
    names = tuple(_split_header(text, delimiter))
    if len(names) == 1:
        found = [sep for sep in _SEPARATORS if sep != delimiter and sep in text]
        if found:
            raise InputError(f"{path.name}: line 1: the header has a single column but contains "
                             f"{_SEPARATORS[found[0]]} characters; {tool} tables are "
                             f"{_SEPARATORS[delimiter]}-separated (wrong separator?)")
    blank = [i + 1 for i, n in enumerate(names) if not n.strip()]
    if blank:
        raise InputError(f"{path.name}: line 1, column {blank[0]}: empty column name in the header")
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise InputError(f"{path.name}: line 1: duplicated column name(s) {', '.join(map(repr, dups))}")
    return Header(path, delimiter, names)


def _split_header(text: str, delimiter: str) -> list[str]:
    import csv

    return next(csv.reader([text], delimiter=delimiter))


def require_columns(header: Header, tool: str, groups: Sequence[Sequence[str]]) -> None:
    """Stop unless, for every group of alternatives, one column is present; list what is missing."""
    missing = [alternatives for alternatives in groups if header.find(*alternatives) is None]
    if missing:
        wanted = "; ".join(" or ".join(repr(a) for a in alts) for alts in missing)
        raise InputError(f"{header.path.name}: not a {tool} table: expected column(s) not found: {wanted} "
                         f"(found {len(header.names)} column(s): {', '.join(header.names[:8])}"
                         f"{', ...' if len(header.names) > 8 else ''})")


@dataclass
class Parsed:
    """A parsed export, rows already filtered: text and number columns, and the measurement matrix.

    ``rows`` holds the 0-based data-row index in the file of every kept row (None when every row was
    kept), so errors can name file lines (data row i is line i + 2). Text columns are held as Arrow
    string arrays; :meth:`text` turns one into an object array on first use.
    """

    rows_read: int
    rows: np.ndarray | None
    text_columns: dict[str, pa.ChunkedArray]
    number_columns: dict[str, np.ndarray]
    unfiltered: dict[str, pa.ChunkedArray]
    matrix: np.ndarray
    counts: dict[str, int]

    def __post_init__(self) -> None:
        self._objects: dict[str, np.ndarray] = {}

    @property
    def n(self) -> int:
        return int(self.matrix.shape[0])

    def text(self, name: str) -> np.ndarray:
        """A text column of the kept rows as an object array (None for missing)."""
        if name not in self._objects:
            self._objects[name] = _objects(self.text_columns[name])
        return self._objects[name]

    def arrow(self, name: str) -> pa.ChunkedArray:
        """A text column of the kept rows as Arrow strings (null for missing), without Python objects."""
        return self.text_columns[name]

    def whole(self, name: str) -> np.ndarray:
        """An ``unfiltered`` text column (every data row) as an object array."""
        return _objects(self.unfiltered[name])

    def number(self, name: str) -> np.ndarray:
        """A float64 column of the kept rows (NaN for missing)."""
        return self.number_columns[name]


def _objects(values: pa.ChunkedArray) -> np.ndarray:
    if values.num_chunks == 0:
        return np.zeros(0, dtype=object)
    return values.to_numpy(zero_copy_only=False).astype(object, copy=False)


# Bytes per block handed to pyarrow's CSV reader (one record batch each): large enough that the
# per-batch Python work is small, small enough that a block is parsed while it is still in cache.
BLOCK_BYTES = 1 << 21
# Bytes read from the start of the file to estimate its number of rows.
SAMPLE_BYTES = 1 << 20


def stream_columns(header: Header, *, text: Sequence[str], numbers: Sequence[str], matrix: Sequence[str],
                   keep: tuple[str, Sequence[str]] | None = None, unfiltered: Sequence[str] = ()) -> Parsed:
    """Parse the file with pyarrow's CSV reader, batch by batch, straight into the measurement matrix.

    ``text`` columns are read as strings (kept as Arrow arrays), every other column as float64 (empty
    fields are null). ``keep=(column, values)`` keeps only rows whose text ``column`` is one of
    ``values``; ``unfiltered`` text columns are also returned for every row. The matrix (kept rows x
    ``matrix`` columns, C order) is allocated once, with room for the rows estimated from the first
    megabyte of the file (pages never written cost no memory), and only grown if the estimate was
    short, so peak memory stays close to the result instead of holding a whole Arrow table beside it.
    NaN and infinities become NaN (NA) and are counted: ``na_converted`` (NaN written by the tool),
    ``nonfinite_converted`` (infinities) and ``missing_in_source`` (empty fields), all over kept rows.
    A parse failure becomes an InputError that names file, line and column.
    """
    types = {name: (pa.string() if name in text else pa.float64()) for name in header.names}
    convert = pacsv.ConvertOptions(column_types=types, null_values=[""], strings_can_be_null=True,
                                   quoted_strings_can_be_null=True)
    out = empty_matrix(_estimated_rows(header.path), len(matrix))
    positions = [header.names.index(name) for name in matrix]
    counts = {"na_converted": 0, "nonfinite_converted": 0, "missing_in_source": 0}
    parts: dict[str, list[pa.Array]] = {name: [] for name in text}
    number_parts: dict[str, list[np.ndarray]] = {name: [] for name in numbers}
    whole: dict[str, list[pa.Array]] = {name: [] for name in unfiltered}
    row_parts: list[np.ndarray] = []
    read = filled = 0
    try:
        reader = pacsv.open_csv(header.path, read_options=pacsv.ReadOptions(use_threads=True, block_size=BLOCK_BYTES),
                                parse_options=pacsv.ParseOptions(delimiter=header.delimiter), convert_options=convert)
        for batch in reader:
            sel = _kept_in_batch(batch, keep)
            for name in unfiltered:
                whole[name].append(batch.column(name))
            for name in parts:
                values = batch.column(name)
                parts[name].append(values if sel is None else values.take(sel))
            for name in number_parts:
                values = batch.column(name).to_numpy(zero_copy_only=False)
                number_parts[name].append(values if sel is None else values[sel])
            m = batch.num_rows if sel is None else int(sel.size)
            if filled + m > out.shape[0]:  # only if the estimate was short: grow by half
                out = _grown(out, filled, max(filled + m, out.shape[0] + out.shape[0] // 2))
            _fill_block(batch, positions, sel, out[filled:filled + m], counts)
            row_parts.append(np.arange(read, read + batch.num_rows) if sel is None else sel + read)
            read += batch.num_rows
            filled += m
    except (pa.ArrowInvalid, pa.ArrowException) as err:
        raise _located_error(header, str(err)) from None
    if read == 0:
        raise InputError(f"{header.path.name}: line 2: the file has a header but no data rows")
    rows = np.concatenate(row_parts) if row_parts else np.zeros(0, dtype=np.int64)
    return Parsed(
        rows_read=read,
        rows=None if filled == read else rows,
        text_columns={n: pa.chunked_array(parts[n], type=pa.string()) for n in text},
        number_columns={n: _joined(number_parts[n], np.float64) for n in numbers},
        unfiltered={n: pa.chunked_array(whole[n], type=pa.string()) for n in unfiltered},
        matrix=out[:filled],
        counts=counts,
    )


def _estimated_rows(path: Path, sample: int = SAMPLE_BYTES) -> int:
    """Room for the data rows: exact for a file within ``sample`` bytes, else the file size over the mean
    line length of the first ``sample`` bytes, plus a tenth (the matrix grows if that is short)."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(sample)
    lines = head.count(b"\n") + (not head.endswith(b"\n"))
    if size <= len(head):
        return max(lines, 1)
    return max(int(size / (len(head) / max(lines, 1)) * 1.1) + 1024, 1)


def _grown(out: np.ndarray, filled: int, rows: int) -> np.ndarray:
    bigger = empty_matrix(rows, out.shape[1])
    bigger[:filled] = out[:filled]
    return bigger


def _kept_in_batch(batch: pa.RecordBatch, keep: tuple[str, Sequence[str]] | None) -> np.ndarray | None:
    if keep is None:
        return None
    column, values = keep
    mask = pc.is_in(batch.column(column), value_set=pa.array(list(values), type=pa.string()))
    mask = pc.fill_null(mask, False).to_numpy(zero_copy_only=False)
    return None if mask.all() else np.flatnonzero(mask)


def _fill_block(batch: pa.RecordBatch, positions: Sequence[int], sel: np.ndarray | None, block: np.ndarray,
                counts: dict[str, int]) -> None:
    """Copy the matrix columns (at ``positions`` of the batch) of the kept rows into ``block`` (rows x columns).

    Columns are first copied into a column-major scratch array and then transposed into ``block`` in
    one copy, which is much faster than writing each column with a stride of a whole row.
    """
    scratch = np.empty((len(positions), block.shape[0]), dtype=np.float64)
    nulls = 0
    columns = batch.columns
    for j, position in enumerate(positions):
        col = columns[position]
        values = col.to_numpy(zero_copy_only=False)
        scratch[j] = values if sel is None else values[sel]
        if col.null_count:
            if sel is None:
                nulls += col.null_count
            else:
                nulls += int(np.count_nonzero(col.is_null().to_numpy(zero_copy_only=False)[sel]))
    block[...] = scratch.T
    counts["missing_in_source"] += nulls
    n_nan = int(np.count_nonzero(np.isnan(block)))
    inf = np.isinf(block)
    n_inf = int(np.count_nonzero(inf))
    if n_inf:
        block[inf] = np.nan
    counts["nonfinite_converted"] += n_inf
    counts["na_converted"] += n_nan - nulls


def _joined(parts: list[np.ndarray], dtype) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype=dtype)
    return np.concatenate(parts).astype(dtype, copy=False)


def _located_error(header: Header, message: str) -> InputError:
    name = header.path.name
    conversion = re.search(r"column #(\d+).*invalid value '(.*)'", message, flags=re.S)
    if conversion:
        col, value = int(conversion.group(1)), conversion.group(2)
        column = header.names[col]
        line = _line_of_value(header, column, value)
        where = f"line {line}, " if line else ""
        return InputError(f"{name}: {where}column {column!r}: cannot parse {value!r} as a number")
    if "Expected" in message and "columns" in message:
        line, expected, actual = _first_bad_row(header)
        if line:
            return InputError(f"{name}: line {line}: expected {expected} {_SEPARATORS.get(header.delimiter, '')}-"
                              f"separated fields as in the header, found {actual} (wrong separator or a "
                              "truncated line?)")
    return InputError(f"{name}: cannot parse the file: {message}")


def _line_of_value(header: Header, column: str, value: str) -> int | None:
    table = pacsv.read_csv(header.path, parse_options=pacsv.ParseOptions(delimiter=header.delimiter),
                           convert_options=pacsv.ConvertOptions(include_columns=[column],
                                                                column_types={column: pa.string()}))
    index = pc.index(table.column(column), value).as_py()
    return None if index < 0 else index + 2


def _first_bad_row(header: Header) -> tuple[int | None, int, int]:
    found: list[tuple[int, int, int]] = []

    def handler(row) -> str:
        if not found:
            found.append((row.number, row.expected_columns, row.actual_columns))
        return "skip"

    pacsv.read_csv(header.path, read_options=pacsv.ReadOptions(use_threads=False),
                   parse_options=pacsv.ParseOptions(delimiter=header.delimiter, invalid_row_handler=handler),
                   convert_options=pacsv.ConvertOptions(column_types={n: pa.string() for n in header.names}))
    return found[0] if found else (None, 0, 0)


# -- values ----------------------------------------------------------------------------------------
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


def check_missing_text(path: Path, values: np.ndarray, column: str, rows: np.ndarray | None) -> None:
    """Identifiers must be present: name the first line where one is missing or empty."""
    bad = pd.isna(pd.Series(values, dtype=object)).to_numpy() | (pd.Series(values, dtype=object) == "").to_numpy()
    if bad.any():
        raise InputError(f"{path.name}: line {first_line_where(bad, rows)}, column {column!r}: missing identifier")


def has_missing_text(values: pa.ChunkedArray | pa.Array) -> bool:
    """Whether an Arrow text column has a missing or empty value (what :func:`check_missing_text` refuses)."""
    return bool(values.null_count) or bool(pc.any(pc.equal(values, "")).as_py())


def ids_are_unique(image_index: np.ndarray, cell_ids: pa.ChunkedArray | pa.Array) -> bool:
    """Whether (image, cell id) pairs are unique, hashed by Arrow (``image_index``: the image of each row
    as a small integer). Only a quick yes; :func:`check_unique_ids` names the duplicates."""
    if len(cell_ids) == 0:
        return True
    if pc.count_distinct(cell_ids, mode="all").as_py() == len(cell_ids):
        return True  # unique over the whole file (QuPath's UUIDs), so within every image too
    if int(image_index.min()) == int(image_index.max()):
        return False
    pairs = pa.table({"image": pa.array(image_index), "cell": cell_ids})
    return pairs.group_by(["image", "cell"]).aggregate([]).num_rows == len(cell_ids)


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
            raise InputError(f"pixel_size: no entry for image(s) {', '.join(map(repr, missing))}")
        sizes = {i: float(pixel_size[i]) for i in image_ids}
    else:
        sizes = {i: float(pixel_size) for i in image_ids}
    bad = {i: s for i, s in sizes.items() if not (np.isfinite(s) and s > 0)}
    if bad:
        raise InputError(f"pixel_size must be a finite positive number of micrometres per pixel, got {bad}")
    return sizes


# -- assembly --------------------------------------------------------------------------------------
def channels_frame(image_ids: Sequence[str], channel_names: Sequence[str], markers: Sequence[str]) -> pd.DataFrame:
    """One row per marker per image, in the order the tool reports (section 5)."""
    n = len(channel_names)
    frame = pd.DataFrame({
        "image_id": np.repeat(np.asarray(list(image_ids), dtype=object), n),
        "channel_index": np.tile(np.arange(1, n + 1, dtype=np.int64), len(image_ids)),
        "channel_name": list(channel_names) * len(image_ids),
        "marker": list(markers) * len(image_ids),
    })
    return canonical_frame(frame, "channels")


def intensity_channels(dictionary: pd.DataFrame, applied: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(channel names, markers) of the intensity features, in order of first appearance."""
    back = {m: src for src, m in applied.items()}
    markers = list(dict.fromkeys(str(m) for m in dictionary.loc[dictionary["kind"] == "intensity", "marker"]))
    return [back.get(m, m) for m in markers], markers


def assemble(
    *,
    path: Path,
    cells: dict[str, Any],
    measurements: np.ndarray,
    dictionary: pd.DataFrame,
    images: dict[str, Any],
    channels: pd.DataFrame,
    producer: dict[str, Any],
    adapter: str,
    adapter_version: str,
    counts: dict[str, int],
    parameters: dict[str, Any],
    extra_inputs: Sequence[str | os.PathLike | dict[str, Any]] = (),
    path_record: dict[str, Any] | None = None,
) -> CellSpec:
    """Build the object, then refuse it if structure validation fails (a reader bug, never user data).

    ``path_record`` is the provenance record of ``path`` when already made (hashed while the file
    was parsed: :class:`cellspec_sc.io.hashing.BackgroundHash`); otherwise the file is hashed here.
    """
    provenance = new_provenance(
        producer=producer, adapter=adapter, adapter_version=adapter_version,
        inputs=[path_record if path_record is not None else input_record(path),
                *(p if isinstance(p, dict) else input_record(p) for p in extra_inputs)],
        counts=counts, parameters=parameters,
    )
    x = CellSpec(
        spec_version=SPEC_VERSION,
        cells=canonical_frame(pd.DataFrame(cells), "cells"),
        measurements=np.ascontiguousarray(measurements, dtype=np.float64),
        dictionary=dictionary,
        images=canonical_frame(pd.DataFrame(images), "images"),
        channels=channels,
        provenance=provenance,
    )
    report = validate(x)
    if not report.ok:
        raise ValidationError(report, context=f"{path.name}: the {adapter} reader built an invalid object")
    return x
