"""The cellspec 1.0 specification as data: the vocabulary (columns, types, checks, rules) that the validator,
readers and docs are generated from, and the spec types of table columns.

Names are imported on first use, so ``cellspec_sc.spec.SPEC_VERSION`` loads no pandas.

>>> from cellspec_sc.spec import SPEC_VERSION, vocabulary
>>> SPEC_VERSION == vocabulary().spec_version
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cellspec_sc._lazy import lazy_names

if TYPE_CHECKING:  # what the names below resolve to, for type checkers and editors
    from cellspec_sc.spec._types import (
        PANDAS_DTYPES,
        arrow_text,
        as_spec_type,
        canonical_frame,
        character_array,
        column_names,
        column_spec_types,
        column_values,
        declared_type,
        is_arrow_text,
        python_values,
        spec_type_of,
        without_repeated_names,
    )
    from cellspec_sc.spec._vocabulary import SPEC_TYPES, SPEC_VERSION, Vocabulary, vocabulary

# public name -> the module that defines it, imported when the name is first used
_WHERE = {
    "PANDAS_DTYPES": "cellspec_sc.spec._types",
    "SPEC_TYPES": "cellspec_sc.spec._vocabulary",
    "SPEC_VERSION": "cellspec_sc.spec._vocabulary",
    "Vocabulary": "cellspec_sc.spec._vocabulary",
    "arrow_text": "cellspec_sc.spec._types",
    "as_spec_type": "cellspec_sc.spec._types",
    "canonical_frame": "cellspec_sc.spec._types",
    "character_array": "cellspec_sc.spec._types",
    "column_names": "cellspec_sc.spec._types",
    "column_spec_types": "cellspec_sc.spec._types",
    "column_values": "cellspec_sc.spec._types",
    "declared_type": "cellspec_sc.spec._types",
    "is_arrow_text": "cellspec_sc.spec._types",
    "python_values": "cellspec_sc.spec._types",
    "spec_type_of": "cellspec_sc.spec._types",
    "vocabulary": "cellspec_sc.spec._vocabulary",
    "without_repeated_names": "cellspec_sc.spec._types",
}

__all__ = ["PANDAS_DTYPES", "SPEC_TYPES", "SPEC_VERSION", "Vocabulary", "arrow_text", "as_spec_type", "canonical_frame",
           "character_array", "column_names", "column_spec_types", "column_values", "declared_type", "is_arrow_text",
           "python_values", "spec_type_of", "vocabulary", "without_repeated_names"]


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals())
