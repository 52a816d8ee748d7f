"""Provenance records (spec section 6): reader records, input hashes, history steps.

>>> prov = new_provenance(producer={"tool": "QuPath", "version": "0.5.1"}, adapter="qupath", adapter_version="1")
>>> sorted(prov)
['counts', 'created_utc', 'history', 'inputs', 'parameters', 'producer', 'reader']
"""

from __future__ import annotations

import copy
import os
from datetime import UTC, datetime
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from cellspec_sc._files import FileDigest, file_digest
from cellspec_sc.progress import progress

PACKAGE = "cellspec_sc"


@cache  # importlib.metadata scans the installed distributions: milliseconds on every read otherwise
def package_version() -> str:
    """The installed version of cellspec_sc.

    >>> package_version() == package_version()
    True
    """
    try:
        return version(PACKAGE)
    except PackageNotFoundError:  # running from a source tree without install
        return "0+unknown"


def utc_now() -> str:
    """Current time as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def input_record(path: str | os.PathLike, *, keep_path: bool = False, digest: FileDigest | None = None
                 ) -> dict[str, Any]:
    """The provenance entry of one input file: basename, size and SHA-256 of the same bytes (full path only on
    request).

    ``digest``: the digest and size of the bytes a read took already (e.g. while the file was parsed); else the
    file is read and hashed here, with a progress bar when that takes a while (a registered slide of tens of GB).
    Either way size and digest come from one read, never from a later look at the file.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "cells.csv"
    >>> _ = path.write_bytes(b"a,b\\n1,2\\n")
    >>> input_record(path)["bytes"], input_record(path, digest=FileDigest.of(b"a,b\\n"))["bytes"]
    (8, 4)
    """
    p = Path(path)
    digest = digest or _hashed(p)
    record: dict[str, Any] = {"path_basename": p.name, "bytes": digest.size, "sha256": digest.sha256}
    if keep_path:
        record["path"] = str(p.resolve())
    return record


# Bytes hashed in about the time of reading one table value (SHA-256 at about 1.5 GB/s against 20 million values a
# second): a file's bar shows from the size that takes about a second to hash, as the readers' bars do.
BYTES_PER_VALUE = 64


def _hashed(path: Path) -> FileDigest:
    size = path.stat().st_size
    with progress(size, f"hashing {path.name} for provenance", unit="B", size=size // BYTES_PER_VALUE) as bar:
        return file_digest(path, seen=bar.update)


def new_provenance(
    *,
    producer: dict[str, Any],
    adapter: str,
    adapter_version: str,
    inputs: list[dict[str, Any]] | None = None,
    counts: dict[str, int] | None = None,
    parameters: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A complete provenance dict for an object built by this package."""
    return {
        "producer": dict(producer),
        "reader": {"package": PACKAGE, "version": package_version(), "adapter": adapter,
                   "adapter_version": adapter_version},
        "created_utc": utc_now(),
        "inputs": list(inputs or []),
        "counts": dict(counts or {"rows_read": 0, "rows_kept": 0, "na_converted": 0, "nonfinite_converted": 0}),
        "parameters": dict(parameters or {}),
        "history": [],
    }


def with_history_step(provenance: dict[str, Any], step: str, function: str, details: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of ``provenance`` with one more history step appended.

    ``step`` is a short verb (``"subset"``), ``function`` the public function
    that made the change, ``details`` what changed (JSON-compatible values).
    """
    out = copy.deepcopy(provenance) if isinstance(provenance, dict) else {}
    history = list(out.get("history") or [])
    history.append({"step": step, "function": function, "time_utc": utc_now(), "details": details})
    out["history"] = history
    return out


def source_line(provenance: dict[str, Any]) -> str:
    """One line naming producer and reader, as printed in the summary."""
    if not isinstance(provenance, dict):
        return "unknown"
    producer = provenance.get("producer") or {}
    reader = provenance.get("reader") or {}
    prod = _join(producer.get("tool") or producer.get("name"), producer.get("version")) if isinstance(producer, dict) \
        else str(producer)
    read = _join(reader.get("package"), reader.get("adapter"), reader.get("adapter_version")) \
        if isinstance(reader, dict) else str(reader)
    return f"{prod or 'unknown'} ({read})" if read else (prod or "unknown")


def _join(*parts: Any) -> str:
    return " ".join(str(p) for p in parts if p not in (None, ""))
