"""The sdist is self-contained: unpacked in an empty folder it holds what the tests read (conftest.py, the helper
modules, tests/data, the docs pages and notebooks, LICENSE, README ...), and the tests of the core (tests/model,
tests/validation, tests/io) pass there against cellspec_sc installed from that sdist.

The install is a fresh virtual environment into which pip builds and installs the sdist alone (``--no-deps``); the
dependencies come from this environment through a ``.pth`` file naming its site-packages (a path line only, so
the ``.pth`` files there, among them the editable install's finder of the checkout, stay inactive). pytest runs in
the unpacked folder with ``PYTHONSAFEPATH`` set (``-P``) and ``tests`` as its only extra path, so that the
unpacked ``cellspec_sc/`` source folder cannot shadow the installed package. A few minutes, so marked slow:
``.ci/run`` runs it next to the Python 3.13 wheel install (``pytest -m slow tests/meta/test_sdist.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from benchmarks.install import build_sdist

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
# the tests run from the unpacked sdist: the core's behaviour, on disk and in memory
SUITE = ["tests/model", "tests/validation", "tests/io"]
# what the tests and the docs read, compared byte for byte with the checkout
READ_BY_THE_TESTS = ["LICENSE", "README.md", "CHANGELOG.md", "CONTRIBUTING.md", "CITATION.cff", "Makefile",
                     "pyproject.toml", "MANIFEST.in", ".ci/run", "tests/*.py", "tests/data/**/*", "docs/*.md",
                     "docs/*.rst", "docs/conf.py", "notebooks/*.ipynb", "benchmarks/*.py"]



def test_ci_runs_the_sdist_tests_before_the_suite():
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    command = ".venv/bin/python -m pytest -p no:cacheprovider -m slow tests/meta/test_sdist.py"
    assert command in lines and lines.index(command) < lines.index("make test")


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory) -> Path:
    """The sdist built from the checkout, unpacked in an empty folder."""
    where = tmp_path_factory.mktemp("sdist")
    sdist = build_sdist(where)
    assert sdist.name == f"cellspec_sc-{VERSION}.tar.gz"
    with tarfile.open(sdist) as archive:
        archive.extractall(where / "unpacked", filter="data")
    (top,) = (where / "unpacked").iterdir()
    return top


@pytest.fixture(scope="module")
def installed(unpacked, tmp_path_factory) -> Path:
    """The interpreter of a fresh virtual environment holding cellspec_sc installed from the sdist."""
    venv = tmp_path_factory.mktemp("venv") / "sdist"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True,
                   timeout=300)
    python = venv / "bin" / "python"
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(purelib(python), "dependencies-of-the-test-environment.pth").write_text("\n".join(sorted(ours)) + "\n")
    sdist = next(unpacked.parent.parent.glob("cellspec_sc-*.tar.gz"))
    # pip and setuptools come from this environment; --ignore-installed: the checkout's editable install, seen
    # through the .pth file, is neither reused nor uninstalled
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                           "--no-index", "--no-build-isolation", "--ignore-installed", str(sdist)],
                          capture_output=True, text=True, timeout=600, env=clean_env(venv))
    assert done.returncode == 0, done.stderr
    return python


def purelib(python: Path) -> str:
    return subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True, timeout=60).stdout.strip()


def clean_env(venv: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
    env["VIRTUAL_ENV"] = str(venv)
    # as -P, for the test processes' own `python -c` children too: the working folder (the unpacked sdist, whose
    # cellspec_sc/ source folder would shadow the installed package) is not put on sys.path
    env["PYTHONSAFEPATH"] = "1"
    return env


def files(top: Path, patterns: list[str]) -> set[str]:
    found = set()
    for pattern in patterns:
        found |= {p.relative_to(top).as_posix() for p in top.glob(pattern) if p.is_file()
                  and "__pycache__" not in p.parts and p.suffix not in {".pyc", ".pyo"}}
    return found


@pytest.mark.slow
def test_the_unpacked_sdist_holds_what_the_tests_read_as_in_the_checkout(unpacked):
    expected = files(ROOT, READ_BY_THE_TESTS)
    assert {"LICENSE", "README.md", "tests/conftest.py", "tests/strategies.py", "tests/snippets.py",
            "tests/s3server.py", "docs/conf.py", "docs/api.rst"} <= expected
    assert any(name.startswith("tests/data/") for name in expected)
    assert any(name.startswith("notebooks/") for name in expected)
    assert expected - files(unpacked, READ_BY_THE_TESTS) == set(), "in the checkout but not in the sdist"
    changed = sorted(n for n in expected if (ROOT / n).read_bytes() != (unpacked / n).read_bytes())
    assert changed == [], "different in the sdist"
    assert not (unpacked / ".venv").exists() and not (unpacked / "build").exists()


# Runs pytest in-process, then names the file of every cellspec_sc module the tests imported (they stay in
# sys.modules after the run).
RUN_PYTEST = """
import json, sys
import pytest
code = pytest.main(sys.argv[1:])
print(json.dumps({name: getattr(module, "__file__", None) for name, module in sorted(sys.modules.items())
                  if name.split(".")[0] == "cellspec_sc"}))
sys.exit(code)
"""


@pytest.mark.slow
def test_the_core_tests_pass_from_the_unpacked_sdist_against_the_package_installed_from_it(unpacked, installed):
    report = unpacked.parent / "junit.xml"
    args = ["-p", "no:cacheprovider", "-q", "-o", "pythonpath=tests", f"--junitxml={report}",
            *SUITE]
    done = subprocess.run([str(installed), "-c", RUN_PYTEST, *args], cwd=unpacked, capture_output=True,
                          text=True, timeout=1500, env=clean_env(installed.parent.parent))
    tail = "\n".join(done.stdout.splitlines()[-40:-1]) + done.stderr[-2000:]
    assert done.returncode == 0, tail
    suite = ET.parse(report).getroot().find("testsuite")
    ran = int(suite.get("tests")) - int(suite.get("skipped"))
    print(f"\nfrom the unpacked sdist: {ran} tests ran, {suite.get('skipped')} skipped, "
          f"in {float(suite.get('time')):.0f} s")
    assert ran >= 300 and int(suite.get("failures")) == int(suite.get("errors")) == 0, tail
    # every module of the package the tests used is the installed one: none from the unpacked source or the checkout
    origins = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"cellspec_sc", "cellspec_sc.io", "cellspec_sc.model", "cellspec_sc.validation"} <= set(origins)
    site_packages = Path(purelib(installed))
    elsewhere = {name: file for name, file in origins.items() if file and not Path(file).is_relative_to(site_packages)}
    assert elsewhere == {}, elsewhere
