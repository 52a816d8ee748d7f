"""Validation: every check of spec section 10 run on an object, giving a :class:`ValidationReport`.

>>> from cellspec_sc.model import example
>>> validate(example()).ok
True
"""

from cellspec_sc.validation import (
           CheckResult,
           StagedValidation,
           ValidationReport,
           duplicated_pairs,
           implemented_checks,
           refuse_unstorable,
           staged_validation,
           validate,
)

__all__ = ["CheckResult", "StagedValidation", "ValidationReport", "duplicated_pairs", "implemented_checks",
           "refuse_unstorable", "staged_validation", "validate"]
