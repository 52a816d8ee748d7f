"""The layers hold, over every import of cellspec_sc/, bridges/ and widgets/ (module level and inside functions;
``if TYPE_CHECKING:`` blocks excepted):

(a) a module imports only from its own layer or a lower one (docs/architecture.md; the order is LAYERS below and the
    import-linter contract in pyproject.toml), and the independent packages of one layer not from each other;
(b) no module imports a ``_name`` (a ``_module`` or a ``_function``) of another subpackage: cross-subpackage
    imports go through the other subpackage's ``__init__`` or one of its public modules;
(c) every public module (no ``_`` at the start of any part of its path) has ``__all__``;

and every module belongs to a layer. Each failure names the importing file, the line and the rule. Import-linter
checks (a) from the contract in pyproject.toml (test_import_linter_contracts_hold runs it); this test does not rely
on its configuration for imports inside functions or ``TYPE_CHECKING`` blocks, and adds (b) and (c).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# folder of the repository -> the dotted package it installs as (pyproject.toml [tool.setuptools.package-dir])
CODE_ROOTS = {"cellspec_sc": "cellspec_sc", "bridges": "cellspec_sc.bridges", "widgets": "cellspec_sc.widgets"}
COMPOSITION_ROOT = "cellspec_sc"  # cellspec_sc/__init__.py: lazy names of every layer
# lowest first; a tuple is one layer of packages that do not import each other, a set one whose members may
LAYERS: list[tuple[str, ...] | frozenset[str]] = [
    frozenset({"cellspec_sc.errors", "cellspec_sc.progress", "cellspec_sc._codec", "cellspec_sc._background",
               "cellspec_sc._files", "cellspec_sc._lazy"}),
    ("cellspec_sc.spec", "cellspec_sc.display"),
    frozenset({"cellspec_sc.model"}),
    frozenset({"cellspec_sc.validation"}),
    frozenset({"cellspec_sc.io"}),
    frozenset({"cellspec_sc.images"}),
    frozenset({"cellspec_sc.readers"}),
    frozenset({"cellspec_sc.bridges"}),
    frozenset({"cellspec_sc.cohort"}),
    frozenset({"cellspec_sc.widgets"}),
    frozenset({"cellspec_sc.cli"}),
    frozenset({"cellspec_sc.docgen"}),
]


@dataclass(frozen=True)
class Import:
    """One imported module or name: ``target`` is dotted and absolute; ``name`` is set for ``from m import name``
    when ``name`` is not a module."""

    line: int
    target: str
    name: str | None


def module_name(path: Path, root: Path, code_roots: dict[str, str]) -> str:
    """The dotted name of the module at ``path`` (``bridges/x/_y.py`` -> ``cellspec_sc.bridges.x._y``)."""
    for folder, package in code_roots.items():
        base = root / folder
        if path.is_relative_to(base):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            return ".".join([package, *parts])
    raise ValueError(f"{path} is outside {sorted(code_roots)}")


def modules(root: Path, code_roots: dict[str, str]) -> dict[str, Path]:
    """Dotted name -> file, for every module under the code roots."""
    out = {}
    for folder in code_roots:
        for path in sorted((root / folder).rglob("*.py")):
            out[module_name(path, root, code_roots)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree``, at any depth, except those inside ``if TYPE_CHECKING:``."""
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return sorted(found, key=lambda n: n.lineno)


def imports_of(name: str, path: Path, known: dict[str, Path], top: str = COMPOSITION_ROOT) -> list[Import]:
    """The imports of the package's own modules made by module ``name`` (relative ones resolved)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [Import(node.lineno, alias.name, None) for alias in node.names
                    if alias.name == top or alias.name.startswith(top + ".")]
            continue
        if node.level:
            base = package.split(".")
            base = base[:len(base) - node.level + 1]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        if not (source == top or source.startswith(top + ".")):
            continue
        for alias in node.names:
            submodule = f"{source}.{alias.name}"
            if submodule in known:
                out.append(Import(node.lineno, submodule, None))
            else:
                out.append(Import(node.lineno, source, None if alias.name == "*" else alias.name))
    return out


def layer_of(name: str, layers=LAYERS) -> tuple[int, str] | None:
    """(index of the layer, the layer's package holding ``name``), or None when no layer holds it."""
    for index, layer in enumerate(layers):
        for package in layer:
            if name == package or name.startswith(package + "."):
                return index, package
    return None


def _private_owner(target: str, name: str | None, known: dict[str, Path]) -> str | None:
    """The package a private module or name of ``target`` belongs to (None when nothing private is imported)."""
    parts = target.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_"):
            return ".".join(parts[:i])
    if name and name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
        is_package = target in known and known[target].name == "__init__.py"
        return target if is_package else target.rpartition(".")[0]
    return None


def _is_public(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def _has_all(path: Path) -> bool:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return True
    return False


def violations(root: Path = ROOT, code_roots: dict[str, str] = CODE_ROOTS, layers=LAYERS,
               composition_root: str = COMPOSITION_ROOT) -> list[str]:
    """``file:line: rule: what`` for every import or module that breaks a rule, in file order."""
    known = modules(root, code_roots)
    out = []
    for name, path in known.items():
        where = path.relative_to(root).as_posix()
        own = layer_of(name, layers)
        if _is_public(name) and not _has_all(path):
            out.append(f"{where}:1: (c) public module without __all__: {name}")
        if name == composition_root:
            continue
        if own is None:
            out.append(f"{where}:1: no layer: {name} is in no layer of the order")
            continue
        for imp in imports_of(name, path, known, composition_root.split(".")[0]):
            shown = imp.target + (f".{imp.name}" if imp.name else "")
            if imp.target == composition_root:
                out.append(f"{where}:{imp.line}: (a) upward import: {name} imports the composition root {shown}")
                continue
            theirs = layer_of(imp.target, layers)
            if theirs is None:
                out.append(f"{where}:{imp.line}: no layer: {name} imports {shown}, in no layer of the order")
            elif theirs is not None and theirs[0] > own[0]:
                out.append(f"{where}:{imp.line}: (a) upward import: {name} (layer {own[0]}, {own[1]}) imports "
                           f"{shown} (layer {theirs[0]}, {theirs[1]})")
            elif theirs is not None and theirs[0] == own[0] and theirs[1] != own[1] \
                    and isinstance(layers[own[0]], tuple):
                out.append(f"{where}:{imp.line}: (a) independent packages: {name} ({own[1]}) imports {shown} "
                           f"({theirs[1]}), which share layer {own[0]} and must not import each other")
            owner = _private_owner(imp.target, imp.name, known)
            if owner is not None and not name.startswith(owner + ".") and name != owner:
                out.append(f"{where}:{imp.line}: (b) private name of another subpackage: {name} imports {shown} "
                           f"(private to {owner})")
    return out


def test_every_import_follows_the_layers_and_the_public_boundary():
    found = violations()
    counts = {rule: sum(f.split(": ", 2)[1].startswith(rule) for f in found)
              for rule in ("(a)", "(b)", "(c)", "no layer")}
    assert not found, f"{len(found)} violation(s) {counts}:\n" + "\n".join(found)


# -- the rules on a tiny tree ------------------------------------------------------------------------
TINY_LAYERS = [frozenset({"pkg.base"}), ("pkg.left", "pkg.right"), frozenset({"pkg.top", "pkg.plug"})]
TINY_ROOTS = {"pkg": "pkg", "plug": "pkg.plug"}
GOOD = {
    "pkg/__init__.py": "__all__ = ['f']\ndef __getattr__(name):\n    from pkg.top import f\n    return f\n",
    "pkg/base.py": "__all__ = ['g']\ndef g(): return 1\n",
    "pkg/left/__init__.py": "from ._impl import h\n__all__ = ['h']\n",
    "pkg/left/_impl.py": "from pkg.base import g\nfrom . import _more\ndef h(): return g()\n",
    "pkg/left/_more.py": "",
    "pkg/right/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.left import h\n"
                             "__all__ = []\n",
    "pkg/top.py": "__all__ = ['f']\nfrom pkg.left import h\n"
                  "def f():\n    from pkg.plug import p\n    return h(), p()\n",
    "plug/__init__.py": "__all__ = ['p']\nfrom pkg.plug._p import p\n",
    "plug/_p.py": "from ..base import g\nfrom pkg.top import f\ndef p(): return g()\n",
}


def tiny_tree(tmp_path: Path, changes: dict[str, str]) -> list[str]:
    for relative, text in {**GOOD, **changes}.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return violations(tmp_path, TINY_ROOTS, TINY_LAYERS, "pkg")


def test_a_tree_that_follows_the_rules_passes(tmp_path):
    assert tiny_tree(tmp_path, {}) == []


@pytest.mark.parametrize(("change", "expected"), [
    ({"pkg/base.py": "__all__ = []\ndef g():\n    from pkg.top import f\n"},
     "pkg/base.py:3: (a) upward import: pkg.base (layer 0, pkg.base) imports pkg.top.f (layer 2, pkg.top)"),
    ({"pkg/base.py": "__all__ = []\nimport pkg.left\n"},
     "pkg/base.py:2: (a) upward import: pkg.base (layer 0, pkg.base) imports pkg.left (layer 1, pkg.left)"),
    ({"pkg/base.py": "__all__ = []\nimport pkg\n"},
     "pkg/base.py:2: (a) upward import: pkg.base imports the composition root pkg"),
    ({"pkg/right/__init__.py": "__all__ = []\nfrom pkg.left import h\n"},
     "pkg/right/__init__.py:2: (a) independent packages: pkg.right (pkg.right) imports pkg.left.h (pkg.left), "
     "which share layer 1 and must not import each other"),
    ({"pkg/top.py": "__all__ = []\nfrom pkg.left._impl import h\n"},
     "pkg/top.py:2: (b) private name of another subpackage: pkg.top imports pkg.left._impl.h (private to pkg.left)"),
    ({"pkg/top.py": "__all__ = []\ndef f():\n    from pkg.left import _hidden\n"},
     "pkg/top.py:3: (b) private name of another subpackage: pkg.top imports pkg.left._hidden (private to pkg.left)"),
    ({"pkg/top.py": "__all__ = []\nfrom pkg import f\n"},
     "pkg/top.py:2: (a) upward import: pkg.top imports the composition root pkg.f"),
    ({"pkg/top.py": "def f(): pass\n"}, "pkg/top.py:1: (c) public module without __all__: pkg.top"),
    ({"pkg/stray.py": "__all__ = []\n"}, "pkg/stray.py:1: no layer: pkg.stray is in no layer of the order"),
])
def test_a_tree_that_breaks_a_rule_fails_naming_file_line_and_rule(tmp_path, change, expected):
    found = tiny_tree(tmp_path, change)
    assert expected in found, found


def test_a_private_name_of_a_module_in_the_same_package_is_allowed(tmp_path):
    assert tiny_tree(tmp_path, {"pkg/left/_more.py": "from pkg.left._impl import h\nfrom ._impl import _x\n"}) == []


def test_the_import_linter_contract_names_the_same_order():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    assert config["root_package"] == "cellspec_sc"
    contract = next(c for c in config["contracts"] if c["type"] == "layers")
    assert config["exclude_type_checking_imports"] is True
    expected = [(" | " if isinstance(layer, tuple) else " : ").join(sorted(layer)) for layer in LAYERS]
    assert list(reversed(contract["layers"])) == expected


def staged_package(into: Path, root: Path = ROOT, code_roots: dict[str, str] = CODE_ROOTS) -> Path:
    """A copy of the package's sources as one folder tree (bridges/ and widgets/ inside cellspec_sc/), which is how
    they install: grimp, under import-linter, walks the root package's folder and would not find the others."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder, package in code_roots.items():
        shutil.copytree(root / folder, into.joinpath(*package.split(".")), ignore=ignore, dirs_exist_ok=True)
    return into


@pytest.mark.skipif(not (Path(sys.executable).parent / "lint-imports").exists(),
                    reason="import-linter is not installed (pip install -e '.[test]')")
def test_import_linter_contracts_hold(tmp_path):
    staged = staged_package(tmp_path / "src")
    env = {**os.environ, "PYTHONPATH": str(staged)}
    proc = subprocess.run([str(Path(sys.executable).parent / "lint-imports"), str(ROOT / "pyproject.toml"),
                           "--no-cache"], cwd=staged, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]


# -- the public API is a listed set ------------------------------------------------------------------
PUBLIC_API = {
    "cellspec_sc": {
        "CellSpec", "CellspecError", "CellspecWarning", "Cohort", "FormatError", "InputError", "MissingPath",
        "SPEC_VERSION", "ValidationError", "ValidationReport", "example", "from_anndata", "from_spatialdata",
        "intensity_features", "open_cohort", "open_image", "other_feature", "preview", "read", "read_cellprofiler",
        "read_export", "read_halo", "read_inform", "read_mcmicro", "read_qupath", "read_steinbock", "settings",
        "to_anndata", "to_luxar", "to_spatialdata", "validate", "vocabulary", "write",
    },
    "cellspec_sc.bridges": {"from_anndata", "from_spatialdata", "intensity_features", "other_feature", "to_anndata",
                            "to_luxar", "to_spatialdata"},
    "cellspec_sc.widgets": {"Preview", "SpaceView", "preview"},
    "cellspec_sc.cohort": {"Cohort", "CohortError", "CohortReport", "Failure", "open_cohort"},
}
API_PROBE = """
import importlib, json, sys, types
out = {}
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    names = getattr(module, "__all__", None)
    listed = names is not None
    # without __all__: the public names the __init__ defines (submodules imported by anyone are attributes too)
    names = list(names) if listed else [n for n in dir(module) if not n.startswith("_") and not (
        isinstance(getattr(module, n), types.ModuleType) and getattr(module, n).__name__.startswith(name + "."))]
    missing = [n for n in names if not hasattr(module, n)]
    out[name] = {"names": sorted(names), "listed": listed, "missing": missing}
print(json.dumps(out))
"""


def test_the_public_api_is_the_listed_set():
    """An addition to (or removal from) a public namespace is a decision: it changes this list."""
    import json

    proc = subprocess.run([sys.executable, "-c", API_PROBE, *PUBLIC_API], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.splitlines()[-1])
    for module, expected in PUBLIC_API.items():
        names = set(found[module]["names"])
        assert names == expected, f"{module}: added {sorted(names - expected)}, removed {sorted(expected - names)}"
        assert not found[module]["missing"], f"{module}.__all__ names what it lacks: {found[module]['missing']}"


def test_the_top_level_all_names_the_errors_and_every_lazy_name_in_order():
    """``cellspec_sc.__all__`` is a literal list, so that linters see the ``TYPE_CHECKING`` imports as re-exports;
    it must not drift from ``_LAZY``."""
    import cellspec_sc as cs

    assert cs.__all__ == ["CellspecError", "CellspecWarning", "FormatError", "InputError", "MissingPath",
                          "ValidationError", *cs._LAZY]
