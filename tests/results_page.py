"""What the benchmark harness tests check of a run's JSON: it renders as a RESULTS.md table."""

from __future__ import annotations

from pathlib import Path


def assert_renders_in_results_page(path: Path, *rows: str) -> None:
    """The harness's JSON renders as a RESULTS.md table with its machine, load, date and commit."""
    from benchmarks.report import load, render

    page = render(load([path]))
    document = load([path])[0]
    machine = document["machine"]
    assert f"Machine: {machine['cpus']} CPUs, {machine['memory_gb']} GB of memory, {machine['kind']}." in page
    assert f"| {document['created_utc'][:10]} |" in page and f"{machine['load_average_at_start'][0]:.2f}" in page
    assert all(row in page for row in rows), page
