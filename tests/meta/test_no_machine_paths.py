"""The repository names no path of a development machine and tells no story of how it was worked on: README.md,
docs/, benchmarks/, notebooks/ (outputs included), .ci/ and the package code hold no absolute path of a machine
(``/work/...``, ``/root/...``, ``/home/<user>``, ``/Users/<user>``, ``/tmp/<name>`` in a command) and no words
about work sessions or the people and tools that made them (a reader wants what the code does and how it was
measured, with commands anyone can run)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("README.md", "Makefile", "pyproject.toml", "docs", "benchmarks", "notebooks", ".ci", "cellspec_sc",
           "bridges", "widgets")
SUFFIXES = {".md", ".py", ".ipynb", ".json", ".js", ".css", ".toml", ".txt", ".yaml", ".yml", ".cfg", ".sh", ""}
# "tutorials", "repository": the docs site's build and the copies it makes (docs/conf.py), ignored by git;
# node_modules: Azurite installed by npm (.ci/azurite), ignored by git
SKIPPED_FOLDERS = {".data", "results", "__pycache__", ".ipynb_checkpoints", "demo-output", "_build", "generated",
                   "tutorials", "repository", "node_modules"}
# upstream projects whose issue trackers may be cited by number ("scimap issue 16")
UPSTREAM = ("scimap", "anndata", "spatialdata", "spatialdata-io", "numcodecs", "zarr", "pandas", "pyarrow", "dask",
            "luxar", "scanpy", "squidpy", "numpy", "scipy", "pyspark", "polars", "duckdb", "pynndescent")
ORDINALS = ("first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth|"
            "fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth")
RULES = {
    "absolute path of a machine": re.compile(
        r"(?<![\w.~-])(?:/work|/root|/home/[a-z_]|/Users/\w|/tmp/\w)[^\s)`'\",;]*"),
    "words about work sessions": re.compile(
        rf"\b(?:{ORDINALS}|this|that|earlier|later|previous|next|last|each|every|one|a|work|development)"
        rf"(?:[\s-]+(?:quiet-machine|helper's|development))?\s+sessions?(?:'s)?\b"
        r"|\bsessions?\s+\d+\b|\b(?:another|other|the|a|every)\s+helpers?(?:'s)?\s+(?:jobs?|work|session|branch)"
        r"|\bclosing\s+note\b|\brounds?\s+of\s+work\b", re.I),
    "an issue number of this project": re.compile(
        rf"(?<!{')(?<!'.join(UPSTREAM)}) \bissues? #?\d+\b|^issues? #?\d+\b|\(issues? #?\d+(?:[-,]\s*\d+)*\)",
        re.I | re.M),
}


def scanned_files(root: Path = ROOT) -> list[Path]:
    """Every text file under the scanned paths of ``root``."""
    files = []
    for name in SCANNED:
        path = root / name
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += [p for p in sorted(path.rglob("*")) if p.is_file() and p.suffix in SUFFIXES
                      and not SKIPPED_FOLDERS & set(p.relative_to(root).parts)]
    return files


def findings(root: Path = ROOT) -> list[str]:
    """``file:line: rule: 'match'`` for every match of every rule in the scanned files of ``root``."""
    found = []
    for path in scanned_files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for rule, pattern in RULES.items():  # over the whole text: a phrase may wrap onto the next line
            found += [f"{path.relative_to(root).as_posix()}:{text.count(chr(10), 0, m.start()) + 1}: {rule}: "
                      f"{' '.join(m.group(0).split())!r}" for m in pattern.finditer(text)]
    return found


def test_no_machine_paths_or_session_stories_in_the_repository():
    found = findings()
    assert not found, f"{len(found)} finding(s):\n" + "\n".join(found)


def test_the_scan_finds_each_rule_and_passes_clean_text(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "benchmarks" / ".data").mkdir(parents=True)
    (tmp_path / "README.md").write_text("Run `python -m benchmarks.run --data DATA` (DATA: any folder).\n"
                                        "See scimap issue 16. A Spark session; the process's own session.\n")
    (tmp_path / "docs" / "a.md").write_text("cd /work/main && make\n\nlook in /home/alice/x and /Users/bob\n"
                                            "python -m benchmarks.cohort --data /tmp/c\n/root/.cache\n")
    (tmp_path / "docs" / "b.md").write_text("Measured in the sixteenth session.\nthis session changed it\n"
                                            "in the fifth\nsession\n"
                                            "another helper's jobs came and went\nwide tables (issue 19)\n")
    (tmp_path / "benchmarks" / ".data" / "ignored.md").write_text("/work/anything\n")
    assert findings(tmp_path) == [
        "docs/a.md:1: absolute path of a machine: '/work/main'",
        "docs/a.md:3: absolute path of a machine: '/home/alice/x'",
        "docs/a.md:3: absolute path of a machine: '/Users/bob'",
        "docs/a.md:4: absolute path of a machine: '/tmp/c'",
        "docs/a.md:5: absolute path of a machine: '/root/.cache'",
        "docs/b.md:1: words about work sessions: 'sixteenth session'",
        "docs/b.md:2: words about work sessions: 'this session'",
        "docs/b.md:3: words about work sessions: 'fifth session'",
        "docs/b.md:5: words about work sessions: \"another helper's jobs\"",
        "docs/b.md:6: an issue number of this project: '(issue 19)'",
    ]
