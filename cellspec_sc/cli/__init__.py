"""The ``cellspec`` command: :func:`main` (in :mod:`cellspec_sc.cli.main`) and one module per subcommand, imported
only when it runs.

``main`` is looked up on first use, so that ``python -m cellspec_sc.cli.main`` runs the module once.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cellspec_sc.cli.main import main

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name == "main":
        return import_module("cellspec_sc.cli.main").main
    raise AttributeError(f"module 'cellspec_sc.cli' has no attribute {name!r}")
