"""Warnings the readers give when they read something that is probably not what the user meant.

A :class:`ReaderWarning` never changes what is read; ``strict=True`` (where a reader offers it) turns
the same finding into an :class:`~cellspec_sc.InputError`.

>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     notice("x.csv: something odd")
>>> caught[0].category.__name__, str(caught[0].message)
('ReaderWarning', 'x.csv: something odd')
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from cellspec_sc.errors import InputError


class ReaderWarning(UserWarning):
    """A reader read the file but the user should look at what it says."""


def notice(message: str, *, strict: bool = False) -> None:
    """Warn with ``message``, or refuse with it when ``strict``."""
    if strict:
        raise InputError(f"{message} (refused: strict=True)")
    warnings.warn(message, ReaderWarning, stacklevel=3)


def listed(names: Sequence[str], *, quote: bool = True, most: int = 10) -> str:
    """The first ``most`` of ``names`` for a message, in quotes unless ``quote`` is False.

    >>> listed(["a", "b", "c"], most=2), listed(["P1_001.csv"], quote=False)
    ("'a', 'b', ...", 'P1_001.csv')
    """
    shown = [repr(n) if quote else str(n) for n in names[:most]]
    return ", ".join(shown) + (", ..." if len(names) > most else "")
