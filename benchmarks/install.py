"""What installing cellspec_sc weighs: the wheel built from the checkout, installed into fresh virtual
environments, with no extra and with each extra.

    python -m benchmarks.install                     # the README table: core, then each extra on top of it
    python -m benchmarks.install --extras anndata    # only the core and [anndata]

Each environment is a new ``venv`` with pip; packages come from the package index (through pip's cache).
A row counts the distributions pip installed besides pip itself and the megabytes of the environment's
``site-packages``; an extra's row says what it adds to the core. The test suite uses the same functions for its
core-install test (tests/meta/test_wheel.py).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
TOOL_EXTRAS = ("test", "docs")
INSTALL_TIMEOUT = 1800


@dataclass(frozen=True)
class Installed:
    """A fresh environment with cellspec_sc installed: its interpreter, distributions and size on disk."""

    python: Path
    distributions: dict[str, str]  # name -> version, pip itself left out
    megabytes: float

    @property
    def bin(self) -> Path:
        return self.python.parent


def feature_extras() -> list[str]:
    """The extras named after what they enable, in pyproject.toml's order (not the test and docs groups)."""
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    return [name for name in extras if name not in TOOL_EXTRAS]


def build_sdist(out: Path, python: str = sys.executable) -> Path:
    """Build the sdist of the checkout into ``out`` with ``python``'s setuptools (no build isolation, no index)."""
    built = subprocess.run([python, "-c", "import sys; from setuptools import build_meta as b; "
                            "print(b.build_sdist(sys.argv[1]))", str(out)], cwd=ROOT, check=True,
                           capture_output=True, text=True, timeout=600)
    return out / built.stdout.split()[-1]


def build_wheel(out: Path, python: str = sys.executable) -> Path:
    """Build the wheel into ``out`` from the sdist, as ``python -m build`` does: no stale ``build/`` folder of the
    checkout can slip into it, and the sdist is shown to build."""
    out.mkdir(parents=True, exist_ok=True)
    sdist = build_sdist(out, python)
    with tarfile.open(sdist) as archive:
        archive.extractall(out / "sdist", filter="data")
    (source,) = (out / "sdist").iterdir()
    subprocess.run([python, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(out),
                    str(source)], check=True, capture_output=True, text=True, timeout=600)
    (wheel,) = out.glob("cellspec_sc-*.whl")
    return wheel


def fresh_install(wheel: Path, where: Path, extra: str | None = None, python: str = sys.executable) -> Installed:
    """Make a virtual environment at ``where`` with ``python`` and pip-install ``wheel`` (with ``extra``) into it."""
    subprocess.run([python, "-m", "venv", str(where)], check=True, capture_output=True, text=True, timeout=300)
    env_python = where / "bin" / "python"
    target = f"cellspec_sc[{extra}] @ {wheel.as_uri()}" if extra else str(wheel)
    subprocess.run([str(env_python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "--only-binary=:all:", target], check=True, capture_output=True, text=True,
                   timeout=INSTALL_TIMEOUT)
    return Installed(env_python, distributions(env_python), site_packages_megabytes(env_python))


def distributions(python: Path) -> dict[str, str]:
    """Name -> version of every distribution in ``python``'s environment, pip left out."""
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
                            check=True, capture_output=True, text=True, timeout=300).stdout
    return {d["name"].lower(): d["version"] for d in json.loads(listed) if d["name"].lower() != "pip"}


def site_packages_megabytes(python: Path) -> float:
    """Megabytes of ``python``'s site-packages (file sizes, symlinks not followed), pip left out."""
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    total = 0
    for entry in Path(purelib).iterdir():
        if entry.name == "pip" or entry.name.startswith("pip-"):
            continue
        for folder, _, files in os.walk(entry) if entry.is_dir() else [(str(entry.parent), [], [entry.name])]:
            total += sum(os.lstat(os.path.join(folder, name)).st_size for name in files)
    return total / 1e6


def weight_table(extras: list[str], python: str = sys.executable) -> str:
    """The Markdown table of the core install and of what each extra adds to it."""
    with tempfile.TemporaryDirectory(prefix="cellspec-install-") as scratch:
        scratch = Path(scratch)
        wheel = build_wheel(scratch / "dist", python)
        core = fresh_install(wheel, scratch / "core", python=python)
        rows = [f"| core (`pip install cellspec_sc`) | {len(core.distributions)} | {core.megabytes:,.0f} | |"]
        for extra in extras:
            env = fresh_install(wheel, scratch / extra, extra, python=python)
            added = sorted(set(env.distributions) - set(core.distributions))
            top = ", ".join(name for name in added if name in direct_requirements(extra)) or "-"
            rows.append(f"| `[{extra}]` | +{len(added)} | +{env.megabytes - core.megabytes:,.0f} | {top} |")
            print(rows[-1], file=sys.stderr, flush=True)
    version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True,
                             text=True, check=True).stdout.strip()
    head = (f"| install (Python {version}, Linux x86-64 wheels, measured {datetime.date.today().isoformat()}) "
            "| packages | MB on disk | of which it names |\n"
            "|---|---|---|---|")
    return "\n".join([head, *rows])


def direct_requirements(extra: str) -> set[str]:
    """Distribution names an extra lists, its own extras expanded."""
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    names: set[str] = set()
    for requirement in extras[extra]:
        name = requirement.split("[")[0].split(">")[0].split("<")[0].split("=")[0].strip().lower()
        if name == "cellspec_sc":
            inner = requirement.split("[", 1)[1].split("]", 1)[0]
            names |= {n for e in inner.split(",") for n in direct_requirements(e.strip())}
        else:
            names.add(name)
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.install", description=__doc__.split("\n\n")[0])
    parser.add_argument("--extras", default=",".join(feature_extras()), help="extras to measure, comma separated")
    parser.add_argument("--python", default=sys.executable, help="the interpreter of the environments")
    args = parser.parse_args(argv)
    print(weight_table([e for e in args.extras.split(",") if e], args.python))
    return 0


if __name__ == "__main__":
    sys.exit(main())
