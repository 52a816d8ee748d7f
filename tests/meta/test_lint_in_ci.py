"""CI lints before it tests: .ci/run runs ``ruff check .`` and then, as its last command, the README's ``make test``;
ruff is configured in pyproject.toml, installed with the test extras and run by pre-commit."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def commands(path: Path) -> list[str]:
    """The command lines of a shell script (no comments, no blank lines)."""
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def test_ci_runs_ruff_before_the_readme_test_command():
    run = commands(ROOT / ".ci" / "run")
    assert run[-1] == "make test" and "make test" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert ".venv/bin/ruff check ." in run[:-1]
    assert run.index("make setup") < run.index(".venv/bin/ruff check .")


def test_ruff_is_configured_installed_and_hooked():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    lint = project["tool"]["ruff"]["lint"]
    assert {"F", "E", "W", "I", "UP", "B", "D"} <= set(lint["select"])
    assert lint["pydocstyle"]["convention"] == "numpy" and project["tool"]["ruff"]["line-length"] == 120
    assert any(r.startswith("ruff") for r in project["project"]["optional-dependencies"]["test"])
    hooks = (ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8")
    assert "astral-sh/ruff-pre-commit" in hooks and "id: ruff-check" in hooks
