"""Every doctest of cellspec_sc, cellspec_sc.bridges, cellspec_sc.widgets and benchmarks/ runs here, module by module.

Modules are found by walking the three installed packages, so a new module's examples run without
being listed anywhere (benchmarks/ is imported from the repository root, which pyproject puts on the path).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

PACKAGES = ("cellspec_sc", "cellspec_sc.bridges", "cellspec_sc.widgets", "benchmarks")
NOT_IMPORTED = {"cellspec_sc.docgen.__main__", "cellspec_sc.cli.__main__"}  # run a command when imported


def package_modules() -> list[str]:
    """Every module of the packages (each package's own __init__ included)."""
    names = set(PACKAGES)
    for package in PACKAGES:
        path = importlib.import_module(package).__path__
        names.update(info.name for info in pkgutil.walk_packages(path, prefix=f"{package}."))
    return sorted(names - NOT_IMPORTED)


def test_every_package_is_walked():
    modules = package_modules()
    for expected in ("cellspec_sc.validation._checks.cells", "cellspec_sc.bridges.luxar",
                     "cellspec_sc.widgets._compute", "cellspec_sc.display._colors", "cellspec_sc.cli.main",
                     "benchmarks.report"):
        assert expected in modules
    assert not any(".bridges.bridges" in m or ".widgets.widgets" in m for m in modules)


@pytest.mark.parametrize("module", package_modules())
def test_doctests(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
