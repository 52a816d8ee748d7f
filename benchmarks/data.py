"""Benchmark inputs: simulated slides written once per size and reused by every case.

A slide of ``n`` cells x ``f`` features is ``cellspec_sc.model._example(n_cells=n,
n_features=f)`` written as a cellspec directory under the data root. Cases load
it in their (untimed) setup, so ours and the baseline see the same bytes.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

N_IMAGES = 4


def slide_dir(root: Path, n: int, f: int) -> Path:
    """The cellspec directory of the ``n`` x ``f`` slide under ``root``."""
    return Path(root) / f"slide-{n}x{f}"


def prepare_slide(root: Path, n: int, f: int) -> Path:
    """Write the ``n`` x ``f`` example slide once (kept between runs: generating 1M cells takes a while).

    The example is simulated lazily and streamed to disk, so even the 16 GB slide is written in a
    few hundred MB (its values equal the eager ``example()``'s).
    """
    import cellspec_sc as cs

    path = slide_dir(root, n, f)
    if (path / "DONE").exists():
        return path
    x = cs.example(seed=0, n_cells=n, n_features=f, n_images=N_IMAGES, lazy=True)
    return cs.write(x, path, overwrite=True)


def object_bytes(x: Any) -> int:
    """Memory of a CellSpec: the measurement matrix plus every table (deep)."""
    total = int(np.asarray(x.measurements).nbytes) if not hasattr(x.measurements, "dask") else 0
    for frame in (x.cells, x.dictionary, x.images, x.channels, x.adjacency):
        if isinstance(frame, pd.DataFrame):
            total += int(frame.memory_usage(deep=True, index=True).sum())
    return total


def scratch(root: Path, name: str) -> Path:
    """An empty scratch folder ``root/name`` (removed first if left over)."""
    path = Path(root) / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path
