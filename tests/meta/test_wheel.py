"""The distributions: the wheel holds what an installed package needs and nothing that fails installed; installed
without extras into a fresh virtual environment it runs `cellspec demo` and a read/write/validate round trip, and
each function that needs an extra says which one; the sdist holds every file git tracks.

The install uses the package index through pip's cache (a minute or two). The same tests on Python 3.13, when a
``python3.13`` runs (``.python-version`` names it for pyenv), are marked slow: ``.ci/run`` runs them after the
suite (``pytest -m slow tests/meta/test_wheel.py``).
"""

from __future__ import annotations

import email
import json
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from benchmarks.install import build_sdist, build_wheel, fresh_install

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# the core dependencies by their import names
CORE_IMPORTS = {"numpy", "pandas", "pyarrow", "scipy", "jsonschema", "fastjsonschema", "xxhash", "tqdm"}


def interpreters() -> list:
    """This interpreter, and Python 3.13 (slow) when it is another one that runs."""
    found = [sys.executable]
    other = shutil.which("python3.13")
    if other and subprocess.run([other, "-c", "pass"], capture_output=True, timeout=60).returncode == 0 \
            and sys.version_info[:2] != (3, 13):
        found.append(pytest.param(other, marks=pytest.mark.slow))
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module", params=interpreters(), ids=lambda p: Path(p).name)
def core(request, wheel, tmp_path_factory):
    """cellspec_sc installed without extras into a fresh virtual environment."""
    installed = fresh_install(wheel, tmp_path_factory.mktemp("venv") / "core", python=request.param)
    print(f"\ncore install ({Path(request.param).name}): {len(installed.distributions)} packages, "
          f"{installed.megabytes:.0f} MB: {', '.join(sorted(installed.distributions))}")
    return installed


def run(installed, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={"PATH": f"{installed.bin}:/usr/bin:/bin", "HOME": str(cwd)})


def test_the_wheel_holds_the_license_metadata_typing_markers_and_schema_but_no_docgen(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = email.message_from_bytes(archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))))
    assert {"cellspec_sc/py.typed", "cellspec_sc/bridges/py.typed", "cellspec_sc/widgets/py.typed",
            "cellspec_sc/spec/schema/cellspec-1.0.0.schema.json"} <= names
    assert f"cellspec_sc-{PYPROJECT['project']['version']}.dist-info/licenses/LICENSE" in names
    assert not [n for n in names if n.startswith("cellspec_sc/docgen/")]
    assert metadata["License-Expression"] == "MIT"
    assert "Programming Language :: Python :: 3.13" in metadata.get_all("Classifier")
    extras = set(metadata.get_all("Provides-Extra"))
    assert {"anndata", "spatialdata", "luxar", "widgets", "cohort", "images", "cloud", "lazy", "all"} <= extras
    core = {r for r in metadata.get_all("Requires-Dist") if "extra ==" not in r}
    assert {r.split(">")[0] for r in core} == {r.split(">")[0] for r in PYPROJECT["project"]["dependencies"]}


def test_the_core_install_has_only_the_core_dependencies(core):
    names = set(core.distributions)
    assert {"numpy", "pandas", "pyarrow", "scipy", "cellspec_sc"} <= names
    assert not names & {"anndata", "spatialdata", "dask", "distributed", "luxar", "ipywidgets", "matplotlib",
                        "zarr", "scanpy", "shapely", "tifffile"}
    assert len(names) <= 20, sorted(names)


def test_cellspec_demo_runs_in_an_empty_folder(core, tmp_path):
    done = run(core, str(core.bin / "cellspec"), "demo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "read back: identical to what was written (bit for bit)" in done.stdout
    assert (tmp_path / "demo-output" / "example.cellspec" / "MANIFEST.sha256").is_file()
    # the image part needs its extras, and says so instead of failing
    assert 'images and preview: skipped (' in done.stdout and 'pip install "cellspec_sc[images]")' in done.stdout
    assert not (tmp_path / "demo-output" / "preview.html").exists()
    version = run(core, str(core.bin / "cellspec"), "--version", cwd=tmp_path)
    assert version.stdout.strip() == f"cellspec_sc {PYPROJECT['project']['version']} (cellspec spec 1.0.0)"


ROUND_TRIP = """
import json, sys
import numpy as np
import cellspec_sc as cs
x = cs.example(adjacency=True, n_cells=300, seed=3)
y = cs.read(cs.write(x, "slide.cellspec"))
assert y.equals(x) and cs.validate(y).ok
t = cs.read(cs.write(x, "slide-tsv.cellspec", format="tsv"))  # doubles as text: 15 significant digits
assert np.allclose(t.measurements, x.measurements, rtol=1e-14, atol=0, equal_nan=True) and cs.validate(t).ok
print(json.dumps({"n_cells": y.n_cells, "shape": list(y.measurements.shape), "summary": repr(y).splitlines()[0],
                  "version": cs.__version__, "spec": cs.SPEC_VERSION,
                  "third_party": sorted({m.split(".")[0] for m in sys.modules} - set(sys.stdlib_module_names))}))
"""


def test_a_read_write_validate_round_trip_needs_only_the_core(core, tmp_path):
    done = run(core, str(core.python), "-c", ROUND_TRIP, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["n_cells"] == 300 and out["shape"][0] == 300
    assert out["summary"] == "<cellspec> spec 1.0.0" and out["spec"] == "1.0.0"
    assert out["version"] == PYPROJECT["project"]["version"]
    assert CORE_IMPORTS - {"jsonschema"} <= set(out["third_party"])


# what a user calls -> the extra its message must name
MISSING = {
    "cs.to_anndata(x)": "anndata",
    "cs.bridges.anndata.read_h5ad('slide.h5ad')": "anndata",
    "cs.to_spatialdata(x)": "spatialdata",
    "cs.bridges.spatialdata.read_spatialdata('slide.zarr')": "spatialdata",
    "cs.to_luxar(x, 'scene.luxar.zarr')": "luxar",
    "cs.preview(x)": "widgets",
    "x.preview()": "widgets",
    "cs.open_cohort('.')": "cohort",
    "cs.Cohort": "cohort",
    "cs.read(cs.write(x, 'lazy.cellspec'), lazy=True)": "lazy",
    "cs.example(n_cells=10, lazy=True)": "lazy",
    "__import__('cellspec_sc.bridges', fromlist=['x']).to_luxar(x, 's.luxar.zarr')": "luxar",
    "__import__('cellspec_sc.widgets')": "widgets",
    "cs.open_image('slide.ome.tiff')": "images",
    "cs.example(n_cells=10, image_dir='images')": "images",
    "cs.read('s3://bucket/run1')": "cloud",
}
PROBE = """
import json, sys
import cellspec_sc as cs
from cellspec_sc.errors import CellspecError, MissingExtraError
x = cs.example()
out = {}
for call in json.loads(sys.argv[1]):
    try:
        eval(call)
    except ImportError as err:
        out[call] = [str(err), isinstance(err, MissingExtraError), isinstance(err, CellspecError)]
    else:
        out[call] = None
print(json.dumps(out))
"""


def test_each_function_that_needs_an_extra_says_which_and_how_to_install_it(core, tmp_path):
    done = run(core, str(core.python), "-c", PROBE, json.dumps(list(MISSING)), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    for call, extra in MISSING.items():
        assert found[call] is not None, f"{call} did not raise on a core install"
        message, is_missing_extra, is_cellspec_error = found[call]
        assert is_missing_extra and is_cellspec_error, message
        assert message.endswith(f'pip install "cellspec_sc[{extra}]"'), (call, message)
    assert found["cs.to_anndata(x)"][0].startswith("cellspec_sc.to_anndata needs the optional package 'anndata'")
    assert found["x.preview()"][0].startswith("CellSpec.preview needs")


@pytest.mark.parametrize(("args", "extra"), [
    (("convert", "example", "out.h5ad"), "anndata"),
    (("convert", "example", "out.spatialdata.zarr"), "spatialdata"),
    (("luxar", "example", "out.luxar.zarr"), "luxar"),
    (("preview", "example", "-o", "report.html"), "widgets"),
    (("cohort", "summary", "a", "b"), "cohort"),
])
def test_each_command_that_needs_an_extra_says_which(core, tmp_path, args, extra):
    done = run(core, str(core.bin / "cellspec"), *args, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"cellspec: error: cellspec {args[0]} needs the optional package "), done.stderr
    assert done.stderr.rstrip().endswith(f'pip install "cellspec_sc[{extra}]"'), done.stderr


def test_ci_runs_the_python_3_13_install_before_the_suite():
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    slow = ".venv/bin/python -m pytest -p no:cacheprovider -m slow tests/meta/test_wheel.py"
    assert slow in lines and lines.index(slow) < lines.index("make test")
    assert "3.13" in (ROOT / ".python-version").read_text(encoding="utf-8").split()


def test_the_extras_in_the_code_are_extras_of_the_distribution():
    import cellspec_sc as cs
    from cellspec_sc import bridges
    from cellspec_sc.cli.main import COMMANDS

    named = {*cs._EXTRAS.values(), *bridges._EXTRAS.values(), *(c.extra for c in COMMANDS.values() if c.extra)}
    assert named <= set(PYPROJECT["project"]["optional-dependencies"])
    assert set(cs._EXTRAS) == {"to_luxar", "to_anndata", "from_anndata", "to_spatialdata", "from_spatialdata",
                               "preview", "open_cohort", "Cohort", "open_image", "intensity_features",
                               "other_feature"}


def test_the_modules_of_each_extra_are_installed_by_that_extra():
    """``EXTRA_MODULES`` (what ``require_extra`` looks for) names only modules the extra's distributions provide."""
    import importlib.metadata

    from benchmarks.install import direct_requirements
    from cellspec_sc.errors import EXTRA_MODULES

    owners = importlib.metadata.packages_distributions()
    for extra, modules in EXTRA_MODULES.items():
        names = {name.replace("_", "-") for name in direct_requirements(extra)}
        for module in modules:
            assert {o.lower().replace("_", "-") for o in owners[module]} & names, (extra, module)


def git_files() -> set[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    if listed.returncode != 0:
        pytest.skip("not a git checkout (an unpacked sdist): nothing to compare the sdist with")
    return {name for name in listed.stdout.split("\0") if name and (ROOT / name).exists()}


def test_the_sdist_holds_every_tracked_file(tmp_path):
    """Tests, their helpers and data, docs, notebooks and benchmarks: the suite runs from the unpacked sdist."""
    tracked = git_files()
    with tarfile.open(build_sdist(tmp_path)) as archive:
        members = {m.name.split("/", 1)[1] for m in archive.getmembers() if m.isfile() and "/" in m.name}
    assert tracked - members == set(), "tracked but not in the sdist"
    generated = {m for m in members - tracked if not m.startswith("cellspec_sc.egg-info/")} - {"PKG-INFO", "setup.cfg"}
    assert generated == set(), "in the sdist but not tracked"
    assert {"tests/conftest.py", "tests/snippets.py", "tests/strategies.py", "LICENSE"} <= members
