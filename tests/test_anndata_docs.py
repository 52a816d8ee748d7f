"""The code blocks of the "With squidpy / scimap / spatialdata-plot" sections of docs/anndata.md and
docs/spatialdata.md run as written, one page at a time in a fresh directory."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
SECTION = "## With squidpy / scimap / spatialdata-plot"


def section_blocks(page: str) -> list[str]:
    text = (DOCS / page).read_text(encoding="utf-8")
    section = text.split(SECTION, 1)[1]
    section = re.split(r"\n## ", section, maxsplit=1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


@pytest.mark.parametrize("page", ["anndata.md", "spatialdata.md"])
def test_scverse_section_runs_as_written(page, tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    blocks = section_blocks(page)
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    for i, block in enumerate(blocks):
        namespace: dict = {"__name__": f"docs_{page}_{i}"}
        exec(compile(block, f"{page} block {i + 1}", "exec"), namespace)  # noqa: S102 - the docs' own code
        plt.close("all")
