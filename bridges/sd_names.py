"""Names that SpatialData accepts, made deterministically from arbitrary ids, with the way back.

SpatialData 0.8 (``spatialdata._core.validation.check_valid_name``) accepts an
element name or table key when it is non-empty, not ``.`` or ``..``, does not
start with ``__`` and holds only alphanumeric characters, ``_``, ``-`` and
``.``; names must also be unique when case is ignored, and table columns may
not be called ``_index``. Its ``isalnum`` is Unicode-aware, but we keep names
ASCII so that the zarr store works on every file system.

:func:`sanitise` maps one string; :func:`allocate` maps a list of strings to
unique names (case-insensitively), keeping names that are already valid and
adding ``-2``, ``-3``, ... where two ids would collide. The result is a dict
``{original: name}`` that callers store so the mapping can be reversed.

>>> sanitise("Tumour core #1")
'Tumour_core__1'
>>> sanitise("__x"), sanitise("."), sanitise("éa")
('x__x', 'x.', '_a')
>>> allocate(["a b", "a_b", "A_B"])
{'a b': 'a_b-3', 'a_b': 'a_b', 'A_B': 'A_B-2'}
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_INVALID = re.compile(r"[^A-Za-z0-9_.-]")
_RESERVED_COLUMNS = frozenset({"_index"})


def is_valid(name: str, *, column: bool = False) -> bool:
    """Whether SpatialData accepts ``name`` unchanged (ASCII subset; ``column`` adds the ``_index`` rule)."""
    return (bool(name) and name not in (".", "..") and not name.startswith("__")
            and _INVALID.search(name) is None and not (column and name in _RESERVED_COLUMNS))


def sanitise(name: str, *, column: bool = False) -> str:
    """``name`` with every character outside ``A-Za-z0-9_.-`` replaced by ``_``; a name that
    would still be refused (empty, ``.``, ``..``, leading ``__``, ``_index`` for columns)
    gets the prefix ``x``."""
    out = _INVALID.sub("_", str(name))
    return out if is_valid(out, column=column) else "x" + out


def allocate(names: Sequence[str], *, taken: Iterable[str] = (), suffixes: Sequence[str] = ("",),
             column: bool = False) -> dict[str, str]:
    """Unique valid names for ``names`` (``{original: name}``, in input order).

    ``taken`` are names already in use. Each result ``n`` reserves ``n + s``
    for every ``s`` in ``suffixes`` (e.g. ``("", "_px")`` when an image also
    names a pixel coordinate system), all compared case-insensitively. Names
    that are already valid are placed first, so they are kept whenever they
    do not collide among themselves.
    """
    used = {t.lower() for t in taken}
    out: dict[str, str] = {}
    valid_first = [n for n in names if is_valid(n, column=column)] + \
                  [n for n in names if not is_valid(n, column=column)]
    for name in valid_first:
        if name in out:
            continue
        base = name if is_valid(name, column=column) else sanitise(name, column=column)
        candidate, k = base, 2
        while any((candidate + s).lower() in used for s in suffixes):
            candidate, k = f"{base}-{k}", k + 1
        used.update((candidate + s).lower() for s in suffixes)
        out[name] = candidate
    return {n: out[n] for n in dict.fromkeys(names)}
