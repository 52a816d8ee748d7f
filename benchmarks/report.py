"""Render results JSON files as markdown for benchmarks/RESULTS.md.

    python -m benchmarks.report A.json [B.json ...] > table.md

Rows of all files go into one table, in the order given (e.g. parts of one size
measured by separate, concurrent commands); each file's command, time, load and
machine are listed above it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .run import table_markdown


def run_header(document: dict[str, Any]) -> str:
    m = document["machine"]
    load = " / ".join(f"{v:.1f}" for v in m.get("load_average_at_start", [])[:1] + m.get("load_average_at_end", [])[:1])
    return (f"- `{document['command']}` — {document['created_utc']}, commit {m.get('commit')}, "
            f"{m['cpus']} CPUs, {m['memory_gb']} GB ({m['available_gb_at_start']} GB available at start), "
            f"load average {load} (start / end), {document['repeat']} repetition(s) per side, "
            f"Python {m['python']}, numpy {m['numpy']}, pyarrow {m['pyarrow']}")


def render(paths: list[Path]) -> str:
    documents = [json.loads(Path(p).read_text()) for p in paths]
    rows = [row for d in documents for row in d["rows"]]
    measured = {r["operation"] for r in rows if not r.get("error")}
    # a case stopped in one run because another run measured it is left out
    rows = [r for r in rows if not (r.get("error") and r["operation"] in measured)]
    return "\n".join(run_header(d) for d in documents) + "\n\n" + table_markdown(rows) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render([Path(p) for p in sys.argv[1:]]))
