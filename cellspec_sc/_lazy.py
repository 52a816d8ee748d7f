"""Names of a package imported on first use (PEP 562), so that importing the package stays light.

>>> getattr_, dir_ = lazy_names("json_names", {"dumps": "json"}, {})
>>> getattr_("dumps")([1])
'[1]'
>>> "dumps" in dir_()
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

from cellspec_sc.errors import needs_extra

__all__ = ["lazy_names"]


def lazy_names(package: str, homes: Mapping[str, str], namespace: dict[str, Any],
               extras: Mapping[str, str] | None = None) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose public names live in ``homes``.

    Parameters
    ----------
    package
        The package's dotted name, for the error of an unknown name.
    homes
        Public name -> the module that defines it (imported when the name is first used).
    namespace
        The package's ``globals()``: a name looked up once is stored there, so later look-ups skip
        ``__getattr__``.
    extras
        Public name -> the optional extra of cellspec_sc its module needs (e.g. ``"anndata"``): when that is
        not installed, looking the name up raises :class:`~cellspec_sc.errors.MissingExtraError` naming the
        extra, which is an :class:`ImportError`.

    Returns
    -------
    tuple
        ``(__getattr__, __dir__)`` to assign in the package's ``__init__``.
    """

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        with needs_extra((extras or {}).get(name, "all"), f"{package}.{name}"):
            value = getattr(import_module(homes[name]), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__
