"""What a cellspec directory says about itself without reading its data: ``cellspec info DIR``.

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

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from cellspec_sc.io.bounded import DEFAULT_MAX_METADATA_BYTES, open_regular
from cellspec_sc.io.columns import DAMAGED_DATA_ERRORS, damage_text
from cellspec_sc.io.manifest import METADATA, checked_relative, read_manifest
from cellspec_sc.io.metadata import JSON_TABLES, frame_of_rows, load_document
from cellspec_sc.io.refusals import ChecksumMismatch, NotACellspecDirectory, UndecodableData, UnlistedDataFile
from cellspec_sc._files import sha256_file
from cellspec_sc.model.provenance import source_line
from cellspec_sc.model.summary import feature_kinds, markers_text, pixel_text


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


def read_header(path: str | Path) -> DirectoryHeader:
    """The header of the directory at ``path``; refuses what :func:`cellspec_sc.read` would refuse in
    DONE, the manifest and cellspec.json (the same FormatError subclasses)."""
    directory = Path(path)
    if not directory.is_dir():
        raise NotACellspecDirectory(directory, None, "is not a directory")
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
