"""The public names of cellspec_sc.cohort are a listed set (an addition is a decision), each resolves, and importing
the package loads nothing heavy until a name is used."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import cellspec_sc.cohort as cohort

PUBLIC = {"Cohort", "CohortError", "CohortReport", "Failure", "open_cohort"}


def test_the_public_names_are_the_listed_ones_and_resolve():
    assert set(cohort.__all__) == PUBLIC and PUBLIC <= set(dir(cohort))
    for name in PUBLIC:
        assert getattr(cohort, name).__module__.startswith("cellspec_sc.cohort._")


def test_importing_the_package_loads_neither_pandas_nor_dask():
    probe = ("import cellspec_sc.cohort, json, sys\n"
             "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'pandas', 'dask', 'pyarrow'})))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(run.stdout) == []


def test_no_module_of_the_cohort_imports_the_widgets():
    """Cohort.preview reaches the widget through the hook the composition root fills, not by an import."""
    for path in Path(cohort.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.startswith("cellspec_sc.widgets") for n in names), path.name
