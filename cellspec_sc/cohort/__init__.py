"""Cohorts: many cellspec directories as one dataset, computed on dask (``dask.distributed`` or threads).

>>> import cellspec_sc as cs
>>> cs.open_cohort is open_cohort and cs.Cohort is Cohort
True
"""

from cellspec_sc.cohort.cohort import Cohort
from cellspec_sc.cohort.failures import CohortError, Failure
from cellspec_sc.cohort.open import open_cohort
from cellspec_sc.cohort.validate import CohortReport

__all__ = ["Cohort", "CohortError", "CohortReport", "Failure", "open_cohort"]
