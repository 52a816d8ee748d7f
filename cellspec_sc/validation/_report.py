"""The outcome of :func:`cellspec_sc.validate`: one :class:`CheckResult` per check of section 10, gathered
in a :class:`ValidationReport` that prints as text (terminal) and HTML (Jupyter).

>>> r = ValidationReport([CheckResult("cells_key_unique", "structure", "pass", "ok", "ok")])
>>> r.ok, r.counts()["pass"]
(True, 1)
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from cellspec_sc.errors import ValidationError

MAX_ROWS_SHOWN = 5  # offending rows kept in a result and printed in a message
STATUS_ORDER = {"fail": 0, "warn": 1, "skip": 2, "pass": 3}


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check. ``rows`` holds the first offending 0-based row positions."""

    name: str
    level: str
    status: str
    message: str
    rule: str
    column: str | None = None
    rows: tuple[int, ...] = ()
    count: int = 0


@dataclass
class ValidationReport:
    """All check results of one :func:`validate` call, in the order of section 10.

    >>> from cellspec_sc import example
    >>> rep = example().validate()
    >>> [r.status for r in rep.results][:3]
    ['pass', 'pass', 'pass']
    """

    results: list[CheckResult]
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """False iff a structure check failed.

        Returns
        -------
        bool
            True when no check has the status ``"fail"`` (warnings do not count).

        Examples
        --------
        >>> from cellspec_sc import example
        >>> rep = example().validate(area_range=(1, 50))
        >>> rep.ok
        True
        """
        return not self.failures

    @property
    def failures(self) -> list[CheckResult]:
        """The results of the checks that failed, in spec order.

        Returns
        -------
        list of CheckResult
            Each failed check, with its message, rule, column and first offending rows.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> rep = example().validate(area_range=(1, 50))
        >>> rep.failures
        []
        """
        return [r for r in self.results if r.status == "fail"]

    @property
    def warnings(self) -> list[CheckResult]:
        """The results of the checks that warned, in spec order.

        Returns
        -------
        list of CheckResult
            Each check with the status ``"warn"``.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> rep = example().validate(area_range=(1, 50))
        >>> [r.name for r in rep.warnings]
        ['area_range']
        """
        return [r for r in self.results if r.status == "warn"]

    def result(self, name: str) -> CheckResult:
        """The result of the check called ``name``.

        Parameters
        ----------
        name
            A check name of section 10 (``"cells_key_unique"``, ``"area_range"`` ...).

        Returns
        -------
        CheckResult
            Its status, message, rule, column, first offending rows and count.

        Raises
        ------
        KeyError
            No check has that name.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> rep = example().validate(area_range=(1, 50))
        >>> rep.result("area_range").status
        'warn'
        """
        for r in self.results:
            if r.name == name:
                return r
        raise KeyError(f"no check named {name!r}")

    def status(self, name: str) -> str:
        """``"pass"``, ``"fail"``, ``"warn"`` or ``"skip"`` for the named check.

        Parameters
        ----------
        name
            A check name of section 10.

        Returns
        -------
        str
            The status of that check.

        Raises
        ------
        KeyError
            No check has that name.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> rep = example().validate(area_range=(1, 50))
        >>> rep.status("area_range"), rep.status("cells_key_unique")
        ('warn', 'pass')
        """
        return self.result(name).status

    def ordered(self) -> list[CheckResult]:
        """Results with failures first, then warnings, skips, passes (spec order within each).

        Returns
        -------
        list of CheckResult
            Every result, problems first.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> rep = example().validate(area_range=(1, 50))
        >>> rep.ordered()[0].name
        'area_range'
        """
        return sorted(self.results, key=lambda r: STATUS_ORDER[r.status])

    def counts(self) -> dict[str, int]:
        """How many checks have each status.

        Returns
        -------
        dict
            ``{"fail": n, "warn": n, "skip": n, "pass": n}``.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> rep = example().validate(area_range=(1, 50))
        >>> rep.counts()["warn"], rep.counts()["fail"]
        (1, 0)
        """
        return {s: sum(r.status == s for r in self.results) for s in STATUS_ORDER}

    def raise_if_failed(self, context: str | None = None) -> ValidationReport:
        """Raise :class:`cellspec_sc.ValidationError` if a structure check failed; else return self.

        Parameters
        ----------
        context
            A sentence put before the failures in the error's message (what the caller was doing).

        Returns
        -------
        ValidationReport
            This report, when :attr:`ok`.

        Raises
        ------
        ValidationError
            A structure check failed; the message names each failed rule, column and rows.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> x = example()
        >>> x.validate().raise_if_failed().ok
        True
        >>> broken = x.replace(cells=x.cells.assign(cell_id="1"))
        >>> broken.validate().raise_if_failed("reading run1")
        Traceback (most recent call last):
        ...
        cellspec_sc.errors.ValidationError: reading run1...
        """
        if not self.ok:
            raise ValidationError(self, context)
        return self

    def to_frame(self) -> pd.DataFrame:
        """One row per check: name, level, status, message, column, count.

        Returns
        -------
        pandas.DataFrame
            The results in the order of :meth:`ordered`.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> rep = example().validate(area_range=(1, 50))
        >>> rep.to_frame().loc[0, ["name", "status"]].tolist()
        ['area_range', 'warn']
        """
        return pd.DataFrame([{"name": r.name, "level": r.level, "status": r.status, "message": r.message,
                              "column": r.column, "count": r.count} for r in self.ordered()])

    def format(self, *, only_problems: bool = False) -> str:
        """Plain-text report, failures first.

        Parameters
        ----------
        only_problems
            List only the failures and warnings.

        Returns
        -------
        str
            A heading with the counts, then one line per check.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> rep = example().validate(area_range=(1, 50))
        >>> print(rep.format(only_problems=True))  # doctest: +NORMALIZE_WHITESPACE
        cellspec validation: OK (... pass, 0 fail, 1 warn, ... skip)
          WARN  area_range  ...
        """
        c = self.counts()
        head = (f"cellspec validation: {'OK' if self.ok else 'FAILED'} "
                f"({c['pass']} pass, {c['fail']} fail, {c['warn']} warn, {c['skip']} skip)")
        rows = [r for r in self.ordered() if not only_problems or r.status in ("fail", "warn")]
        width = max((len(r.name) for r in rows), default=0)
        return "\n".join([head] + [f"  {r.status.upper():<4}  {r.name:<{width}}  {r.message}" for r in rows])

    def __str__(self) -> str:
        return self.format()

    def __repr__(self) -> str:
        return self.format()

    def _repr_html_(self) -> str:
        colours = {"fail": "#c62828", "warn": "#ef6c00", "skip": "#757575", "pass": "#2e7d32"}
        c = self.counts()
        rows = "".join(
            f"<tr><td style='color:{colours[r.status]};font-weight:bold'>{r.status}</td>"
            f"<td><code>{html.escape(r.name)}</code></td><td>{html.escape(r.level)}</td>"
            f"<td style='text-align:left'>{html.escape(r.message)}</td></tr>"
            for r in self.ordered())
        return ("<div class='cellspec-validation'>"
                f"<strong>cellspec validation: {'OK' if self.ok else 'FAILED'}</strong>"
                f" ({c['pass']} pass, {c['fail']} fail, {c['warn']} warn, {c['skip']} skip)"
                f"<table><tr><th>status</th><th>check</th><th>level</th><th>message</th></tr>{rows}</table></div>")
