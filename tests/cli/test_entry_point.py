"""The ``cellspec`` entry point loads only what the command it runs needs; ``import cellspec_sc`` is cheap."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import cellspec_sc as cs
from cellspec_sc.cli.main import COMMANDS, build_parser, main

HEAVY = ("numpy", "pandas", "pyarrow", "anndata", "spatialdata", "scipy", "dask", "matplotlib", "ipywidgets",
         "luxar", "IPython")


def loaded_after(code: str) -> list[str]:
    """The heavy top-level modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return [m for m in json.loads(run.stdout.splitlines()[-1]) if m in HEAVY]


def test_cellspec_help_imports_no_heavy_module():
    code = "from cellspec_sc.cli.main import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    assert loaded_after(code) == []


def test_python_m_cellspec_sc_cli_help_imports_no_heavy_module():
    """The command as users run it: ``-X importtime`` lists every module the interpreter imported."""
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "cellspec_sc.cli", "--help"], capture_output=True,
                         text=True, timeout=120, check=True)
    assert "usage: cellspec" in run.stdout and "convert" in run.stdout
    imported = {line.split("|")[-1].strip().split(".")[0] for line in run.stderr.splitlines()
                if line.startswith("import time:")}
    assert "cellspec_sc" in imported and not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_import_cellspec_sc_imports_no_heavy_module_until_a_name_is_used():
    assert loaded_after("import cellspec_sc as cs; cs.__version__; dir(cs)") == []
    assert {"pandas", "numpy"} <= set(loaded_after("import cellspec_sc as cs; cs.CellSpec"))


def test_a_command_loads_its_own_module_only():
    code = "from cellspec_sc.cli.main import main\nmain(['info', 'example'])"
    probe = f"{code}\nimport sys\nprint(sorted(m for m in sys.modules if m.startswith('cellspec_sc.cli.')))"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True)
    loaded = "['cellspec_sc.cli._info', 'cellspec_sc.cli._sources', 'cellspec_sc.cli.main']"
    assert run.stdout.splitlines()[-1] == loaded


def test_every_public_name_is_listed_and_resolves():
    names = set(cs.__all__)
    assert names <= set(dir(cs))
    for name in names:
        assert getattr(cs, name) is not None
    assert cs.read.__module__ == "cellspec_sc.io._directory" and cs.CellSpec.__name__ == "CellSpec"
    from cellspec_sc import CellSpec, read_steinbock  # noqa: F401  (PEP 562 serves from-imports too)
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        cs.nosuch  # noqa: B018


def test_every_command_module_fills_its_parser():
    parser = build_parser("all")
    for name in COMMANDS:
        with pytest.raises(SystemExit) as stop:
            parser.parse_args([name, "--help"])
        assert stop.value.code == 0
    assert build_parser("info").parse_args(["info", "example", "-v"]).func.__module__ == "cellspec_sc.cli._info"


def test_verbosity_before_or_after_the_command_and_at_nested_levels(capsys):
    assert main(["-v", "info", "example"]) == 0 and main(["info", "example", "-q"]) == 0
    args = build_parser("import").parse_args(["import", "qupath", "f.tsv", "out", "-v", "-v"])
    assert args.verbose == 2 and args.quiet is False
    assert main(["info", "example", "-q", "-v"]) == 2  # mutually exclusive at one level
    assert "not allowed with argument" in capsys.readouterr().err
