"""What a check sees and returns: the :class:`Context` (the object, the options, components found unusable,
columns converted once and shared), :class:`Problem` (what a check found), :class:`Skip` (its input is
missing), and the :func:`check` decorator that registers an implementation under its section 10 name.

>>> from cellspec_sc import example, vocabulary
>>> ctx = Context(example(), vocabulary(), (1.0, 1e4), 0.5, {})
>>> ctx.number("cells", "area")[:2].round(1).tolist(), ctx.image_codes()[1].tolist()
([86.8, 125.4], ['img1', 'img2'])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from cellspec_sc.spec.types import PANDAS_DTYPES, is_arrow_text, spec_type_of, without_repeated_names
from cellspec_sc.spec.vocabulary import Vocabulary
from cellspec_sc.validation.matrix_stats import MatrixStats, first_seen_code_array, first_seen_codes, matrix_stats


class Skip(Exception):
    """Raised inside a check when its input is missing."""


class StatsPending(Exception):
    """Raised inside a check that needs the matrix stats while the caller still gathers them: the runner
    runs that check again once they are given (see :meth:`Context.stats` and
    :class:`~cellspec_sc.validation.runner.StagedValidation`)."""


@dataclass
class Problem:
    """What a check found wrong."""

    message: str
    column: str | None = None
    rows: np.ndarray | list[int] | None = None
    count: int | None = None


CheckFn = Callable[["Context"], Problem | str | None]
IMPLEMENTATIONS: dict[str, CheckFn] = {}  # check name -> function, filled by @check in checks/


def check(name: str) -> Callable[[CheckFn], CheckFn]:
    """Register the decorated function as the implementation of the section 10 check ``name``."""

    def register(fn: CheckFn) -> CheckFn:
        IMPLEMENTATIONS[name] = fn
        return fn
    return register


@dataclass
class Context:
    """What the checks look at: the object, options, and components found unusable."""

    x: Any
    voc: Vocabulary
    area_range: tuple[float, float]
    na_max: float
    source_nonfinite: Mapping[str, int]
    broken: set[str] = field(default_factory=set)
    given_stats: MatrixStats | None = None
    # A staged validation (the caller still fills the matrix): the stats come later, with the cell id codes
    # when ``expected_cell_codes``; ``expected_image_codes`` are the caller's image codes, usable at once.
    stats_pending: bool = False
    expected_cell_codes: bool = False
    expected_image_codes: tuple[np.ndarray, np.ndarray] | None = None
    _stats: MatrixStats | None = None
    _columns: dict[tuple[str, str, str], Any] = field(default_factory=dict)
    _items: dict[Any, Any] = field(default_factory=dict)

    def part(self, name: str) -> Any:
        if "object" in self.broken or name in self.broken:
            raise Skip(f"{name} is missing or not usable")
        return getattr(self.x, name)

    def table(self, name: str) -> pd.DataFrame:
        return self.part(name)

    def items(self, table: str) -> list[tuple[Any, pd.Series]]:
        """(name, column) of every column of a table, in order: pandas builds a Series on every column access, so
        the checks, the portability note and the memo's token share these, made once per validation."""
        return self.frame_items(table, self.table(table))

    def frame_items(self, table: str, frame: pd.DataFrame) -> list[tuple[Any, pd.Series]]:
        """:meth:`items` of ``frame``, the object's table ``table`` (whether or not a check found it unusable)."""
        if table not in self._items:
            self._items[table] = list(frame.items())
        return self._items[table]

    def single_columns(self, table: str) -> dict[Any, pd.Series]:
        """{name: column} of :meth:`items` without the names that are duplicated (the required-columns check
        reports those), in order."""
        key = ("single", table)
        if key not in self._items:
            self._items[key] = dict(without_repeated_names(self.items(table)))
        return self._items[key]

    def col(self, table: str, column: str) -> pd.Series:
        frame = self.table(table)
        if column not in frame.columns:
            raise Skip(f"{table} has no column {column!r}")
        values = self.single_columns(table).get(column)
        if values is None:
            raise Skip(f"{table} has duplicated column {column!r}")
        return values

    def text(self, table: str, column: str) -> pd.Series:
        """A column as object strings with None for NA (skips when it is not character)."""
        return self._converted(table, column, "text")

    def strings(self, table: str, column: str) -> pd.Series:
        """A character column as pandas ``string`` (Arrow-backed: fast on a million ids; skips like text)."""
        return self._converted(table, column, "strings")

    def number(self, table: str, column: str) -> np.ndarray:
        """A numeric column as float64 with NaN for NA (skips when it is not numeric)."""
        return self._converted(table, column, "number")

    def _converted(self, table: str, column: str, how: str) -> Any:
        # Several checks read the same cells columns; converting a million ids once, not per check.
        key = (table, column, how)
        if key not in self._columns:
            s = self.col(table, column)
            if how in ("text", "strings"):
                if spec_type_of(s) != "character":
                    raise Skip(f"{table}.{column} is not character")
                target = PANDAS_DTYPES["character"]
                self._columns[key] = _objects(s) if how == "text" else s if s.dtype == target else s.astype(target)
            else:
                if spec_type_of(s) not in ("double", "integer"):
                    raise Skip(f"{table}.{column} is not numeric")
                self._columns[key] = s.to_numpy(dtype=np.float64, na_value=np.nan)
        return self._columns[key]

    def matrix(self) -> Any:
        m = self.part("measurements")
        if "measurements_type" in self.broken:
            raise Skip("measurements is not a double matrix")
        return m

    def stats(self) -> MatrixStats:
        """Counts and per-image ranges of the matrix: one pass, shared by the four matrix checks.

        Raises :class:`StatsPending` while the stats are still being gathered (the matrix is being
        filled); :meth:`give_stats` ends that."""
        m = self.matrix()
        if self.stats_pending:
            raise StatsPending()
        if self._stats is None:
            self._stats = self.given_stats if self._usable(self.given_stats, m) else self._gather(m)
        return self._stats

    def give_stats(self, stats: MatrixStats) -> None:
        """The stats a staged validation waited for (see :attr:`stats_pending`)."""
        self.given_stats, self.stats_pending = stats, False

    def nonfinite_in_source(self) -> dict[str, int]:
        """{feature id: NaN/infinite values the source stored as numbers}: what the reader's stats found,
        and what the caller passed as ``source_nonfinite`` (that wins for a feature named in both)."""
        found = self.given_stats.stored_nonfinite if self.given_stats is not None else {}
        return {**found, **self.source_nonfinite}

    def _usable(self, stats: MatrixStats | None, m: Any) -> bool:
        return stats is not None and stats.n_features == m.shape[1] and (stats.has_ranges or not self._rows_match())

    def _rows_match(self) -> bool:
        return "measurements_rows" not in self.broken and "cells" not in self.broken

    def _gather(self, m: Any) -> MatrixStats:
        codes, n_images = None, 0
        if self._rows_match():
            try:
                codes, uniques = self.image_codes()
                n_images = len(uniques)
            except Skip:
                pass
        return matrix_stats(m, codes, n_images)

    def image_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """(image code of each cell, -1 for NA; the image ids in order of first appearance)."""
        key = ("cells", "image_id", "codes")
        if key not in self._columns:
            ids = self.strings("cells", "image_id")
            # a reader's, made from the same column
            known = self.expected_image_codes if self.given_stats is None else self.given_stats.image_codes
            self._columns[key] = known if known is not None and len(known[0]) == len(ids) else first_seen_codes(ids)
        return self._columns[key]

    def cell_codes(self) -> np.ndarray:
        """Dense codes of the cells' cell_id (-1 for NA): the reader's when it made them from the same column
        (:attr:`MatrixStats.cell_codes`), else encoded here. Raises :class:`StatsPending` while pending stats
        will bring them."""
        key = ("cells", "cell_id", "codes")
        if key not in self._columns:
            if self.stats_pending and self.expected_cell_codes:
                raise StatsPending()  # the reader's codes are on their way; encoding them here would do it twice
            ids = self.strings("cells", "cell_id")
            known = None if self.given_stats is None else self.given_stats.cell_codes
            self._columns[key] = known if known is not None and len(known) == len(ids) else first_seen_code_array(ids)
        return self._columns[key]

    def per_cell(self, by_image: Mapping[Any, Any], missing: Any, dtype: Any) -> np.ndarray:
        """``by_image[image_id]`` of every cell (``missing`` for NA or unknown image ids)."""
        codes, uniques = self.image_codes()
        lookup = np.array([by_image.get(u, missing) for u in uniques] + [missing], dtype=dtype)
        return lookup[codes]  # code -1 (NA) picks the trailing ``missing``


def _objects(s: pd.Series) -> pd.Series:
    """A character column as str objects with None for NA (from Arrow directly when Arrow holds it)."""
    if is_arrow_text(s):
        values = pa.chunked_array(pa.array(s.array)).to_numpy(zero_copy_only=False)
        return pd.Series(values, index=s.index, name=s.name, dtype=object, copy=False)
    return s.astype(object).where(s.notna(), None)
