"""``cellspec_sc.read(url, lazy=True)``: a directory on object storage with its measurements left on the store.

The steps of a local lazy read, over the network:

1. the prefix is listed once (size and ETag of every object); ``DONE`` and ``MANIFEST.sha256`` are checked;
2. every listed file is streamed once and its SHA-256 fed the bytes as they arrive: ``cellspec.json``, the
   adjacency and outline files are kept (small), ``cells.parquet`` is only hashed (its pieces are dropped, so
   memory stays at a few pieces however big the file);
3. the cells table is read from ``cells.parquet`` by ranged reads (its footer and the table columns), and the
   measurements become a dask array with one block per row group, each fetched by ranged reads when it is
   computed and refused (:class:`ChangedSinceRead`) unless the object still has the size and ETag of the bytes
   that were hashed;
4. the object is validated block by block, as a local lazy read is.

So a lazy read holds a few row groups at a time, never the whole matrix; it transfers the cells file once to
hash it, once more to validate it, and then the row groups each computation needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cellspec_sc.errors import InputError
from cellspec_sc.io._bounded import DEFAULT_LIMITS, ReadLimits
from cellspec_sc.io._directory import (
    FORMATS,
    ON_OBJECT_STORAGE,
    _validate_read,
    listed_format,
)
from cellspec_sc.io._manifest import METADATA
from cellspec_sc.io._metadata import KNOWN_KEYS
from cellspec_sc.io._parquet import read_parquet
from cellspec_sc.io._refusals import ChangedSinceRead, UnlistedDataFile
from cellspec_sc.io._remote import (
    _outlines_folder,
    _refuse_if_replaced,
    check_present,
    described,
    fetch_listed,
    object_stamps,
    read_entries,
    stream_checked,
)
from cellspec_sc.io._storage import FetchedFile, Location, RemoteFile, Transfer
from cellspec_sc.model import CellSpec, HandedOver

CELLS = "cells.parquet"


def read_remote_lazy(url: str, storage_options: Mapping[str, Any] | None = None, *,
                     limits: ReadLimits = DEFAULT_LIMITS, transfer: Transfer | None = None) -> CellSpec:
    """:func:`cellspec_sc.read` with ``lazy=True`` of a directory on object storage (see the module docstring);
    ``transfer`` counts the bytes fetched while reading (not those of later computations)."""
    location = Location.of(url, storage_options)
    transfer = transfer if transfer is not None else Transfer()
    stamps = object_stamps(location)
    present = {name: size for name, (size, _) in stamps.items()}
    entries = read_entries(location, present, transfer)
    check_present(location.url, entries, present)
    if METADATA not in entries:
        raise UnlistedDataFile(location.url, METADATA, "is not listed in MANIFEST.sha256")
    fmt = listed_format(location.url, dict(entries))
    if fmt != "parquet":
        raise InputError(f"{location.url}: read(lazy=True) needs the Parquet variant; this directory holds "
                         f"cells{FORMATS[fmt][0]} (read it without lazy=True, or write it again as Parquet)")
    kept = {name: fetch_listed(location, name, digest, present[name], transfer,
                               limits.max_metadata_bytes if name == METADATA else None)
            for name, digest in entries.items() if name != CELLS}
    stream_checked(location, CELLS, entries[CELLS], present[CELLS], transfer)
    cells = RemoteFile(location.child(CELLS), present[CELLS], location.storage_options)
    if cells.stamp() != stamps[CELLS]:
        raise ChangedSinceRead(location.url, CELLS, "changed while it was read; read the directory again")
    x = _lazy_object(location.url, entries, kept, cells, limits)
    _refuse_if_replaced(location, transfer)
    return x


def _lazy_object(url: str, entries: Mapping[str, str], kept: Mapping[str, FetchedFile], cells: RemoteFile,
                 limits: ReadLimits) -> CellSpec:
    document, tables, feature_ids = described(url, entries, kept[METADATA])
    types = document["column_types"]
    bounds = {"max_inflation": limits.max_inflation}
    decoded = read_parquet(cells, types["cells"], feature_ids, url, lazy=True, **bounds)
    if ("adjacency.parquet" in entries) != ("adjacency" in types):
        raise UnlistedDataFile(url, "adjacency.parquet", "adjacency file and column_types.adjacency must come "
                                                         "together")
    adjacency = read_parquet(kept["adjacency.parquet"], types["adjacency"], [], url, **bounds).frame \
        if "adjacency.parquet" in entries else None
    x = CellSpec(spec_version=document["spec_version"], cells=decoded.frame, measurements=HandedOver(decoded.matrix),
                 adjacency=adjacency, provenance=document["provenance"], source_dir=_outlines_folder(kept, tables),
                 extensions={k: v for k, v in document.items() if k not in KNOWN_KEYS}, **tables)
    _validate_read(x, decoded).raise_if_failed(url)
    return x


ON_OBJECT_STORAGE.update(read_lazy=read_remote_lazy)
