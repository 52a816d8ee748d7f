"""A strict JSON parser for cellspec.json: what another program could read the same way, or a refusal.

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
from typing import Any

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
