"""``cohort.json``, the record of a written cohort dataset: :func:`encode` and :func:`decode` side by side.

The record holds what a cohort knows besides its cells: the features mode, the partition columns, the column
types of the cells files, the cohort's dictionary, images and channels (each image and channel with its
``directory``), the provenance of the whole and one entry per source directory (its files, images,
extensions and own provenance). Its version is stored under ``cellspec_cohort`` (written first); a record of
a newer major version is refused naming both versions.

Version history:

- ``1.0``: the layout above (the first version written).

>>> import cellspec_sc as cs, json, tempfile, pathlib
>>> from cellspec_sc.cohort.example import write_example_cohort
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> out = cs.open_cohort(write_example_cohort(root, 2, n_cells=4)).write_dataset(root / "dataset")
>>> stored = json.loads((out / "cohort.json").read_text(encoding="utf-8"))
>>> record = decode(stored, where=out)
>>> record.features, record.partition_by, list(record.tables["images"]["image_id"])
('strict', ('sample_id',), ['slide01_img1', 'slide01_img2', 'slide02_img1', 'slide02_img2'])
>>> encode(record) == stored
True
>>> decode({**stored, "cellspec_cohort": "2.0"}, where="dataset")  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
cellspec_sc.errors.FormatError: dataset/cohort.json: the cohort record is version 2.0, newer than the 1.0
this cellspec_sc reads; install a newer cellspec_sc (pip install -U cellspec_sc) to read it
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from cellspec_sc._codec import RecordFormat
from cellspec_sc.cohort._run import CohortError
from cellspec_sc.io import frame_of_rows, rows_of, supported_version

__all__ = ["COHORT_FILE", "FORMAT", "TABLES", "CohortRecord", "decode", "encode"]

FORMAT = RecordFormat("the cohort record", "1.0", key="cellspec_cohort")
COHORT_FILE = "cohort.json"
TABLES = ("dictionary", "images", "channels")
_FIELDS = ("spec_version", "features", "partition_by", "column_types", "table_types", *TABLES, "provenance",
           "sources")


@dataclass(frozen=True)
class CohortRecord:
    """What ``cohort.json`` holds, decoded: the tables as frames of canonical dtypes, the rest as JSON values.

    ``column_types`` lists the cells columns of the dataset's files, then one double per feature;
    ``table_types`` the column types of each table of :data:`TABLES`; ``sources`` one entry per source
    directory, in cohort order.
    """

    spec_version: str
    features: str
    partition_by: tuple[str, ...]
    column_types: list[dict[str, str]]
    table_types: dict[str, list[dict[str, str]]]
    tables: dict[str, pd.DataFrame]
    provenance: dict[str, Any]
    sources: list[dict[str, Any]]

    def equals(self, other: object) -> bool:
        """The same record: every table equal (``DataFrame.equals``) and every other field equal."""
        if not isinstance(other, CohortRecord):
            return False
        same_tables = self.tables.keys() == other.tables.keys() and all(
            frame.equals(other.tables[name]) for name, frame in self.tables.items())
        return same_tables and all(getattr(self, f) == getattr(other, f) for f in
                                   ("spec_version", "features", "partition_by", "column_types", "table_types",
                                    "provenance", "sources"))


def encode(record: CohortRecord) -> dict[str, Any]:
    """The JSON document of ``record``, its version first.

    Parameters
    ----------
    record
        The cohort's record, as :meth:`Cohort.write_dataset` builds it.

    Returns
    -------
    dict
        JSON values only (tables as lists of rows, NA as null), ready for ``dump_document``.
    """
    return FORMAT.stamp({
        "spec_version": record.spec_version, "features": record.features,
        "partition_by": list(record.partition_by), "column_types": record.column_types,
        "table_types": record.table_types,
        **{t: rows_of(record.tables[t], record.table_types[t]) for t in TABLES},
        "provenance": record.provenance, "sources": record.sources})


def decode(document: Any, *, where: str | Path) -> CohortRecord:
    """The record of a parsed ``cohort.json``, refused when it is not one this package reads.

    Parameters
    ----------
    document
        The parsed JSON.
    where
        The dataset folder (or file), named by every refusal.

    Returns
    -------
    CohortRecord

    Raises
    ------
    CohortError
        The document is not an object or lacks a field, or a source directory's spec version is not read by this
        package.
    FormatError
        The record has no version, or one of a newer major version than this package reads (both versions named).
    """
    place = (Path(where) / COHORT_FILE).as_posix()
    if not isinstance(document, Mapping):
        raise CohortError(f"{place}: holds {type(document).__name__}, not an object; not written by write_dataset")
    FORMAT.version_of(document, where=place)
    lacking = [k for k in _FIELDS if k not in document]
    if lacking:
        raise CohortError(f"{place}: lacks {', '.join(lacking)}; not written by write_dataset")
    for source in document["sources"]:
        reason = supported_version(source.get("spec_version"))
        if reason:
            raise CohortError(f"{place}: source {source.get('directory')}: {reason}")
    table_types = document["table_types"]
    return CohortRecord(
        spec_version=document["spec_version"], features=document["features"],
        partition_by=tuple(document["partition_by"]), column_types=document["column_types"],
        table_types=table_types,
        tables={t: frame_of_rows(document[t], t, table_types[t], Path(where)) for t in TABLES},
        provenance=document["provenance"], sources=document["sources"])
