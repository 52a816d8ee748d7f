"""Opening a cohort dataset written by :meth:`Cohort.write_dataset` as a cohort again.

Layout (see docs/cohorts.md)::

    <out>/
      cells/<col>=<value>/part-<directory>-<row group>-<i>.parquet   hive-partitioned cells + features
      cohort.json       dictionary, images, channels, column types, provenance of every source
      MANIFEST.sha256   sha256 of cohort.json and every Parquet file
      DONE              written last: sha256 of MANIFEST.sha256

Each source directory becomes a member again: its Parquet files (in the order
written), its images and channels, its provenance. Only metadata is read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cellspec_sc.cohort.failures import CohortError
from cellspec_sc.cohort.features import FeaturePlan
from cellspec_sc.cohort.hive import constants_of
from cellspec_sc.cohort.members import Member, footer_parts, stamp_of
from cellspec_sc.io import (DEFAULT_MAX_INFLATION, DONE, UnlistedDataFile, frame_of_rows, read_manifest,
                            supported_version, verify_listed)

COHORT_FILE = "cohort.json"
DATA_FOLDER = "cells"
FORMAT_VERSION = "1.0"
TABLES = ("dictionary", "images", "channels")


def read_dataset(root: Path, max_inflation: float = DEFAULT_MAX_INFLATION
                 ) -> tuple[list[Member], FeaturePlan, tuple[str, ...]]:
    """The members, feature plan and partition columns of the cohort stored in the dataset at ``root``
    (manifest, DONE and cohort.json checked; each part file's footer read and bounded by ``max_inflation``)."""
    entries = read_manifest(root)
    if COHORT_FILE not in entries:
        raise UnlistedDataFile(root, COHORT_FILE, "is not listed in MANIFEST.sha256")
    verify_listed(root, {COHORT_FILE: entries[COHORT_FILE]}).check()
    document = _load(root)
    done = (root / DONE).read_bytes().decode("ascii", errors="replace").strip().lower()
    tables = {t: frame_of_rows(document[t], t, document["table_types"][t], root) for t in TABLES}
    column_types = document["column_types"]
    feature_ids = [str(f) for f in tables["dictionary"]["feature_id"]]
    table_types = column_types[:len(column_types) - len(feature_ids)]
    stored = [c for c in column_types if c["name"] not in document["partition_by"]]  # in folder names instead
    members = []
    for index, source in enumerate(document["sources"]):
        label = source["directory"]
        files = list(source["files"]) + ([COHORT_FILE] if index == 0 else [])
        missing = [f for f in files if f not in entries]
        if missing:
            raise UnlistedDataFile(root, missing[0], "is named by cohort.json but not listed in MANIFEST.sha256")
        parts = tuple(p for f in source["files"]
                      for p in footer_parts(root, f, stored, feature_ids, constants_of(f), max_inflation)[1])
        own = {t: _rows_of(tables[t], label) for t in ("images", "channels")}
        members.append(Member(label=label, root=root.resolve(), index=index, spec_version=source["spec_version"],
                              table_types=table_types, feature_ids=feature_ids, dictionary=tables["dictionary"],
                              provenance=source["provenance"], entries={f: entries[f] for f in files}, done=done,
                              stamps={f: stamp_of(root / f) for f in files}, parts=parts,
                              extensions=source.get("extensions", {}), **own))
    missing = document["provenance"].get("missing_features", {})
    plan = FeaturePlan(document["features"], tables["dictionary"], missing)
    return members, plan, tuple(document["partition_by"])


def _rows_of(frame: Any, label: str) -> Any:
    return frame[(frame["directory"] == label).to_numpy()].drop(columns="directory").reset_index(drop=True)


def _load(root: Path) -> dict[str, Any]:
    try:
        document = json.loads((root / COHORT_FILE).read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CohortError(f"{root}: {COHORT_FILE}: not UTF-8 JSON ({err})") from None
    needed = ("cellspec_cohort", "features", "partition_by", "column_types", "table_types", *TABLES,
              "provenance", "sources")
    lacking = [k for k in needed if not isinstance(document, dict) or k not in document]
    if lacking:
        raise CohortError(f"{root}: {COHORT_FILE}: lacks {', '.join(lacking)}; not written by write_dataset")
    if document["cellspec_cohort"].split(".")[0] != FORMAT_VERSION.split(".")[0]:
        raise CohortError(f"{root}: {COHORT_FILE}: cohort format {document['cellspec_cohort']} is not supported "
                          f"(this reader reads {FORMAT_VERSION})")
    for source in document["sources"]:
        reason = supported_version(source.get("spec_version"))
        if reason:
            raise CohortError(f"{root}: {COHORT_FILE}: source {source.get('directory')}: {reason}")
    return document
