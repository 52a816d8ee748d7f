"""benchmarks/RESULTS.md and the README's summary, rendered from the harnesses' results JSON.

    python -m benchmarks.report benchmarks/figures/*.json > benchmarks/RESULTS.md
    python -m benchmarks.report --summary benchmarks/figures/*.json   # the README's table

Each JSON file is one run of ``benchmarks.run``, ``benchmarks.cohort`` or ``benchmarks.machine`` (what their
``--json`` writes). Runs of one benchmark command (the same harness and sizes; ``--only``, ``--steps`` and
``--repeat`` may differ) make one table, a row per case and run, with the run's load average, date and commit;
under each table, the machine and the commands that reproduce it. To replace a table's figures, put the new
runs' JSON in ``benchmarks/figures/`` in place of the old ones and render again (``tests/meta/`` checks that
RESULTS.md and the README's summary are what this module renders from the files there).

>>> reproduce("python -m benchmarks.run --sizes 4000 --json /somewhere/r.json --data /elsewhere/d")
'python -m benchmarks.run --sizes 4000 --data DATA'
>>> table_key("python -m benchmarks.run --sizes 4000 --repeat 7 --only read_qupath")
'python -m benchmarks.run --sizes 4000'
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["FIGURES", "SUMMARY_CASES", "document_kind", "load", "render", "reproduce", "summary", "table_key", "tables"]

FIGURES = Path(__file__).resolve().parent / "figures"
# options that name output files (dropped from a shown command) and that choose what a run measures, not its size
OUTPUT_OPTIONS = ("--json", "--markdown")
SELECTION_OPTIONS = ("--only", "--steps", "--repeat")
COHORT_GOAL = 1.7  # 2 workers over 1, the cohort's goal for validate, summary and write_dataset
# the README's summary: benchmark command -> the cases it shows (the goals a user asks about first)
SUMMARY_CASES = {
    "python -m benchmarks.run --big --force": ("directory read",),
    "python -m benchmarks.run --sizes 1000000 --features 200": (
        "directory write", "directory read", "to_anndata", "from_anndata", "write .h5ad (to_anndata + write)",
        "to_spatialdata + write", "from_spatialdata"),
    "python -m benchmarks.run --sizes 1000000 --features 120": (
        "read_qupath", "read_qupath_1core", "read_mcmicro", "read_mcmicro_1core"),
    "python -m benchmarks.run --sizes 4000 --features 120": ("read_qupath", "read_mcmicro"),
    "python -m benchmarks.cohort": ("validate", "summary", "write_dataset"),
}
HEADER = """# Benchmark results

The current figures of every benchmark command, one table each; rendered by
`python -m benchmarks.report benchmarks/figures/*.json > benchmarks/RESULTS.md` from the runs' JSON in
`benchmarks/figures/` (earlier figures are in this file's git history). Each side of a row runs in its own fresh
worker process on the same data in the same minutes. *ratio* is ours over the baseline (below 1: ours is faster);
for the cohort it is the speedup of 2 workers over 1 and for the machine that of 2 processes over 1. Seconds are
the minimum of the repetitions (median in brackets where the run recorded it); *peak MB* is the growth of the
resident high-water mark during the operation (interpreter and imports excluded); *load* is the 1-minute load
average when the run started; "—" marks a figure the run did not record. Method, baselines and where the time
goes: [docs/benchmarks.md](../docs/benchmarks.md).
"""


def document_kind(document: dict[str, Any]) -> str:
    """``"run"``, ``"cohort"`` or ``"machine"``: which harness wrote ``document``.

    >>> document_kind({"rows": [{"step": "validate"}]})
    'cohort'
    """
    rows = document.get("rows") or [{}]
    if "operation" in rows[0]:
        return "run"
    if "step" in rows[0]:
        return "cohort"
    if "beside_writes" in rows[0]:
        return "machine"
    raise ValueError(f"not a results document of benchmarks.run, .cohort or .machine: {sorted(rows[0])}")


def _words(command: str) -> list[str]:
    return shlex.split(command)


def reproduce(command: str) -> str:
    """``command`` without its output files and with ``--data DATA`` for any data folder."""
    words, out = _words(command), []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word in OUTPUT_OPTIONS:
            skip = True
        elif word == "--data":
            out += ["--data", "DATA"]
            skip = i + 1 < len(words)
        else:
            out.append(word)
    return shlex.join(out).replace("'", '"')


def table_key(command: str) -> str:
    """The benchmark command a run belongs to: its harness and sizes, without what it selects or where it writes."""
    words, out = _words(reproduce(command)), []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in SELECTION_OPTIONS or word == "--data":
            skip = True
        else:
            out.append(word)
    return shlex.join(out)


def _number(value: Any, digits: str = ".3g") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return format(value, digits)


def _seconds(low: Any, median: Any) -> str:
    if low is None or (isinstance(low, float) and math.isnan(low)):
        return "—"
    return f"{low:.3g}" + ("" if median is None else f" ({median:.3g})")


def _mb(value: Any) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value / 2**20:,.0f}"


def _ratio(value: Any) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.2f}x"


def _met(value: Any) -> str:
    return {True: "yes", False: "**no**"}.get(value, "—")


def _run_facts(document: dict[str, Any]) -> tuple[str, str, str]:
    """Load average at the start, date and commit of one run."""
    machine = document.get("machine", {})
    load = machine.get("load_average_at_start")
    load = load if isinstance(load, str) else _number((load or [None])[0], ".2f")
    return load, str(document["created_utc"])[:10], f"`{machine.get('commit') or '—'}`"


def _run_rows(documents: list[dict[str, Any]]) -> list[str]:
    lines = ["| case | cells x features | ratio | ours s | baseline | baseline s | peak MB ours / baseline | goal "
             "| met | load | date | commit |", "|" + "---|" * 12]
    for row, document in _by_case(documents, "operation"):
        met = f"error: {row['error'][:100]}" if row.get("error") else _met(row.get("goal_met"))
        lines.append(
            f"| {row['operation']} | {row['n_cells']:,} x {row['n_features']:,} | {_ratio(row.get('ratio'))} "
            f"| {_seconds(row.get('ours_min_s'), row.get('ours_median_s'))} | {row['baseline']} "
            f"| {_seconds(row.get('baseline_min_s'), row.get('baseline_median_s'))} "
            f"| {_mb(row.get('ours_peak_growth_bytes'))} / {_mb(row.get('baseline_peak_growth_bytes'))} "
            f"| {row['goal']}{_run_extras(row)} | {met} | {' | '.join(_run_facts(document))} |")
    return lines


def _run_extras(row: dict[str, Any]) -> str:
    """What a row measured beside time and memory: the share of a directory transferred, a local server's CPU.

    >>> _run_extras({"transferred_bytes": 61_457, "directory_bytes": 166_037_383, "transferred_share": 0.00037})
    ' (transferred 61,457 of 166,037,383 bytes: 0.037%)'
    >>> _run_extras({"ours_server_cpu_s": 8.9, "baseline_server_cpu_s": 10.8})
    ' (S3 server CPU s, ours / baseline: 8.9 / 10.8)'
    """
    extras = []
    if row.get("transferred_share") is not None:
        extras.append(f"transferred {row['transferred_bytes']:,} of {row['directory_bytes']:,} bytes: "
                      f"{100 * row['transferred_share']:.2g}%")
    if "ours_server_cpu_s" in row or "baseline_server_cpu_s" in row:
        extras.append(f"S3 server CPU s, ours / baseline: {_number(row.get('ours_server_cpu_s'))} / "
                      f"{_number(row.get('baseline_server_cpu_s'))}")
    return f" ({'; '.join(extras)})" if extras else ""


def _cohort_pairs(document: dict[str, Any]) -> Iterable[tuple[dict[str, Any], dict[str, Any]]]:
    """(1-worker row, 2-worker row) of every step of a cohort run."""
    rows = document["rows"]
    for two in (r for r in rows if r["workers"] > 1):
        one = next(r for r in rows if r["step"] == two["step"] and r["workers"] == 1)
        yield one, two


def _peaks(row: dict[str, Any]) -> str:
    peaks = row.get("worker_peak_bytes")
    return "—" if not peaks else _mb(max(peaks))


def _cohort_rows(documents: list[dict[str, Any]]) -> list[str]:
    lines = ["| step | ratio (2 workers over 1) | 1 worker s | 2 workers s | worker CPU s, 1 / 2 workers "
             "| stolen CPU s, 1 / 2 workers | peak MB per worker, 1 / 2 workers | goal | met | load | date | commit |",
             "|" + "---|" * 12]
    pairs = [(pair, document) for document in documents for pair in _cohort_pairs(document)]
    order = list(dict.fromkeys(one["step"] for (one, _), _ in pairs))
    for step in order:
        for (one, two), document in ((p, d) for p, d in pairs if p[0]["step"] == step):
            goal = "information: the disk's ceiling" if step in ("bare_copy", "hashed_copy") else f">= {COHORT_GOAL}x"
            met = "—" if goal.startswith("information") else _met(two["speedup"] >= COHORT_GOAL)
            if "server_cpu_s" in two:  # the local S3 server shares the cores with the workers
                goal += (f" (S3 server CPU s, 1 / 2 workers: {_number(one.get('server_cpu_s'))} / "
                         f"{_number(two['server_cpu_s'])})")
            if one["workers_restarted"] or two["workers_restarted"] or two.get("error"):
                met = f"error: {two.get('error') or 'a worker restarted'}"[:100]
            lines.append(
                f"| {step} | {_ratio(two.get('speedup'))} | {_number(one['seconds'])} | {_number(two['seconds'])} "
                f"| {_number(one.get('worker_cpu_s'))} / {_number(two.get('worker_cpu_s'))} "
                f"| {_number(one.get('stolen_cpu_s'), '.2f')} / {_number(two.get('stolen_cpu_s'), '.2f')} "
                f"| {_peaks(one)} / {_peaks(two)} | {goal} | {met} | {' | '.join(_run_facts(document))} |")
    return lines


def _machine_rows(documents: list[dict[str, Any]]) -> list[str]:
    lines = ["| SHA-256 work | ratio (2 processes over 1) | 1 process s | 2 processes s | stolen CPU s, 2 processes "
             "| load | date | commit |", "|" + "---|" * 8]
    for beside in (False, True):
        for document in documents:
            rows = [r for r in document["rows"] if r["beside_writes"] == beside]
            for one, two in zip(rows[0::2], rows[1::2], strict=True):
                work = "beside disk writes" if beside else "alone"
                lines.append(f"| {work} | {_ratio(two.get('speedup'))} | {_number(one['seconds'])} "
                             f"| {_number(two['seconds'])} | {_number(two.get('stolen_s'), '.2f')} "
                             f"| {' | '.join(_run_facts(document))} |")
    return lines


def _by_case(documents: list[dict[str, Any]], key: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every (row, its document), the rows of one case together, cases in the order they first appear."""
    rows = [(row, document) for document in documents for row in document["rows"]]
    order = list(dict.fromkeys(row[key] for row, _ in rows))
    return [(row, document) for case in order for row, document in rows if row[key] == case]


def _machine_line(documents: list[dict[str, Any]]) -> str:
    kinds = []
    for document in documents:
        m = document.get("machine", {})
        kinds.append(f"{m.get('cpus', document.get('cpus', '—'))} CPUs, {m.get('memory_gb', '—')} GB of memory, "
                     f"{m.get('kind', 'kind not recorded')}")
    return "Machine: " + "; ".join(dict.fromkeys(kinds)) + "."


ROWS = {"run": _run_rows, "cohort": _cohort_rows, "machine": _machine_rows}


def tables(documents: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The documents grouped by benchmark command (:func:`table_key`), runs by date, tables by harness then command."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for document in sorted(documents, key=lambda d: str(d["created_utc"])):
        groups.setdefault(table_key(document["command"]), []).append(document)
    kinds = list(ROWS)
    return dict(sorted(groups.items(), key=lambda item: (kinds.index(document_kind(item[1][0])), item[0])))


def render(documents: list[dict[str, Any]]) -> str:
    """RESULTS.md: a section per benchmark command with its table, machine and reproducing commands."""
    parts = [HEADER]
    for key, group in tables(documents).items():
        commands = "\n".join(f"    {reproduce(c)}" for c in dict.fromkeys(d["command"] for d in group))
        parts.append(f"## `{key}`\n\n" + "\n".join(ROWS[document_kind(group[0])](group)) + "\n\n"
                     f"{_machine_line(group)} Reproduce (`DATA`: a folder for the generated data, "
                     f"by default `benchmarks/.data`):\n\n{commands}\n")
    return "\n".join(parts)


def _goal_rows(documents: list[dict[str, Any]]) -> Iterable[tuple[str, str, str, float, bool]]:
    """(command, case, goal, ratio, met) of every measured row that has a goal."""
    for key, group in tables(documents).items():
        kind = document_kind(group[0])
        for document in group:
            if kind == "run":
                for row in document["rows"]:
                    if row.get("goal_met") is not None and row.get("ratio") is not None and not row.get("error"):
                        yield key, row["operation"], row["goal"], row["ratio"], row["goal_met"]
            elif kind == "cohort":
                for _, two in _cohort_pairs(document):
                    if two["step"] not in ("bare_copy", "hashed_copy"):
                        yield key, two["step"], f"2 workers >= {COHORT_GOAL}x 1 worker", two["speedup"], \
                            two["speedup"] >= COHORT_GOAL


def summary(documents: list[dict[str, Any]]) -> str:
    """The README's table: for the cases of :data:`SUMMARY_CASES`, the ratios of the runs and how many met the goal."""
    found: dict[tuple[str, str], list[tuple[str, float, bool]]] = {}
    for key, case, goal, ratio, met in _goal_rows(documents):
        found.setdefault((key, case), []).append((goal, ratio, met))
    lines = ["| benchmark command | case | ratio | goal | met |", "|---|---|---|---|---|"]
    for key, cases in SUMMARY_CASES.items():
        for case in cases:
            runs = found.get((key, case))
            if runs:
                lines.append(_summary_line(key, case, runs))
    return "\n".join(lines) + "\n"


def _summary_line(key: str, case: str, runs: list[tuple[str, float, bool]]) -> str:
    ratios = sorted(r for _, r, _ in runs)
    shown = f"{ratios[0]:.2f}x" if len(ratios) == 1 else f"{ratios[0]:.2f}-{ratios[-1]:.2f}x"
    met = sum(m for _, _, m in runs)
    return f"| `{key}` | {case} | {shown} | {runs[-1][0]} | {met} of {len(runs)} run{'s' * (len(runs) > 1)} |"


def load(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """The JSON documents at ``paths``, in the order given."""
    return [json.loads(Path(p).read_text(encoding="utf-8")) for p in paths]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="+", type=Path, help="results JSON files (benchmarks/figures/*.json)")
    p.add_argument("--summary", action="store_true", help="the README's summary table instead of RESULTS.md")
    args = p.parse_args(argv)
    documents = load(sorted(args.paths))
    sys.stdout.write(summary(documents) if args.summary else render(documents))
    return 0


if __name__ == "__main__":
    sys.exit(main())
