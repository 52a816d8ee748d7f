"""Cohorts: many cellspec directories as one dataset, computed on dask (``dask.distributed`` or threads).

Every public name is imported on first use (PEP 562), so that the composition root can hand this package what the
layers above provide (the registry of :mod:`cellspec_sc.model`) without loading pandas or dask.

>>> import cellspec_sc as cs
>>> from cellspec_sc.cohort import Cohort, open_cohort
>>> cs.open_cohort is open_cohort and cs.Cohort is Cohort
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cellspec_sc._lazy import lazy_names

if TYPE_CHECKING:  # what the names below resolve to, for type checkers and editors
    from cellspec_sc.cohort._cohort import Cohort, open_cohort
    from cellspec_sc.cohort._run import CohortError, Failure
    from cellspec_sc.cohort._validate import CohortReport

__all__ = ["Cohort", "CohortError", "CohortReport", "Failure", "open_cohort"]

# public name -> the module that defines it, imported when the name is first used
_LAZY = {
    "Cohort": "cellspec_sc.cohort._cohort",
    "CohortError": "cellspec_sc.cohort._run",
    "CohortReport": "cellspec_sc.cohort._validate",
    "Failure": "cellspec_sc.cohort._run",
    "open_cohort": "cellspec_sc.cohort._cohort",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals(), dict.fromkeys(_LAZY, "cohort"))
