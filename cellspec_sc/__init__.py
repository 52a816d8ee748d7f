"""cellspec_sc: the Python home of cellspec 1.0, the table format for segmented cells.

>>> import cellspec_sc as cs
>>> x = cs.example()
>>> cs.validate(x).ok
True

Every public name is imported on first use (PEP 562), so ``import cellspec_sc`` and ``cellspec --help``
load no pandas, pyarrow or numpy; ``dir(cs)`` and ``from cellspec_sc import CellSpec`` work as usual.

>>> "read_qupath" in dir(cs) and cs.read.__module__
'cellspec_sc.io._directory'
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from cellspec_sc.errors import (
    CellspecError,
    CellspecWarning,
    FormatError,
    InputError,
    MissingPath,
    ValidationError,
    needs_extra,
)
from cellspec_sc.model import package_version, provide

if TYPE_CHECKING:  # what the names below resolve to, for type checkers and editors
    from cellspec_sc.bridges.anndata import from_anndata, intensity_features, other_feature, to_anndata
    from cellspec_sc.bridges.luxar import to_luxar
    from cellspec_sc.bridges.spatialdata import from_spatialdata, to_spatialdata
    from cellspec_sc.cohort import Cohort, open_cohort
    from cellspec_sc.images import open_image
    from cellspec_sc.io import read, write
    from cellspec_sc.model import CellSpec, example
    from cellspec_sc.progress import settings
    from cellspec_sc.readers import read_export
    from cellspec_sc.readers.cellprofiler import read_cellprofiler
    from cellspec_sc.readers.halo import read_halo
    from cellspec_sc.readers.inform import read_inform
    from cellspec_sc.readers.mcmicro import read_mcmicro
    from cellspec_sc.readers.qupath import read_qupath
    from cellspec_sc.readers.steinbock import read_steinbock
    from cellspec_sc.spec import SPEC_VERSION, vocabulary
    from cellspec_sc.validation import ValidationReport, validate
    from cellspec_sc.widgets import preview

__version__ = package_version()

# What the model delegates upward (CellSpec.validate/.write/.preview, Cohort.preview), named here once and
# imported on first call, so that no lower layer imports a higher one.
provide("validate", "cellspec_sc.validation:validate")
provide("write", "cellspec_sc.io:write")
provide("preview", "cellspec_sc.widgets:preview", extra=("widgets", "CellSpec.preview"))
provide("cohort_preview", "cellspec_sc.widgets._cohort:CohortPreview", extra=("widgets", "Cohort.preview"))

# public name -> the module that defines it, imported when the name is first used
_LAZY = {
    "CellSpec": "cellspec_sc.model",
    "example": "cellspec_sc.model",
    "validate": "cellspec_sc.validation",
    "ValidationReport": "cellspec_sc.validation",
    "SPEC_VERSION": "cellspec_sc.spec",
    "vocabulary": "cellspec_sc.spec",
    "read": "cellspec_sc.io",
    "write": "cellspec_sc.io",
    "read_qupath": "cellspec_sc.readers.qupath",
    "read_mcmicro": "cellspec_sc.readers.mcmicro",
    "read_steinbock": "cellspec_sc.readers.steinbock",
    "read_halo": "cellspec_sc.readers.halo",
    "read_inform": "cellspec_sc.readers.inform",
    "read_cellprofiler": "cellspec_sc.readers.cellprofiler",
    "read_export": "cellspec_sc.readers",
    "to_luxar": "cellspec_sc.bridges.luxar",
    "to_anndata": "cellspec_sc.bridges.anndata",
    "from_anndata": "cellspec_sc.bridges.anndata",
    "intensity_features": "cellspec_sc.bridges.anndata",
    "other_feature": "cellspec_sc.bridges.anndata",
    "to_spatialdata": "cellspec_sc.bridges.spatialdata",
    "from_spatialdata": "cellspec_sc.bridges.spatialdata",
    "preview": "cellspec_sc.widgets",
    "open_cohort": "cellspec_sc.cohort",
    "Cohort": "cellspec_sc.cohort",
    "settings": "cellspec_sc.progress",
    "open_image": "cellspec_sc.images",
}
# public name -> the extra that installs what it needs (pyproject.toml [project.optional-dependencies]); the other
# names need the core dependencies only
_EXTRAS = {
    "to_luxar": "luxar", "to_anndata": "anndata", "from_anndata": "anndata", "to_spatialdata": "spatialdata",
    "from_spatialdata": "spatialdata", "preview": "widgets", "open_cohort": "cohort", "Cohort": "cohort",
    "open_image": "images", "intensity_features": "anndata", "other_feature": "anndata",
}
_SUBPACKAGES = ("bridges", "cli", "cohort", "display", "docgen", "images", "io", "model", "readers", "spec",
                "validation", "widgets")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        with needs_extra(_EXTRAS.get(name, "all"), f"cellspec_sc.{name}"):
            value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    if name in _SUBPACKAGES:  # ``cs.io`` after ``import cellspec_sc`` alone, as with eager imports
        return import_module(f"cellspec_sc.{name}")
    raise AttributeError(f"module 'cellspec_sc' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


# a literal list, so that tools see the names imported under TYPE_CHECKING above as re-exports; the same names as
# _LAZY's keys, in that order (tests/meta/test_layers.py)
__all__ = [
    "CellspecError", "CellspecWarning", "FormatError", "InputError", "MissingPath", "ValidationError",
    "CellSpec", "example", "validate", "ValidationReport", "SPEC_VERSION", "vocabulary", "read", "write",
    "read_qupath", "read_mcmicro", "read_steinbock", "read_halo", "read_inform", "read_cellprofiler", "read_export",
    "to_luxar", "to_anndata", "from_anndata", "intensity_features", "other_feature", "to_spatialdata",
    "from_spatialdata", "preview", "open_cohort", "Cohort", "settings", "open_image",
]
