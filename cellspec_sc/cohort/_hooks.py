"""What a layer above the cohort provides to it: the notebook widget behind ``Cohort.preview``.

The cohort comes before the widgets in the layer order and never imports them. The composition root
(``cellspec_sc/__init__.py``) hands the widget over with :func:`provide` when ``cellspec_sc`` is imported, which
is before any module of this package runs; ``Cohort.preview`` takes it with :func:`provided`. This module
imports nothing heavy, so the root can fill it without loading the cohort.

>>> provided("preview").__name__
'_cohort_preview'
>>> provided("nothing")
Traceback (most recent call last):
...
cellspec_sc.errors.CellspecError: the cohort needs 'nothing' from a layer above it, and nothing provides it (provided: preview)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cellspec_sc.errors import CellspecError

__all__ = ["provide", "provided"]

_PROVIDED: dict[str, Callable[..., Any]] = {}


def provide(name: str, fn: Callable[..., Any]) -> None:
    """Make ``fn`` what the cohort calls for ``name`` (a later call replaces an earlier one).

    Parameters
    ----------
    name
        What the cohort asks for: ``"preview"`` (``fn(cohort, summary=..., client=...)``, the cohort widget).
    fn
        The callable that does it.
    """
    _PROVIDED[name] = fn


def provided(name: str) -> Callable[..., Any]:
    """The callable provided for ``name``.

    Raises
    ------
    CellspecError
        Nothing was provided for ``name``.
    """
    try:
        return _PROVIDED[name]
    except KeyError:
        raise CellspecError(f"the cohort needs {name!r} from a layer above it, and nothing provides it "
                            f"(provided: {', '.join(sorted(_PROVIDED)) or 'nothing'})") from None
