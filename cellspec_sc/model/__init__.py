"""The in-memory model: :class:`CellSpec`, its provenance, the simulated example, matrix statistics, and the
registry through which the model reaches validation, io and the widgets without importing them
(:func:`provide`, :func:`provided`).

Names are imported on first use, so ``cellspec_sc.model.package_version`` and the registry load no pandas.

>>> from cellspec_sc.model import CellSpec, example
>>> isinstance(example(), CellSpec)
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cellspec_sc._lazy import lazy_names

if TYPE_CHECKING:  # what the names below resolve to, for type checkers and editors
    from cellspec_sc.model._cellspec import COMPONENTS, CellSpec, contact_positions, drop_missing_pairs
    from cellspec_sc.model._compare import array_digest, column_digest, frame_digest
    from cellspec_sc.model._example import example
    from cellspec_sc.model._from_tables import first_free_name
    from cellspec_sc.model._matrix_stats import (
        MatrixStats,
        all_distinct,
        arrow_code_array,
        arrow_first_seen_codes,
        cache_rows,
        first_seen_code_array,
        first_seen_codes,
        matrix_stats,
        row_blocks,
    )
    from cellspec_sc.model._memory import empty_matrix, release_kept
    from cellspec_sc.model._methods import NotProvided, provide, provided
    from cellspec_sc.model._ownership import HandedOver, sealed
    from cellspec_sc.model._provenance import (
        input_record,
        new_provenance,
        package_version,
        source_line,
        utc_now,
        with_history_step,
    )
    from cellspec_sc.model._summary import feature_kinds, format_html, markers_text, pixel_text

# public name -> the module that defines it, imported when the name is first used
_WHERE = {
    "COMPONENTS": "cellspec_sc.model._cellspec",
    "HandedOver": "cellspec_sc.model._ownership",
    "sealed": "cellspec_sc.model._ownership",
    "CellSpec": "cellspec_sc.model._cellspec",
    "MatrixStats": "cellspec_sc.model._matrix_stats",
    "NotProvided": "cellspec_sc.model._methods",
    "all_distinct": "cellspec_sc.model._matrix_stats",
    "array_digest": "cellspec_sc.model._compare",
    "arrow_code_array": "cellspec_sc.model._matrix_stats",
    "arrow_first_seen_codes": "cellspec_sc.model._matrix_stats",
    "cache_rows": "cellspec_sc.model._matrix_stats",
    "column_digest": "cellspec_sc.model._compare",
    "contact_positions": "cellspec_sc.model._cellspec",
    "drop_missing_pairs": "cellspec_sc.model._cellspec",
    "empty_matrix": "cellspec_sc.model._memory",
    "example": "cellspec_sc.model._example",
    "feature_kinds": "cellspec_sc.model._summary",
    "first_free_name": "cellspec_sc.model._from_tables",
    "first_seen_code_array": "cellspec_sc.model._matrix_stats",
    "first_seen_codes": "cellspec_sc.model._matrix_stats",
    "format_html": "cellspec_sc.model._summary",
    "frame_digest": "cellspec_sc.model._compare",
    "input_record": "cellspec_sc.model._provenance",
    "markers_text": "cellspec_sc.model._summary",
    "matrix_stats": "cellspec_sc.model._matrix_stats",
    "new_provenance": "cellspec_sc.model._provenance",
    "package_version": "cellspec_sc.model._provenance",
    "pixel_text": "cellspec_sc.model._summary",
    "provide": "cellspec_sc.model._methods",
    "provided": "cellspec_sc.model._methods",
    "release_kept": "cellspec_sc.model._memory",
    "row_blocks": "cellspec_sc.model._matrix_stats",
    "source_line": "cellspec_sc.model._provenance",
    "utc_now": "cellspec_sc.model._provenance",
    "with_history_step": "cellspec_sc.model._provenance",
}

__all__ = ["COMPONENTS", "CellSpec", "HandedOver", "MatrixStats", "NotProvided", "all_distinct", "array_digest",
           "arrow_code_array", "arrow_first_seen_codes", "cache_rows", "column_digest", "contact_positions",
           "drop_missing_pairs", "empty_matrix", "example", "feature_kinds", "first_free_name", "first_seen_code_array",
           "first_seen_codes", "format_html", "frame_digest", "input_record", "markers_text", "matrix_stats",
           "new_provenance", "package_version", "pixel_text", "provide", "provided", "release_kept", "row_blocks",
           "sealed", "source_line", "utc_now", "with_history_step"]


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals())
