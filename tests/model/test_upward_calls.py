"""The model calls validation, io and the widgets only through the registry the package root fills: no module of
``cellspec_sc.model`` imports a layer above it, not even inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import cellspec_sc as cs
from cellspec_sc.model import NotProvided, _methods, provide, provided

MODEL = Path(cs.__file__).parent / "model"
BELOW_OR_SAME = ("cellspec_sc.model", "cellspec_sc.spec", "cellspec_sc.display", "cellspec_sc.errors",
                 "cellspec_sc.progress", "cellspec_sc._background", "cellspec_sc._codec", "cellspec_sc._files",
                 "cellspec_sc._lazy")


def imported_modules(path: Path) -> set[str]:
    """Every cellspec_sc module ``path`` imports, at the top, inside functions or under TYPE_CHECKING."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m.split(".")[0] == "cellspec_sc"}


def test_no_model_module_imports_a_layer_above():
    upward = {f"{path.name} imports {module}" for path in MODEL.glob("*.py") for module in imported_modules(path)
              if not module.startswith(BELOW_OR_SAME)}
    assert not upward, sorted(upward)


def test_the_import_walk_sees_imports_inside_functions():
    assert "cellspec_sc.model._methods" in imported_modules(MODEL / "_cellspec.py")
    assert imported_modules(Path(cs.__file__).parent / "cohort" / "_cohort.py")  # it would pass vacuously otherwise


@pytest.mark.parametrize("operation", ["validate", "write", "preview"])
def test_cellspec_methods_call_what_was_provided(monkeypatch, operation):
    calls = []
    monkeypatch.setitem(_methods._IMPLEMENTATIONS, operation, lambda *args, **options: calls.append((args, options)))
    x = cs.example()
    {"validate": lambda: x.validate(na_max=0.1), "write": lambda: x.write("somewhere", format="tsv"),
     "preview": lambda: x.preview(feature="f")}[operation]()
    assert len(calls) == 1 and calls[0][0][0] is x


def test_the_package_root_provides_every_delegated_operation():
    for operation in ("validate", "write", "preview", "cohort_preview"):
        assert callable(provided(operation))
    assert provided("validate") is cs.validate and provided("write") is cs.write


def test_an_operation_nobody_provided_is_refused_naming_it(monkeypatch):
    monkeypatch.delitem(_methods._IMPLEMENTATIONS, "validate")
    with pytest.raises(NotProvided, match="no implementation of 'validate' was provided"):
        cs.example().validate()
    assert isinstance(NotProvided("x"), cs.CellspecError)


def test_a_provided_module_path_is_imported_on_first_use_only(monkeypatch):
    monkeypatch.setitem(_methods._IMPLEMENTATIONS, "doubled", "operator:mul")
    assert _methods._IMPLEMENTATIONS["doubled"] == "operator:mul"
    assert provided("doubled")(2, 21) == 42
    assert callable(_methods._IMPLEMENTATIONS["doubled"])
    provide("doubled", str)
    assert provided("doubled") is str
