"""cellspec.json is checked by fastjsonschema's compiled code, and worded by jsonschema: both must agree.

fastjsonschema implements drafts 4 to 2019-09; the schema is draft 2020-12. The two agree as long as the
schema only uses keywords whose meaning did not change between those drafts, which the first test
holds it to; the second mutates valid documents at random places and compares the verdicts.
"""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path

import fastjsonschema
import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

import cellspec_sc as cs
from cellspec_sc.io import column_types_of
from cellspec_sc.io._metadata import build_document, fast_schema_check, schema, schema_problem

# keywords whose meaning is the same in draft 2019-09 (what fastjsonschema compiles) and 2020-12
SAME_IN_BOTH = {"$schema", "$id", "$defs", "$ref", "title", "description", "type", "required", "properties",
                "additionalProperties", "enum", "const", "minLength", "maxLength", "pattern", "minimum", "maximum",
                "minItems", "maxItems"}
ANNOTATION_HOLDERS = {"properties", "$defs"}  # their keys are names, not keywords


def _keywords(node, parent_key=None):
    if isinstance(node, dict):
        for key, value in node.items():
            if parent_key not in ANNOTATION_HOLDERS:
                yield key
            yield from _keywords(value, key)
    elif isinstance(node, list):
        for value in node:
            yield from _keywords(value)


def test_the_schema_types_a_column_with_the_vocabulary_spec_types():
    """One list of the spec's column types (the vocabulary's), which the readers, writers, bridges and the
    validator name in their refusals; the shipped schema must allow exactly those."""
    from cellspec_sc.spec import SPEC_TYPES

    enums = [n["type"]["enum"] for n in _nodes(schema()) if isinstance(n.get("type"), dict) and "enum" in n["type"]]
    assert enums and all(tuple(e) == SPEC_TYPES for e in enums)


def _nodes(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nodes(value)


def test_schema_uses_only_keywords_both_validators_read_alike():
    used = set(_keywords(schema())) - {"items"}  # one schema under "items": same meaning in both drafts
    assert used <= SAME_IN_BOTH, used - SAME_IN_BOTH
    assert all(not isinstance(node, list) for node in _items_values(schema()))  # no tuple form (changed in 2020-12)


def _items_values(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "items":
                yield value
            yield from _items_values(value)


def _document():
    x = cs.example(n_cells=5, n_features=4)
    types = {"cells": column_types_of(x.cells, "cells", ".") + [{"name": f, "type": "double"} for f in x.feature_ids]}
    for table in ("dictionary", "images", "channels"):
        types[table] = column_types_of(getattr(x, table), table, ".")
    return json.loads(json.dumps(build_document(x, types, ".")))


VALID = _document()
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                        max_size=3), max_leaves=6)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, (*prefix, i))


PATHS = [p for p in _paths(VALID) if p]


@given(st.lists(st.tuples(st.sampled_from(PATHS), st.sampled_from(["replace", "delete"]), json_values), max_size=3))
@settings(max_examples=300, deadline=None)
def test_compiled_check_and_jsonschema_agree_on_mutated_documents(edits):
    doc = copy.deepcopy(VALID)
    for path, action, value in edits:
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            if action == "delete":
                del parent[path[-1]]
            else:
                parent[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed the place
    slow = jsonschema.Draft202012Validator(schema()).is_valid(doc)
    try:
        fast_schema_check()(doc)
        fast = True
    except fastjsonschema.JsonSchemaException:
        fast = False
    assert fast == slow, doc
    assert (schema_problem(doc) is None) == slow


def test_a_problem_is_worded_by_jsonschema():
    doc = copy.deepcopy(VALID)
    doc["column_types"]["cells"][2]["type"] = "float"
    assert schema_problem(doc) == ("at column_types/cells/2/type: 'float' is not one of "
                                   "['character', 'double', 'integer', 'logical']")


def test_schema_accepts_provenance_written_per_the_spec_field_list():
    from cellspec_sc.io._metadata import schema_problem

    x = cs.example()
    document = json.loads((cs.write(x, Path(tempfile.mkdtemp()) / "d") / "cellspec.json").read_text("utf-8"))
    assert schema_problem(document) is None
    # as another implementation may write section 6: an empty parameter list as [] (R's list()),
    # unknown sizes and hashes as null, extra fields, a history step with details
    document["provenance"].update(
        parameters=[], inputs=[{"path_basename": "a.tsv", "bytes": None, "sha256": None, "note": "x"}],
        history=[{"step": "subset", "function": "subset", "time_utc": "2026-01-01T00:00:00Z", "details": {"n": 1}}],
        extra_field={"any": "thing"})
    assert schema_problem(document) is None
    for field, value in (("counts", {"rows_read": -1, "rows_kept": 0, "na_converted": 0, "nonfinite_converted": 0}),
                         ("counts", {"rows_read": 1, "rows_kept": 0, "na_converted": 0}),
                         ("created_utc", "2026-01-01 00:00:00"), ("history", {"step": "subset"}),
                         ("inputs", "a.tsv"), ("counts", [1, 1, 0, 0])):
        broken = json.loads(json.dumps(document))
        broken["provenance"][field] = value
        assert schema_problem(broken) is not None, field


def test_schema_accepts_the_loosest_document_the_spec_allows():
    """Where section 6 names a field and gives it no type, any JSON value is valid: a writer that numbers its
    history steps or names its producer in a string is not refused (counts are counts: integers of at least 0)."""
    from cellspec_sc.io._metadata import schema_problem

    x = cs.example()
    document = json.loads((cs.write(x, Path(tempfile.mkdtemp()) / "d") / "cellspec.json").read_text("utf-8"))
    document["provenance"] = {
        "producer": "QuPath 0.5.1", "reader": ["cellspecR", "1.0.0"], "created_utc": "2026-01-01T00:00:00Z",
        "inputs": [{"path_basename": None, "bytes": "12 kB", "sha256": 7}, {}],
        "counts": {"rows_read": 80, "rows_kept": 80, "na_converted": 0, "nonfinite_converted": 0, "note": "x"},
        "parameters": ["pixel_size"],
        "history": [{"step": 1, "function": None, "time_utc": 1767225600, "details": [1, "two"]}, {}],
    }
    assert schema_problem(document) is None
    assert fastjsonschema.compile(schema())(document) == document
