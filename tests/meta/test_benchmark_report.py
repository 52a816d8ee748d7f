"""benchmarks/RESULTS.md and the README's benchmark summary are what ``benchmarks.report`` renders from the runs'
JSON in benchmarks/figures/, so a figure in either comes from a recorded run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks.report import FIGURES, document_kind, load, render, reproduce, summary, table_key, tables

ROOT = Path(__file__).resolve().parents[2]
SUMMARY = re.compile(r"<!-- benchmark summary: (?P<command>[^>]*) -->\n(?P<table>.*?)<!-- end of benchmark summary -->",
                     re.S)


def figures() -> list[dict]:
    return load(sorted(FIGURES.glob("*.json")))


def test_results_page_is_rendered_from_the_figures():
    expected = render(figures())
    actual = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
    assert actual == expected, ("benchmarks/RESULTS.md is not what the figures render to; run "
                                "`python -m benchmarks.report benchmarks/figures/*.json > benchmarks/RESULTS.md`")


def test_readme_summary_is_rendered_from_the_same_figures():
    match = SUMMARY.search((ROOT / "README.md").read_text(encoding="utf-8"))
    assert match, "README.md has no benchmark summary block"
    assert match["command"] == "python -m benchmarks.report --summary benchmarks/figures/*.json"
    assert match["table"] == summary(figures()), "README's benchmark summary differs from the figures; re-render it"


def test_every_benchmark_command_has_one_table_with_its_machine_and_reproducing_commands():
    page = render(figures())
    groups = tables(figures())
    assert {document_kind(g[0]) for g in groups.values()} == {"run", "cohort", "machine"}
    for key, group in groups.items():
        section = page.split(f"## `{key}`\n", 1)[1].split("\n## ", 1)[0]
        assert section.count("\n|---|") == 1, key
        assert "Machine: " in section and " CPUs, " in section and " GB of memory, " in section, key
        for document in group:
            assert f"    {reproduce(document['command'])}\n" in section, key
            assert f"| {document['created_utc'][:10]} |" in section, key
    assert "session" not in page.lower() and "round" not in page.lower()


def test_every_row_names_its_load_date_and_commit():
    for document in figures():
        machine = document["machine"]
        assert machine["commit"] and machine["load_average_at_start"] is not None, document["command"]
        assert machine["cpus"] and machine["memory_gb"] and machine["kind"], document["command"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\d(T\d\d:\d\d:\d\dZ)?", document["created_utc"]), document["created_utc"]


def test_commands_lose_output_files_and_keep_what_they_measure():
    command = 'python -m benchmarks.run --sizes 1000000 --features 120 --repeat 3 --only "a,b c" --json x/r.json'
    assert reproduce(command) == 'python -m benchmarks.run --sizes 1000000 --features 120 --repeat 3 --only "a,b c"'
    assert table_key(command) == "python -m benchmarks.run --sizes 1000000 --features 120"
    assert table_key("python -m benchmarks.cohort --steps validate --data /x") == "python -m benchmarks.cohort"


def test_an_unknown_document_is_refused():
    with pytest.raises(ValueError, match="not a results document"):
        document_kind({"rows": [{"something": 1}]})


def test_a_harness_document_renders(tmp_path):
    """A document as benchmarks.run writes it (no transcribed fields) renders with its machine and date."""
    document = {"created_utc": "2026-01-02T03:04:05Z", "command": "python -m benchmarks.run --quick --data /x/y",
                "repeat": 1, "machine": {"cpus": 8, "memory_gb": 31.2, "kind": "bare metal", "commit": "abc1234",
                                         "load_average_at_start": [0.5, 0.4, 0.3]},
                "rows": [{"operation": "validate", "n_cells": 2000, "n_features": 24, "ours_min_s": 0.01,
                          "ours_median_s": 0.02, "baseline": "numpy", "baseline_min_s": 0.02,
                          "baseline_median_s": 0.03, "ratio": 0.5, "cpu_ratio": 0.5, "ours_peak_growth_bytes": 2**20,
                          "baseline_peak_growth_bytes": 0, "object_bytes": 2**21, "goal": "information",
                          "goal_met": None}]}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document))
    page = render(load([path]))
    assert "| validate | 2,000 x 24 | 0.50x | 0.01 (0.02) | numpy | 0.02 (0.03) | 1 / 0 | information | — | 0.50 " \
           "| 2026-01-02 | `abc1234` |" in page
    assert "Machine: 8 CPUs, 31.2 GB of memory, bare metal." in page
    assert "    python -m benchmarks.run --quick --data DATA\n" in page
