"""Cellspec directories on disk (spec sections 9 and 11): :func:`write` and :func:`read`.

::

    <dir>/
      cells.parquet     cells columns, then one float64 column per feature_id
      adjacency.parquet optional
      cellspec.json     spec_version, column_types, dictionary, images, channels, provenance
      <outlines>        files named by images.geometry_ref, when present
      MANIFEST.sha256   "<sha256>  <relative path>" per file above (sha256sum format)
      DONE              written last: SHA-256 of MANIFEST.sha256

>>> import cellspec_sc as cs, tempfile, pathlib
>>> x = cs.example()
>>> path = cs.write(x, pathlib.Path(tempfile.mkdtemp()) / "example")
>>> sorted(p.name for p in path.iterdir())
['DONE', 'MANIFEST.sha256', 'cells.parquet', 'cellspec.json']
>>> cs.read(path).equals(x)
True

The header: what a cellspec directory says about itself without reading its data (``cellspec info DIR``).

Only ``DONE``, ``MANIFEST.sha256``, ``cellspec.json`` (checked against its manifest entry) and the
footers of the Parquet files (their row counts) are read; the cells and adjacency data are neither
decoded nor hashed, so a 16 GB slide is summarised in the time it takes to parse its JSON.
``cellspec validate DIR`` (or :func:`cellspec_sc.read`) checks the rest.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> path = cs.write(cs.example(), pathlib.Path(tempfile.mkdtemp()) / "x")
>>> print(format_header(read_header(path)))  # doctest: +ELLIPSIS
<cellspec> spec 1.0.0 (from cellspec.json, MANIFEST.sha256 and the Parquet footers; data files not read)
  cells     80 in 2 images (2 samples)
  features  19: 16 intensity, 2 shape, 1 other
  ...
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from cellspec_sc._background import in_background
from cellspec_sc._files import sha256_file
from cellspec_sc.errors import CellspecError, InputError
from cellspec_sc.io._bounded import (
    DEFAULT_LIMITS,
    DEFAULT_MAX_INFLATION,
    DEFAULT_MAX_METADATA_BYTES,
    ReadLimits,
    open_regular,
)
from cellspec_sc.io._columns import DAMAGED_DATA_ERRORS, Decoded, column_types_of, damage_text
from cellspec_sc.io._manifest import (
    DATA_FILES,
    MARKERS,
    METADATA,
    checked_relative,
    directory_stamp,
    read_manifest,
    verify_directory,
    write_manifest,
)
from cellspec_sc.io._metadata import (
    JSON_TABLES,
    KNOWN_KEYS,
    build_document,
    dump_document,
    frame_of_rows,
    load_document,
    schema_problem,
    supported_version,
)
from cellspec_sc.io._parquet import MatrixDecoding, read_parquet, write_parquet
from cellspec_sc.io._publish import CELLSPEC_DIRECTORY, check_target, publishing
from cellspec_sc.io._refusals import (
    ChangedSinceRead,
    ChecksumMismatch,
    ColumnMismatch,
    OutlineMissing,
    SchemaViolation,
    UndecodableData,
    UnlistedDataFile,
    UnreadableFile,
    UnsafePath,
    UnsupportedVersion,
    refusal_of_non_directory,
)
from cellspec_sc.io._staging import fsync_file, fsync_tree
from cellspec_sc.io._storage import is_url
from cellspec_sc.io._tsv import read_tsv, write_tsv
from cellspec_sc.model import CellSpec, HandedOver, feature_kinds, markers_text, pixel_text, sealed, source_line
from cellspec_sc.validation import ValidationReport, staged_validation, validate

FORMATS = {"parquet": (".parquet", write_parquet, read_parquet), "tsv": (".tsv.gz", write_tsv, read_tsv)}
# read, read_lazy, write and read_header of a URL (cellspec_sc/io/_remote.py and _remote_lazy.py, which build on
# this module and register themselves here when cellspec_sc.io is imported): local paths never reach them.
ON_OBJECT_STORAGE: dict[str, Callable[..., Any]] = {}


def _local_only(path: str | Path, storage_options: Mapping[str, Any] | None) -> None:
    if storage_options:
        raise InputError(f"{path}: storage_options= applies to URLs (s3://, gs://, az://), not to local paths")


# -- write -------------------------------------------------------------------------------------
def write(x: CellSpec, path: str | Path, *, format: Literal["parquet", "tsv"] = "parquet",
          overwrite: bool = False, report: ValidationReport | None = None,
          storage_options: Mapping[str, Any] | None = None) -> Path | str:
    """Write ``x`` as a cellspec directory at ``path`` and return the path.

    The directory is built under a hidden sibling name, fsynced and renamed at
    the end, so ``path`` holds a complete directory or nothing, even after a
    crash. ``overwrite=True`` replaces an existing cellspec directory (never
    another kind of folder) only once the new one is complete. The object must
    pass structure validation (else :class:`cellspec_sc.ValidationError`).
    Outline files named by ``images.geometry_ref`` are copied from
    ``x.source_dir``. ``report``: the validation report of ``x`` when the
    caller has just made it (``cellspec import`` validates once), so it is not
    validated again.

    ``path`` may be a URL on object storage (``s3://bucket/run1``, ``gs://``, ``az://``; the ``cloud``
    extra): ``storage_options`` then reach the store (endpoint, credentials), the files are uploaded,
    then the manifest, then ``DONE``, and the URL is returned (docs/directory.md, "On object storage").

    Parameters
    ----------
    x
        The object to write.
    path
        The directory to make.
    format
        ``"parquet"`` (bit for bit) or ``"tsv"`` (gzipped text; doubles with 15 significant digits).
    overwrite
        Replace an existing cellspec directory at ``path`` (never another kind of folder).
    report
        The validation report of ``x``, when the caller has just made it.
    storage_options
        For a URL on object storage: fsspec options of the store (endpoint, credentials).

    Returns
    -------
    Path or str
        ``path``, holding the complete directory (the URL, for object storage).

    Raises
    ------
    ValidationError
        ``x`` fails structure validation; nothing is written.
    TargetExists
        ``path`` exists and ``overwrite`` is false, or it is not a cellspec directory.
    WriteFailed
        The operating system refused a write; nothing was published.

    Examples
    --------
    >>> import cellspec_sc as cs, tempfile, pathlib
    >>> cs.write(cs.example(), pathlib.Path(tempfile.mkdtemp()) / "run1", format="tsv").name
    'run1'
    """
    if format not in FORMATS:
        raise InputError(f"format must be one of {sorted(FORMATS)}, not {format!r}")
    if is_url(path):
        return ON_OBJECT_STORAGE["write"](x, path, storage_options, write_local=write, format=format,
                                          overwrite=overwrite, report=report)
    _local_only(path, storage_options)
    target = Path(path)
    reason = supported_version(x.spec_version)
    if reason:
        raise UnsupportedVersion(target, None, f"cannot write this object: {reason}")
    # Validation runs on a second core while the files are staged; nothing is published unless it
    # passed, and when it failed its ValidationError is what the caller gets, whatever else went wrong.
    checking = in_background(validate, x, name="cellspec-validate") if report is None else _finished(report)
    try:
        return _write_valid(x, target, format, overwrite, _Refusal(checking, target))
    except Exception:
        _Refusal(checking, target).now()
        raise


def _finished(report: ValidationReport) -> Future[ValidationReport]:
    done: Future[ValidationReport] = Future()
    done.set_result(report)
    return done


class _Refusal:
    """Raises the ValidationError of a background validation: ``now()`` waits for it, calling the
    object only looks (writers call it between batches, so an invalid slide is not written whole)."""

    def __init__(self, checking: Future[ValidationReport], target: Path):
        self.checking, self.target = checking, target

    def now(self) -> None:
        self.checking.result().raise_if_failed(f"{self.target}: refusing to write an invalid object")

    def __call__(self) -> None:
        if self.checking.done():
            self.now()


def _write_valid(x: CellSpec, target: Path, format: str, overwrite: bool, refusal: _Refusal) -> Path:
    check_target(target, CELLSPEC_DIRECTORY, overwrite=overwrite)
    outlines = _outline_sources(x, target)
    column_types = _column_types(x, target)
    document = build_document(x, column_types, target)
    problem = schema_problem(document)
    if problem:  # a bug here, or extensions that clash with the schema: never write such a file
        raise SchemaViolation(target, METADATA, f"the document to write breaks the schema {problem}")
    refusal()
    with publishing(target, CELLSPEC_DIRECTORY, overwrite=overwrite) as stage:
        stage.mkdir()
        files = _write_contents(x, stage, format, column_types, dump_document(document, target), outlines, refusal)
        fsync_tree(stage)
        write_manifest(stage, files)
        refusal.now()
    return target


def _column_types(x: CellSpec, target: Path) -> dict[str, list[dict[str, str]]]:
    types = {"cells": column_types_of(x.cells, "cells", target)}
    types["cells"] += [{"name": f, "type": "double"} for f in x.feature_ids]
    if x.adjacency is not None:
        types["adjacency"] = column_types_of(x.adjacency, "adjacency", target)
    for table in JSON_TABLES:
        types[table] = column_types_of(getattr(x, table), table, target)
    return types


def _geometry_refs(images: Any) -> list[str]:
    if "geometry_ref" not in images.columns:
        return []
    return list(dict.fromkeys(str(v) for v in images["geometry_ref"].dropna()))


def _outline_sources(x: CellSpec, target: Path) -> dict[str, Path]:
    """{geometry_ref: source file} for every outline file the directory must hold."""
    refs = _geometry_refs(x.images)
    reserved = {*MARKERS, *DATA_FILES}
    out = {}
    for ref in refs:
        checked_relative(target, ref, "images.geometry_ref", must_exist=False)
        if ref in reserved:
            raise UnsafePath(target, "images.geometry_ref", f"{ref!r} is the name of a file of the format")
        # a symlink leading out of the source folder is refused as a listed path leading out of a directory is
        source = checked_relative(Path(x.source_dir), ref, "images.geometry_ref", must_exist=False) \
            if x.source_dir is not None else None
        if source is None or not source.is_file():
            raise OutlineMissing(target, ref, "images.geometry_ref names this file but it is not in x.source_dir "
                                              f"({x.source_dir}); set x.source_dir or drop the geometry_ref")
        out[ref] = source.resolve()  # the file checked, not a link that could be pointed elsewhere meanwhile
    return out


def _write_contents(x: CellSpec, stage: Path, format: str, column_types: dict, metadata: bytes,
                    outlines: dict[str, Path], after_batch: Callable[[], None]) -> dict[str, str | None]:
    """Write every file into ``stage``; returns {relative path: SHA-256 if the writer computed it}, in
    manifest order."""
    suffix, writer, _ = FORMATS[format]
    cells_types = column_types["cells"][:len(column_types["cells"]) - len(x.feature_ids)]
    files: dict[str, str | None] = {}
    files[f"cells{suffix}"] = writer(stage / f"cells{suffix}", x.cells, cells_types, x.measurements,
                                     x.feature_ids, "cells", stage, after_batch)
    if x.adjacency is not None:
        files[f"adjacency{suffix}"] = writer(stage / f"adjacency{suffix}", x.adjacency, column_types["adjacency"],
                                             None, [], "adjacency", stage, after_batch)
    (stage / METADATA).write_bytes(metadata)
    files[METADATA] = None
    for ref, source in outlines.items():
        destination = stage / ref
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, destination)
        fsync_file(destination)
        files[ref] = None
    return files


# -- read --------------------------------------------------------------------------------------
def read(path: str | Path, *, lazy: bool = False, layout: Literal["C", "F"] = "C",
         max_metadata_bytes: int = DEFAULT_MAX_METADATA_BYTES,
         max_inflation: float = DEFAULT_MAX_INFLATION, storage_options: Mapping[str, Any] | None = None) -> CellSpec:
    """Read a cellspec directory written by this or any other implementation of the spec.

    ``lazy=True`` (Parquet variant only) leaves the measurements on disk: they
    become a dask array with one block per Parquet row group, and only the cells
    table and the JSON parts are loaded. Every file is still checked against the
    manifest and the object is validated block by block, so memory stays at a
    few row groups however big the matrix; see docs/benchmarks.md for what works
    on such an object.

    ``layout="F"`` gives a column-major matrix (each feature contiguous, as the
    Parquet file stores it): a plain copy per column instead of the transposing
    copy into rows, for when the next step works feature by feature (per-feature
    statistics, plots of one marker); ``"C"`` (rows contiguous) is what numpy,
    AnnData and scanpy expect. Values and ``equals`` are the same.

    Every refusal of the format raises its own :class:`cellspec_sc.FormatError`
    subclass (see :mod:`cellspec_sc.io._refusals`) before anything is returned; an
    object that fails structure validation raises
    :class:`cellspec_sc.ValidationError` with the report. ``source_dir`` of the
    result is the absolute directory.

    Files are read only if they are regular files within their size bounds
    (docs/directory.md): ``max_metadata_bytes`` bounds cellspec.json, ``max_inflation``
    how far a gzipped TSV file may inflate, and how many values a Parquet file's footer may
    claim (8 bytes each), in times the file's size (at least 64 MiB).

    ``path`` may be a URL on object storage (``s3://bucket/run1``, ``gs://``, ``az://``; the ``cloud``
    extra), with ``storage_options`` for the store: each file is fetched once, hashed as its bytes
    arrive, and decoded from memory (docs/directory.md, "On object storage"); with ``lazy=True`` the
    cells file is only hashed as it streams, and each row group is fetched by ranged reads when computed.

    Parameters
    ----------
    path
        The cellspec directory.
    lazy
        Leave the measurements on disk as a dask array (Parquet variant; needs the ``[lazy]`` extra).
    layout
        ``"C"`` (rows contiguous) or ``"F"`` (each feature contiguous) for the measurement matrix.
    max_metadata_bytes
        The largest cellspec.json read, in bytes.
    max_inflation
        How far a gzipped TSV file may inflate, and how many values a Parquet footer may claim, in times the
        file's size.
    storage_options
        For a URL on object storage: fsspec options of the store (endpoint, credentials).

    Returns
    -------
    CellSpec
        The object, equal bit for bit to the one written; ``source_dir`` is the absolute directory.

    Raises
    ------
    FormatError
        A refusal of the format (a subclass per refusal): incomplete, tampered or malformed directory.
    ValidationError
        The object fails structure validation (``.report`` holds the report).
    MissingExtraError
        ``lazy=True`` without the ``[lazy]`` extra.

    Examples
    --------
    >>> import cellspec_sc as cs, tempfile, pathlib
    >>> path = cs.write(cs.example(), pathlib.Path(tempfile.mkdtemp()) / "run1")
    >>> cs.read(path).n_cells
    80
    """
    limits = ReadLimits(max_metadata_bytes, max_inflation)
    if layout not in ("C", "F") or (lazy and layout != "C"):
        raise InputError(f"layout must be 'C' or 'F' (eager reads only), not {layout!r}"
                         + (" with lazy=True" if lazy else ""))
    if is_url(path):
        if lazy:
            return ON_OBJECT_STORAGE["read_lazy"](path, storage_options, limits=limits)
        return ON_OBJECT_STORAGE["read"](path, storage_options, layout=layout, limits=limits)
    _local_only(path, storage_options)
    directory = Path(path)
    if not directory.is_dir():
        raise refusal_of_non_directory(directory)
    stamp = directory_stamp(directory)
    try:
        x = _read_or_refuse(directory, lazy, limits, layout)
    except CellspecError:
        _refuse_if_replaced(directory, stamp)  # what looked corrupt was another writer's directory
        raise
    _refuse_if_replaced(directory, stamp)
    return x


def _read_or_refuse(directory: Path, lazy: bool, limits: ReadLimits, layout: str) -> CellSpec:
    try:
        return _read(directory, lazy, limits, layout)
    except OSError as err:  # permissions, a directory where a file belongs, I/O errors
        name = Path(err.filename).name if err.filename else None
        raise UnreadableFile(directory, name, err.strerror or str(err)) from None


def _refuse_if_replaced(directory: Path, stamp: tuple[int, ...] | None) -> None:
    if stamp is not None and directory_stamp(directory) != stamp:
        raise ChangedSinceRead(directory, None, "was replaced by another writer while it was being read; "
                                                "read it again") from None


def _read(directory: Path, lazy: bool = False, limits: ReadLimits = DEFAULT_LIMITS, layout: str = "C") -> CellSpec:
    # Three cores' worth of work on two: the data files are hashed in one thread, the matrix decoded
    # in another, while this one builds the tables and runs the checks that do not need the matrix
    # values. A file that does not match its manifest entry is refused before anything else that
    # went wrong with it.
    entries, pending = verify_directory(directory, deferred=() if lazy else DATA_FILES, limits=limits)
    try:
        x, decoded = _load(directory, entries, lazy, limits, layout)
        report = _validate_read(x, decoded)
    except BaseException:
        pending.check()
        raise
    pending.check()
    report.raise_if_failed(str(directory))
    if not lazy:
        if hasattr(decoded.stats, "result"):
            decoded.stats.result()  # every block is in the matrix
        sealed(decoded.matrix)
    return x


def _validate_read(x: CellSpec, decoded: Decoded) -> ValidationReport:
    """Validate what was read; while the matrix is still being decoded (:class:`MatrixDecoding`), the checks that
    need no matrix values run first, then this thread joins the decoding and hands its stats over."""
    if not isinstance(decoded.stats, MatrixDecoding):
        return validate(x, source_nonfinite=decoded.stored_nan, stats=decoded.stats)
    with staged_validation(x, source_nonfinite=decoded.stored_nan, image_codes=decoded.stats.image_codes) as staged:
        return staged.finish(decoded.stats.result())


def _load(directory: Path, entries: dict[str, str], lazy: bool, limits: ReadLimits,
          layout: str = "C") -> tuple[CellSpec, Decoded]:
    if METADATA not in entries:
        raise UnlistedDataFile(directory, METADATA, "is not listed in MANIFEST.sha256")
    document = load_document(directory / METADATA, directory, limits.max_metadata_bytes)
    fmt = listed_format(directory, entries)
    suffix, _, reader = FORMATS[fmt]
    if lazy and fmt != "parquet":
        raise InputError(f"{directory}: read(lazy=True) needs the Parquet variant; this directory holds "
                         f"cells{suffix} (read it without lazy=True, or write it again as Parquet)")
    types = document["column_types"]
    tables = {t: frame_of_rows(document[t], t, types.get(t), directory) for t in JSON_TABLES}
    check_outlines_listed(directory, tables["images"], entries)
    feature_ids = feature_ids_of(tables["dictionary"], directory)
    bounds = {"max_inflation": limits.max_inflation}
    options = {**bounds, **({"lazy": True} if lazy else {"wait": False, "layout": layout} if fmt == "parquet" else {})}
    decoded = reader(directory / f"cells{suffix}", types["cells"], feature_ids, directory, **options)
    try:
        adjacency = _read_adjacency(directory, entries, suffix, reader, types, bounds)
    except BaseException:
        if hasattr(decoded.stats, "cancel"):  # the matrix is still being decoded: stop that
            decoded.stats.cancel()
        raise
    matrix = np.asfortranarray(decoded.matrix) if layout == "F" and fmt == "tsv" else decoded.matrix
    x = CellSpec(spec_version=document["spec_version"], cells=decoded.frame,
                 measurements=HandedOver(matrix) if matrix is decoded.matrix else sealed(matrix),
                 adjacency=adjacency, provenance=document["provenance"], source_dir=directory.resolve(),
                 extensions={k: v for k, v in document.items() if k not in KNOWN_KEYS}, **tables)
    return x, decoded


def listed_format(directory: Path, entries: dict[str, str]) -> str:
    listed = [fmt for fmt, (suffix, _, _) in FORMATS.items() if f"cells{suffix}" in entries]
    if len(listed) != 1:
        detail = "both cells.parquet and cells.tsv.gz are listed" if listed else "no cells file is listed"
        raise UnlistedDataFile(directory, "MANIFEST.sha256", detail)
    other = [f"adjacency{s}" for f, (s, _, _) in FORMATS.items() if f != listed[0] and f"adjacency{s}" in entries]
    if other:
        raise UnlistedDataFile(directory, other[0], f"does not match the {listed[0]} cells file")
    return listed[0]


def _read_adjacency(directory: Path, entries: dict, suffix: str, reader: Any, types: dict, bounds: dict) -> Any:
    name = f"adjacency{suffix}"
    if (name in entries) != ("adjacency" in types):
        raise UnlistedDataFile(directory, name, "adjacency file and column_types.adjacency must come together")
    if name not in entries:
        return None
    return reader(directory / name, types["adjacency"], [], directory, **bounds).frame


def feature_ids_of(dictionary: Any, directory: Path) -> list[str]:
    if "feature_id" not in dictionary.columns:
        return []
    ids = dictionary["feature_id"]
    if ids.isna().any():
        raise ColumnMismatch(directory, METADATA, "dictionary.feature_id holds NA, so feature columns cannot be "
                                                  "named")
    return [str(f) for f in ids]


def check_outlines_listed(directory: Path, images: Any, entries: dict[str, str]) -> None:
    for ref in _geometry_refs(images):
        checked_relative(directory, ref, "images.geometry_ref", must_exist=False)
        if ref not in entries:
            raise OutlineMissing(directory, ref, "named by images.geometry_ref but not listed in MANIFEST.sha256")


@dataclass
class DirectoryHeader:
    """The facts of a directory's summary that need no data file (row counts from Parquet footers)."""

    spec_version: str
    tables: dict[str, pd.DataFrame]  # dictionary, images, channels
    provenance: dict[str, Any]
    n_cells: int | None  # None: the TSV variant has no footer
    n_contacts: int | None  # None: no adjacency file (or TSV)
    has_adjacency: bool
    data_format: str


def read_header(path: str | Path, storage_options: Mapping[str, Any] | None = None,
                transfer: Any = None) -> DirectoryHeader:
    """The header of the directory at ``path``; refuses what :func:`cellspec_sc.read` would refuse in
    DONE, the manifest and cellspec.json (the same FormatError subclasses). A URL is read on object
    storage with ``storage_options``; ``transfer`` (a :class:`~cellspec_sc.io._storage.Transfer`) then
    counts the bytes fetched."""
    if is_url(path):
        return ON_OBJECT_STORAGE["read_header"](path, storage_options, transfer)
    _local_only(path, storage_options)
    directory = Path(path)
    if not directory.is_dir():
        raise refusal_of_non_directory(directory)
    entries = read_manifest(directory)
    if METADATA not in entries:
        raise UnlistedDataFile(directory, METADATA, "is not listed in MANIFEST.sha256")
    metadata = checked_relative(directory, METADATA, METADATA)
    actual = sha256_file(metadata)
    if actual != entries[METADATA]:
        raise ChecksumMismatch(directory, METADATA, f"SHA-256 is {actual}, MANIFEST.sha256 records {entries[METADATA]}")
    document = load_document(metadata, directory, DEFAULT_MAX_METADATA_BYTES)
    types = document["column_types"]
    tables = {t: frame_of_rows(document[t], t, types.get(t), directory) for t in JSON_TABLES}
    parquet = "cells.parquet" in entries
    return DirectoryHeader(document["spec_version"], tables, document["provenance"],
                           footer_rows(directory, "cells.parquet") if parquet else None,
                           footer_rows(directory, "adjacency.parquet")
                           if parquet and "adjacency.parquet" in entries else None,
                           "adjacency" in types, "parquet" if parquet else "tsv")


def footer_rows(directory: Path, name: str) -> int:
    """The row count a Parquet file's footer records (only the footer is read)."""
    path = checked_relative(directory, name, name)
    with open_regular(path, directory, name) as handle:
        try:
            return pq.ParquetFile(handle).metadata.num_rows
        except DAMAGED_DATA_ERRORS as err:
            raise UndecodableData(directory, name, f"no readable Parquet footer: {damage_text(err)}") from None


def format_header(h: DirectoryHeader) -> str:
    """The summary block of section 1 from a directory's header (images and samples as declared in
    cellspec.json)."""
    images, dictionary = h.tables["images"], h.tables["dictionary"]
    kinds = ", ".join(f"{n} {k}" for k, n in feature_kinds(dictionary).items())
    samples = images["sample_id"].nunique() if "sample_id" in images.columns else "?"
    pixel = sorted({float(v) for v in images["pixel_size"].dropna()}) if "pixel_size" in images.columns else []
    cells = "? (not stored outside the data in the TSV variant)" if h.n_cells is None else str(h.n_cells)
    adjacency = ("none" if not h.has_adjacency else "present" if h.n_contacts is None
                 else f"{h.n_contacts} contacts")
    markers = list(dict.fromkeys(dictionary.loc[dictionary["kind"] == "intensity", "marker"].dropna())) \
        if {"kind", "marker"} <= set(dictionary.columns) else []
    files = "the Parquet footers" if h.data_format == "parquet" else "no data file"
    rows = [("cells", f"{cells} in {len(images)} images ({samples} samples)"),
            ("features", f"{len(dictionary)}: {kinds}" if kinds else f"{len(dictionary)}"),
            ("markers", markers_text(markers)), ("pixel", pixel_text(pixel)), ("adjacency", adjacency),
            ("source", source_line(h.provenance))]
    head = f"<cellspec> spec {h.spec_version} (from cellspec.json, MANIFEST.sha256 and {files}; data files not read)"
    return "\n".join([head] + [f"  {k:<9} {v}" for k, v in rows])
