"""cellspec.json: the metadata file of a cellspec directory, its JSON Schema and version rule.

Holds ``spec_version``, ``column_types``, ``dictionary``/``images``/``channels`` as
arrays of row objects (NA as ``null``; an absent key also reads as NA),
``provenance``, and any unknown top-level keys, which are kept.

>>> supported_version("1.0.3"), supported_version("1.7.0")
(None, 'minor version 7 is newer than this reader supports (1.0)')

Its strict JSON parser: what another program could read the same way, or a refusal.

Python's ``json`` accepts ``NaN`` and ``Infinity`` (not JSON), keeps the last of two
equal keys (other parsers keep the first, so the two readings differ), raises
RecursionError on deep nesting and ValueError on an integer of thousands of
digits. :func:`strict_loads` refuses each with :class:`StrictJsonError` naming the
problem, before anything is built from the document.

>>> strict_loads('{"a": [1, 2.5, "x", null, true]}')
{'a': [1, 2.5, 'x', None, True]}
>>> for text in ('{"a": NaN}', '{"a": 1, "a": 2}', '[' * 200 + ']' * 200, '1' * 500, '1e999'):
...     try:
...         strict_loads(text)
...     except StrictJsonError as err:
...         print(err)
NaN is not a JSON number
key 'a' appears twice in one object
nested deeper than 64 levels
a number of 500 characters (the limit is 100)
the number 1e999 is beyond the range of a double
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fastjsonschema
import numpy as np
import pandas as pd

from cellspec_sc.io._bounded import DEFAULT_MAX_METADATA_BYTES, read_bounded
from cellspec_sc.io._refusals import ColumnMismatch, InvalidJson, SchemaViolation, UnsupportedVersion, Unwritable
from cellspec_sc.spec import SPEC_VERSION, as_spec_type, declared_type

if TYPE_CHECKING:
    from cellspec_sc.model import CellSpec

SCHEMA_FILE = f"cellspec-{SPEC_VERSION}.schema.json"
KNOWN_KEYS = ("spec_version", "column_types", "dictionary", "images", "channels", "provenance")
JSON_TABLES = ("dictionary", "images", "channels")


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of cellspec.json shipped with the package."""
    return json.loads(files("cellspec_sc.spec").joinpath("schema", SCHEMA_FILE).read_text(encoding="utf-8"))


def _jsonschema() -> Any:
    """The jsonschema module, imported without the optional ``rfc3987_syntax``.

    When installed (jupyter-events pulls it in), jsonschema imports it, and it
    compiles Lark grammars at import time: ~10 s on a small machine, on every
    ``cellspec validate DIR``. cellspec.json uses no ``iri`` formats, so the
    module is hidden during this one import; nothing else changes.
    """
    if "jsonschema" in sys.modules:
        return sys.modules["jsonschema"]
    hide = "rfc3987_syntax" not in sys.modules
    if hide:
        sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # makes `import` raise ImportError
    try:
        import jsonschema
    finally:
        if hide:
            del sys.modules["rfc3987_syntax"]
    return jsonschema


@cache
def fast_schema_check() -> Callable[[Any], Any]:
    """The schema compiled to Python code by fastjsonschema: raises ``JsonSchemaException`` when invalid.

    jsonschema walks a 100,000-feature document (two arrays of 100,000 objects) in about 40 s;
    the compiled check takes about 1 s. The schema only uses keywords that mean the same in
    fastjsonschema's drafts and in 2020-12 (tests/io/test_metadata_schema.py holds it to that).

    >>> import fastjsonschema
    >>> try:
    ...     fast_schema_check()({"spec_version": "1.0.0"})
    ... except fastjsonschema.JsonSchemaException as err:
    ...     print(err.message[:17])
    data must contain
    """
    return fastjsonschema.compile(schema())


def schema_problem(document: Any) -> str | None:
    """The most relevant schema violation of ``document`` as text, or None when it is valid.

    The compiled check decides; jsonschema, slower, words the problem of a document that fails it.
    """
    try:
        fast_schema_check()(document)
        return None
    except fastjsonschema.JsonSchemaException:
        pass
    jsonschema = _jsonschema()
    validator = jsonschema.Draft202012Validator(schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
    return f"at {where}: {error.message[:300]}"


def supported_version(version: Any) -> str | None:
    """Why ``version`` cannot be read by this package (section 11), or None when it can."""
    ours = [int(p) for p in SPEC_VERSION.split(".")]
    # each part at most 9 digits: a 5,000-digit part would reach Python's limit on int() of long text
    match = re.fullmatch(r"(\d{1,9})\.(\d{1,9})\.(\d{1,9})", version) if isinstance(version, str) else None
    if not match:
        return f"spec_version {str(version)[:40]!r} is not a MAJOR.MINOR.PATCH version (parts of 1 to 9 digits)"
    major, minor = int(match.group(1)), int(match.group(2))
    if major != ours[0]:
        return f"major version {major} is not supported (this reader reads {ours[0]}.x)"
    if minor > ours[1]:
        return f"minor version {minor} is newer than this reader supports ({ours[0]}.{ours[1]})"
    return None


# -- writing -----------------------------------------------------------------------------------
def _json_value(value: Any, spec_type: str) -> Any:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if spec_type == "double":
        return float(value)
    if spec_type == "integer":
        return int(value)
    if spec_type == "logical":
        return bool(value)
    return str(value)


def rows_of(frame: pd.DataFrame, types: list[dict[str, str]]) -> list[dict[str, Any]]:
    """A table as one JSON object per row; every column appears in every row, NA as None."""
    columns = [[_json_value(v, c["type"]) for v in as_spec_type(frame[c["name"]], c["type"]).astype(object)]
               for c in types]
    names = [c["name"] for c in types]
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)] if names \
        else [{} for _ in range(len(frame))]


def build_document(x: CellSpec, column_types: dict[str, list[dict[str, str]]], directory: Path | str) -> dict:
    """The cellspec.json content of ``x`` (unknown keys of ``x.extensions`` last)."""
    doc: dict[str, Any] = {"spec_version": x.spec_version, "column_types": column_types}
    for table in JSON_TABLES:
        doc[table] = rows_of(getattr(x, table), column_types[table])
    doc["provenance"] = x.provenance
    for key, value in x.extensions.items():
        if key not in doc:
            doc[key] = value
    return doc


def dump_document(document: dict, directory: Path | str) -> bytes:
    """UTF-8 JSON text; refuses values JSON cannot hold (NaN, infinity, arbitrary objects).

    Objects are indented, and each row of a table (an object in an array) takes one line:

    >>> print(dump_document({"a": [{"b": 1}, {"b": None}], "c": {"d": "é"}}, ".").decode())
    {
     "a": [
      {"b": 1},
      {"b": null}
     ],
     "c": {
      "d": "é"
     }
    }
    <BLANKLINE>
    """
    # json's C encoder runs only without indent; indenting only above the rows keeps the file readable
    # and writes 100,000 dictionary rows in a fraction of a second instead of about 10 s.
    encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=_numpy_scalar).encode
    try:
        text = _json_text(document, 0, encode)
    except (TypeError, ValueError) as err:
        raise Unwritable(directory, "cellspec.json", f"a value cannot be written as JSON: {err}") from None
    return (text + "\n").encode("utf-8")


def _json_text(value: Any, depth: int, encode: Callable[[Any], str]) -> str:
    pad, end = " " * (depth + 1), "\n" + " " * depth
    if isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
        items = (f"{pad}{encode(k)}: {_json_text(v, depth + 1, encode)}" for k, v in value.items())
        return "{\n" + ",\n".join(items) + end + "}"
    if isinstance(value, list) and value:
        return "[\n" + ",\n".join(pad + encode(v) if isinstance(v, dict) else pad + _json_text(v, depth + 1, encode)
                                   for v in value) + end + "]"
    return encode(value)


def _numpy_scalar(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} {value!r} is not a JSON value")


# -- reading -----------------------------------------------------------------------------------
def load_document(path: Path, directory: Path, max_bytes: int = DEFAULT_MAX_METADATA_BYTES) -> dict[str, Any]:
    """Parse cellspec.json (a regular file of at most ``max_bytes``, strict JSON: see
    :mod:`cellspec_sc.io._metadata`), check its spec_version, then validate it against the schema."""
    return parse_document(read_bounded(path, directory, path.name, max_bytes), directory, path.name)


def parse_document(raw: bytes, directory: Path | str, name: str = "cellspec.json") -> dict[str, Any]:
    """:func:`load_document` on the bytes of the file (already bounded by the caller)."""
    path = Path(name)
    try:
        document = strict_loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, StrictJsonError) as err:
        raise InvalidJson(directory, path.name, str(err)) from None
    if not isinstance(document, dict):
        raise SchemaViolation(directory, path.name, f"top level is a {type(document).__name__}, not an object")
    reason = supported_version(document.get("spec_version"))
    if reason:
        raise UnsupportedVersion(directory, path.name, reason)
    problem = schema_problem(document)
    if problem:
        raise SchemaViolation(directory, path.name, problem)
    return document


_JSON_TYPE_FITS = {
    "character": lambda v: isinstance(v, str),
    "double": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "logical": lambda v: isinstance(v, bool),
}


def _inferred_type(values: list[Any]) -> str:
    """The spec type of an undeclared column without column_types, from its JSON values."""
    present = [v for v in values if v is not None]
    for spec_type in ("logical", "integer", "double"):
        if present and all(_JSON_TYPE_FITS[spec_type](v) and (spec_type != "integer" or isinstance(v, int))
                           for v in present):
            return spec_type
    return "character"


def frame_of_rows(rows: list[dict[str, Any]], table: str, types: list[dict[str, str]] | None,
                  directory: Path) -> pd.DataFrame:
    """A table from row objects; column order and types from ``types`` when given, else declared/inferred.

    >>> frame_of_rows([{"image_id": "a", "width_px": 5}, {"image_id": "b"}], "images", None, ".").dtypes.tolist()
    [<StringDtype(na_value=<NA>)>, Int32Dtype()]
    """
    # listed columns first, then keys column_types does not list (declared or inferred types)
    names = list(dict.fromkeys([c["name"] for c in types or []] + [k for r in rows for k in r]))
    given = {c["name"]: c["type"] for c in types or []}
    out = {}
    for name in names:
        values = [r.get(name) for r in rows]
        spec_type = given.get(name) or declared_type(table, name) or _inferred_type(values)
        bad = next((v for v in values if v is not None and not _JSON_TYPE_FITS[spec_type](v)), None)
        if bad is not None:
            raise ColumnMismatch(directory, "cellspec.json", f"{table}.{name} holds {bad!r}, not a {spec_type}")
        if spec_type == "integer" and any(v is not None and not -2**31 <= v < 2**31 for v in values):
            raise ColumnMismatch(directory, "cellspec.json", f"{table}.{name} holds a value outside int32")
        series = pd.Series(values, dtype=object, name=name)
        out[name] = as_spec_type(series, spec_type)
    return pd.DataFrame(out, index=pd.RangeIndex(len(rows)), columns=names)


MAX_DEPTH = 64
MAX_NUMBER_CHARS = 100


class StrictJsonError(ValueError):
    """Text that :func:`strict_loads` refuses (the caller names the file)."""


def _no_constant(name: str) -> Any:
    raise StrictJsonError(f"{name} is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise StrictJsonError(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


def _bounded(convert):
    def parse(text: str) -> Any:
        if len(text) > MAX_NUMBER_CHARS:
            raise StrictJsonError(f"a number of {len(text)} characters (the limit is {MAX_NUMBER_CHARS})")
        value = convert(text)
        if not math.isfinite(value):
            raise StrictJsonError(f"the number {text} is beyond the range of a double")
        return value

    return parse


def _nesting(value: Any) -> int:
    """Deepest nesting of lists and objects in a parsed value (iterative)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        elif not isinstance(item, list):
            continue
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            return depth
        stack.extend((child, depth + 1) for child in item)
    return deepest


def strict_loads(text: str) -> Any:
    """Parse JSON text, refusing NaN/Infinity, duplicate keys, nesting deeper than :data:`MAX_DEPTH`
    and numbers longer than :data:`MAX_NUMBER_CHARS` characters."""
    try:
        value = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys,
                           parse_int=_bounded(int), parse_float=_bounded(float))
    except RecursionError:
        raise StrictJsonError(f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as err:
        raise StrictJsonError(str(err)) from None
    if _nesting(value) > MAX_DEPTH:
        raise StrictJsonError(f"nested deeper than {MAX_DEPTH} levels")
    return value
