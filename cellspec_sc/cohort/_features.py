"""The cohort's dictionary from its members' dictionaries: ``strict``, ``intersection`` or ``union``.

- ``strict``: every directory has the same dictionary; otherwise the error lists,
  by directory, the features missing, extra or described differently.
- ``intersection``: the features every directory has, in the first directory's order.
- ``union``: every feature, in order of first appearance; a directory's missing
  features are NA in its rows (listed in the cohort's provenance).

In every mode a feature_id shared by two directories must have the same
dictionary row (kind, marker, compartment, ...), else it would mean two things.

>>> import pandas as pd
>>> a = pd.DataFrame({"feature_id": ["f1", "f2"], "kind": ["shape", "shape"]})
>>> b = pd.DataFrame({"feature_id": ["f2", "f3"], "kind": ["shape", "shape"]})
>>> plan = combine({"a": a, "b": b}, "union")
>>> plan.feature_ids, plan.missing
(['f1', 'f2', 'f3'], {'a': ['f3'], 'b': ['f1']})
>>> combine({"a": a, "b": b}, "intersection").feature_ids
['f2']
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from cellspec_sc.cohort._run import CohortError

MODES = ("strict", "intersection", "union")


@dataclass(frozen=True)
class FeaturePlan:
    """The cohort's dictionary and, per directory label, the features it lacks."""

    mode: str
    dictionary: pd.DataFrame
    missing: dict[str, list[str]]

    @property
    def feature_ids(self) -> list[str]:
        return [str(f) for f in self.dictionary["feature_id"]] if len(self.dictionary.columns) else []


def _rows(dictionary: pd.DataFrame) -> dict[str, dict]:
    """{feature_id: its dictionary row without NA}."""
    return {str(r["feature_id"]): {k: v for k, v in r.items() if not pd.isna(v)}
            for r in dictionary.astype(object).to_dict("records")}


def combine(dictionaries: dict[str, pd.DataFrame], mode: str = "strict") -> FeaturePlan:
    """The cohort dictionary of ``{directory label: dictionary}``; refuses what the mode does not allow."""
    if mode not in MODES:
        raise CohortError(f"features must be one of {', '.join(MODES)}, not {mode!r}")
    labels = list(dictionaries)
    if not labels:
        return FeaturePlan(mode, pd.DataFrame({"feature_id": pd.Series([], dtype="string")}), {})
    rows = {label: _rows(d) for label, d in dictionaries.items()}
    if mode == "strict":
        _refuse_differences(labels, rows)
    _refuse_conflicts(labels, rows)
    first = labels[0]
    if mode == "intersection":
        ids = [f for f in rows[first] if all(f in rows[label] for label in labels)]
    else:
        ids = list(dict.fromkeys(f for label in labels for f in rows[label]))
    owner = {f: next(label for label in labels if f in rows[label]) for f in ids}
    pieces = [dictionaries[owner[f]].iloc[[list(rows[owner[f]]).index(f)]] for f in ids]
    dictionary = pd.concat(pieces, ignore_index=True) if pieces else dictionaries[first].iloc[:0]
    missing = {label: [f for f in ids if f not in rows[label]] for label in labels}
    return FeaturePlan(mode, dictionary.reset_index(drop=True), {k: v for k, v in missing.items() if v})


def _refuse_differences(labels: list[str], rows: dict[str, dict[str, dict]]) -> None:
    first = labels[0]
    reference = rows[first]
    problems = []
    for label in labels[1:]:
        own = rows[label]
        lacking = [f for f in reference if f not in own]
        extra = [f for f in own if f not in reference]
        differ = [f for f in own if f in reference and own[f] != reference[f]]
        order = not (lacking or extra) and list(own) != list(reference)
        parts = [f"lacks {_few(lacking)}" if lacking else "", f"has extra {_few(extra)}" if extra else "",
                 f"describes {_few(differ)} differently" if differ else "",
                 "orders the features differently" if order else ""]
        if any(parts):
            problems.append(f"{label}: " + "; ".join(p for p in parts if p))
    if problems:
        raise CohortError(f"features='strict': dictionaries differ from that of {first}:\n  " +
                          "\n  ".join(problems) + "\n(use features='intersection' or 'union')")


def _refuse_conflicts(labels: list[str], rows: dict[str, dict[str, dict]]) -> None:
    seen: dict[str, tuple[str, dict]] = {}
    problems = []
    for label in labels:
        for f, row in rows[label].items():
            if f in seen and seen[f][1] != row:
                problems.append(f"{f!r}: {seen[f][0]} has {seen[f][1]}, {label} has {row}")
            seen.setdefault(f, (label, row))
    if problems:
        raise CohortError("the same feature_id is described differently by two directories:\n  " +
                          "\n  ".join(problems[:10]))


def _few(ids: list[str]) -> str:
    shown = ", ".join(repr(f) for f in ids[:5])
    return shown + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
