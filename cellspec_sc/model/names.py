"""Small naming helpers shared by readers and bridges.

>>> first_free_name("cell:area", {"cell:area", "cell:area_2"})
'cell:area_3'
"""

from __future__ import annotations

from collections.abc import Container


def first_free_name(name: str, taken: Container[str]) -> str:
    """``name`` if it is free, else ``name_2``, ``name_3``, ... whichever comes first."""
    if name not in taken:
        return name
    n = 2
    while f"{name}_{n}" in taken:
        n += 1
    return f"{name}_{n}"
