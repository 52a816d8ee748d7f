"""Validation: every check of spec section 10 run on an object, giving a :class:`ValidationReport`.

>>> from cellspec_sc.model import example
>>> validate(example()).ok
True
"""

from cellspec_sc.validation._checks import implemented_checks
from cellspec_sc.validation._context import duplicated_pairs
from cellspec_sc.validation._portability import refuse_unstorable
from cellspec_sc.validation._report import CheckResult, ValidationReport
from cellspec_sc.validation._runner import StagedValidation, staged_validation, validate

__all__ = ["CheckResult", "StagedValidation", "ValidationReport", "duplicated_pairs", "implemented_checks",
           "refuse_unstorable", "staged_validation", "validate"]
