"""cellspec_sc: the Python home of cellspec 1.0, the table format for segmented cells.

>>> import cellspec_sc as cs
>>> x = cs.example()
>>> cs.validate(x).ok
True
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from cellspec_sc.model.cellspec import CellSpec
from cellspec_sc.errors import CellspecError, FormatError, InputError, ValidationError
from cellspec_sc.model.example import example
from cellspec_sc.model.provenance import package_version
from cellspec_sc.validation.report import ValidationReport
from cellspec_sc.validation.runner import validate
from cellspec_sc.spec.vocabulary import SPEC_VERSION, vocabulary

__version__ = package_version()

# Heavier parts are imported on first use, so `import cellspec_sc` stays fast.
_LAZY = {
    "read": "cellspec_sc.io.directory",
    "write": "cellspec_sc.io.directory",
    "read_qupath": "cellspec_sc.readers.qupath",
    "read_mcmicro": "cellspec_sc.readers.mcmicro",
    "read_steinbock": "cellspec_sc.readers.steinbock",
    "to_luxar": "cellspec_sc.bridges.luxar",
    "to_anndata": "cellspec_sc.bridges.anndata",
    "from_anndata": "cellspec_sc.bridges.anndata",
    "to_spatialdata": "cellspec_sc.bridges.spatialdata",
    "from_spatialdata": "cellspec_sc.bridges.spatialdata",
    "preview": "cellspec_sc.widgets",
    "open_cohort": "cellspec_sc.cohort",
    "Cohort": "cellspec_sc.cohort",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'cellspec_sc' has no attribute {name!r}")


__all__ = [
    "SPEC_VERSION", "CellSpec", "CellspecError", "FormatError", "InputError", "ValidationError",
    "ValidationReport", "example", "validate", "vocabulary", *_LAZY,
]
