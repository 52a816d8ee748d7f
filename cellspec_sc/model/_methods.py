"""Operations the model hands to higher layers, found by name when first called.

:class:`~cellspec_sc.model.CellSpec` offers ``validate()``, ``write()`` and ``preview()``, and a cohort
offers ``preview()``, but validation, io and the widgets sit above the model: importing them here would
close a cycle. Instead the composition root (``cellspec_sc/__init__.py``) names each implementation once,
as a ``"module:attribute"`` string, and the model looks it up at call time. The string is imported on the
first call only, so providing costs nothing at ``import cellspec_sc``.

>>> provide("doctest-double", lambda value: 2 * value)
>>> provided("doctest-double")(21)
42
>>> provide("doctest-join", "os.path:join")
>>> provided("doctest-join")("a", "b")
'a/b'
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

from cellspec_sc.errors import CellspecError, needs_extra

__all__ = ["NotProvided", "provide", "provided"]

_IMPLEMENTATIONS: dict[str, Callable[..., Any] | str] = {}
_EXTRAS: dict[str, tuple[str, str]] = {}  # operation -> (extra, public name) of an implementation named by string


class NotProvided(CellspecError, LookupError):
    """No implementation of a delegated operation was provided (see :func:`provide`)."""


def provide(operation: str, implementation: Callable[..., Any] | str,
            extra: tuple[str, str] | None = None) -> None:
    """Name the implementation of ``operation``, replacing an earlier one.

    Parameters
    ----------
    operation
        The operation's name, e.g. ``"validate"``.
    implementation
        The callable, or ``"package.module:attribute"`` to import on the first call.
    extra
        ``(extra, public name)`` when the implementation's module needs an optional extra of cellspec_sc: its
        import then raises :class:`~cellspec_sc.errors.MissingExtraError` naming both, e.g.
        ``("widgets", "CellSpec.preview")``.

    Examples
    --------
    >>> provide("doctest-upper", str.upper)
    >>> provided("doctest-upper")("a")
    'A'
    """
    _IMPLEMENTATIONS[operation] = implementation
    _EXTRAS.pop(operation, None)
    if extra is not None:
        _EXTRAS[operation] = extra


def provided(operation: str) -> Callable[..., Any]:
    """The implementation of ``operation``, imported on first use.

    Parameters
    ----------
    operation
        The name given to :func:`provide`.

    Returns
    -------
    Callable
        The implementation.

    Raises
    ------
    NotProvided
        When nothing was provided for ``operation``.
    MissingExtraError
        When the implementation's module needs an extra of cellspec_sc that is not installed.

    Examples
    --------
    >>> provided("no such operation")
    Traceback (most recent call last):
    ...
    cellspec_sc.model._methods.NotProvided: no implementation of 'no such operation' was provided: ...
    """
    try:
        implementation = _IMPLEMENTATIONS[operation]
    except KeyError:
        raise NotProvided(f"no implementation of {operation!r} was provided: import cellspec_sc (which provides "
                          f"validate, write, preview and cohort_preview) or call "
                          f"cellspec_sc.model.provide({operation!r}, fn)") from None
    if isinstance(implementation, str):
        module, _, attribute = implementation.partition(":")
        extra, name = _EXTRAS.get(operation, ("all", operation))
        with needs_extra(extra, name):
            implementation = getattr(import_module(module), attribute)
        _IMPLEMENTATIONS[operation] = implementation
    return implementation
