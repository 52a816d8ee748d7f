"""The package layout: docs/architecture.md matches the folders, every package folder is installed, every
imported distribution is declared and every declared one is used."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
CODE_ROOTS = {"cellspec_sc": "cellspec_sc", "bridges": "cellspec_sc.bridges", "widgets": "cellspec_sc.widgets"}
TOP_FOLDERS = ("tests", "notebooks", "docs", "benchmarks", ".ci")
# in the test extra for the README's AnnData workflow (sc.pp.neighbors, sc.tl.leiden(flavor="igraph")), never
# imported by the package: distribution -> what the README does with it
WORKFLOW_ONLY = {"scanpy": "sc.tl.leiden", "igraph": 'flavor="igraph"', "pynndescent": "sc.pp.neighbors"}
# package folders that stay out of the wheel -> why
NOT_INSTALLED = {"cellspec_sc.docgen": "a repository tool: it rewrites pages of docs/, which the wheel does not hold"}
# extras that are tool groups, not features of the package
TOOL_EXTRAS = ("test", "docs")


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def package_folders() -> dict[str, str]:
    """Folder (relative, with a trailing /) -> dotted package name, for every folder holding an __init__.py."""
    out = {}
    for folder, package in CODE_ROOTS.items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            relative = init.parent.relative_to(ROOT / folder)
            out[f"{init.parent.relative_to(ROOT).as_posix()}/"] = ".".join([package, *relative.parts])
    return out


def tree_folders() -> list[str]:
    """The first word of every line of the page's tree block."""
    text = PAGE.read_text(encoding="utf-8")
    block = text.split("## The tree", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    return [line.split()[0] for line in block.strip().splitlines()]


def test_architecture_tree_lists_every_package_and_top_folder():
    listed = set(tree_folders())
    missing = [f for f in [*package_folders(), *(f"{t}/" for t in TOP_FOLDERS)] if f not in listed]
    assert not missing, f"docs/architecture.md does not list {missing}"


def test_architecture_page_names_only_existing_folders_and_files():
    text = PAGE.read_text(encoding="utf-8")
    paths = re.findall(r"(?<![\w./])((?:cellspec_sc|bridges|widgets|tests|notebooks|docs|benchmarks|\.ci)/[\w./-]*)",
                       text)
    paths = {p.rstrip(".") for p in paths}
    assert all(name.endswith("/") for name in tree_folders()) and len(paths) > 20
    absent = sorted(p for p in paths if not (ROOT / p).exists())
    assert not absent, f"docs/architecture.md names paths that do not exist: {absent}"


def test_architecture_page_is_linked_from_the_readme():
    assert "(docs/architecture.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_package_folder_is_installed():
    declared = set(pyproject()["tool"]["setuptools"]["packages"])
    found = set(package_folders().values()) - set(NOT_INSTALLED)
    assert declared == found, f"pyproject.toml packages: missing {found - declared}, extra {declared - found}"
    for package in found | set(NOT_INSTALLED):  # and each imports from the tree
        __import__(package)
        assert Path(sys.modules[package].__file__).resolve().is_relative_to(ROOT)


def imported_distributions() -> set[str]:
    """Distributions of every third-party module imported by the package code (at any depth of a module)."""
    modules = set()
    for folder in CODE_ROOTS:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    modules.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules.add(node.module.split(".")[0])
    third_party = modules - set(sys.stdlib_module_names) - {"cellspec_sc"}
    owners = importlib.metadata.packages_distributions()
    unknown = sorted(m for m in third_party if m not in owners)
    assert not unknown, f"imported but not installed: {unknown}"
    return {normalise(owners[m][0]) for m in third_party}


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def distribution_names(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` name, without the package's own extras (``cellspec_sc[anndata]``)."""
    names = {normalise(re.match(r"[A-Za-z0-9_.-]+", r).group(0)) for r in requirements}
    return names - {"cellspec-sc"}


def declared_distributions() -> set[str]:
    """The core dependencies and those of every feature extra (not the test and docs tool groups)."""
    project = pyproject()["project"]
    extras = [r for name, reqs in project["optional-dependencies"].items() if name not in TOOL_EXTRAS for r in reqs]
    return distribution_names([*project["dependencies"], *extras])


# declared, never imported by name: fsspec loads the implementation of a URL's protocol itself
LOADED_BY_PLUGIN = {"s3fs": "s3:// for fsspec", "adlfs": "az:// for fsspec"}


def test_every_imported_package_is_declared_and_every_declared_one_is_used():
    imported, declared = imported_distributions(), declared_distributions()
    assert imported - declared == set(), "imported but not declared in pyproject.toml"
    assert declared - imported - set(LOADED_BY_PLUGIN) == set(), \
        "declared in the core or a feature extra but never imported"
    test_extra = distribution_names(pyproject()["project"]["optional-dependencies"]["test"])
    assert set(WORKFLOW_ONLY) <= test_extra and not set(WORKFLOW_ONLY) & declared
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for distribution, use in WORKFLOW_ONLY.items():
        assert use in readme, f"{distribution} is in the test extra for the README workflow, which no longer uses it"


# -- where imports sit ------------------------------------------------------------------------------

# top-level module -> why it is imported inside the function that needs it (docs/architecture.md lists them)
HEAVY_OPTIONAL = {
    "anndata": "seconds of import; only the AnnData/SpatialData bridges and cohort.to_anndata need it",
    "spatialdata": "seconds of import (dask, xarray, geopandas); only the SpatialData bridge",
    "geopandas": "SpatialData shapes only",
    "luxar": "the Luxar compiler, only when a scene is written",
    "matplotlib": "colour maps in cellspec_sc/display/_colors.py, also used by the light Luxar path",
    "dask": "lazy matrices only (read(lazy=True), cohorts)",
    "distributed": "a dask cluster, only for cohort work",
    "scipy": "sparse graphs and Delaunay contacts only",
    "shapely": "outline geometry only",
    "zarr": "recognising a .zarr store and reading OME-Zarr images only",
    "numcodecs": "zarr's codecs, only while a zarr store is read (bridges/_zarr.py)",
    "tifffile": "OME-TIFF headers (mcmicro --image) and images (cellspec_sc.images)",
    "h5py": "an .h5ad's dataset shapes, only while one is read (bridges/anndata/_files.py)",
    "IPython": "the notebook display of a running viewer only",
    "jsonschema": "imported once with rfc3987_syntax hidden (seconds of grammar compilation)",
    "fsspec": "URLs on object storage only (cellspec_sc/io/_storage.py); local paths never import it",
    "xarray": "an image file's levels as a SpatialData multiscale element (bridges/spatialdata/_images.py)",
    "gcsfs": "gs:// served by an endpoint of one's own (an emulator) only, in cellspec_sc/io/_storage.py",
}
# (module, imported module) -> why a function imports a layer above its own (would be a cycle at module level)
LAYERS_ABOVE: dict[tuple[str, str], str] = {}  # none: upward calls go through the model's registry


def package_modules() -> list[Path]:
    return sorted(p for folder in CODE_ROOTS for p in (ROOT / folder).rglob("*.py"))


def imports_in_functions(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) of every import statement inside a function body of ``path``."""
    found = set()
    for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                if isinstance(node, ast.Import):
                    found.update((node.lineno, alias.name) for alias in node.names)
                elif isinstance(node, ast.ImportFrom):
                    found.add((node.lineno, "." * node.level + (node.module or "")))
    return sorted(found)


def test_imports_inside_functions_are_heavy_optional_dependencies_or_layers_above():
    unexplained, used = [], set()
    for path in package_modules():
        name = path.relative_to(ROOT).as_posix()
        for line, module in imports_in_functions(path):
            if module.split(".")[0] in HEAVY_OPTIONAL:
                continue
            if (name, module) in LAYERS_ABOVE:
                used.add((name, module))
                continue
            unexplained.append(f"{name}:{line} imports {module}")
    assert not unexplained, "move these imports to the top of their module (or explain them in test_layout):\n" + \
        "\n".join(unexplained)
    assert used == set(LAYERS_ABOVE), f"LAYERS_ABOVE entries no function needs: {set(LAYERS_ABOVE) - used}"


def test_the_architecture_page_lists_every_import_allowed_inside_functions():
    section = PAGE.read_text(encoding="utf-8").split("## Imports inside functions", 1)[1]
    missing = [m for m in HEAVY_OPTIONAL if f"`{m}`" not in section]
    missing += [f"{where} -> {module}" for where, module in LAYERS_ABOVE if f"`{where}`" not in section]
    assert not missing, f"docs/architecture.md does not list {missing}"


def test_imports_inside_functions_are_found():
    """The ast walk sees imports in methods and nested functions (it would pass vacuously otherwise)."""
    assert "anndata" in {m for _, m in imports_in_functions(ROOT / "bridges/anndata/_convert.py")}
    assert any(m == "luxar" for _, m in imports_in_functions(ROOT / "bridges/luxar/_scene.py"))
