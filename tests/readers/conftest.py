"""Fixtures the reader tests share."""

from __future__ import annotations

import sys

import pytest


@pytest.fixture
def validation_calls(monkeypatch) -> list:
    """Every call of the validation entry point, however a module bound it: each cellspec_sc module
    attribute that is :func:`cellspec_sc.validation.validate` or :func:`~cellspec_sc.validation.staged_validation`
    is wrapped by one counter."""
    import cellspec_sc.cli._imports  # noqa: F401 - bound before wrapping
    import cellspec_sc.io._directory  # noqa: F401
    import cellspec_sc.readers._pipeline  # noqa: F401
    from cellspec_sc.validation import _runner as runner

    calls = []

    def counting(original):
        def counted(x, *args, **kwargs):
            calls.append(type(x).__name__)
            return original(x, *args, **kwargs)
        return counted

    # a reader still encoding the cell ids validates in stages: that is one validation too
    for original in (runner.validate, runner.staged_validation):
        wrapped = counting(original)
        for name, module in list(sys.modules.items()):
            if name.startswith("cellspec_sc"):
                for attr, value in list(vars(module).items()):
                    if value is original:
                        monkeypatch.setattr(module, attr, wrapped)
    return calls
