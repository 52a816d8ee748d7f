"""Render one or more results JSON files as the markdown of benchmarks/RESULTS.md.

    python -m benchmarks.report benchmarks/.data/results.json > benchmarks/RESULTS.md
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
    return (f"`{document['command']}` — {document['created_utc']}, commit {m.get('commit')}, "
            f"{m['cpus']} CPUs, {m['memory_gb']} GB ({m['available_gb_at_start']} GB available at start), "
            f"load average {load} (start / end), {document['repeat']} repetition(s) per side, "
            f"Python {m['python']}, numpy {m['numpy']}, pyarrow {m['pyarrow']}")


def render(paths: list[Path]) -> str:
    parts = []
    for path in paths:
        document = json.loads(Path(path).read_text())
        parts.append(run_header(document) + "\n\n" + table_markdown(document["rows"]))
    return "\n\n".join(parts) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render([Path(p) for p in sys.argv[1:]]))
