"""A small simulated cohort on disk: ``write_example_cohort(root, 3)`` writes three cellspec directories.

Each directory is :func:`cellspec_sc.example` with its own seed, its image and
sample ids prefixed by the directory name (image ids are unique across a
cohort), for docs, notebooks, tests and benchmarks.

>>> import tempfile, pathlib
>>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
>>> [p.name for p in paths]
['slide01', 'slide02']
>>> import cellspec_sc as cs
>>> sorted(cs.read(paths[1]).images["image_id"])
['slide02_img1', 'slide02_img2']
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cellspec_sc.io.directory import write
from cellspec_sc.model.cellspec import CellSpec
from cellspec_sc.model.example import example


def prefixed(x: CellSpec, prefix: str) -> CellSpec:
    """``x`` with ``prefix`` put before every image_id and sample_id (cells, images, channels)."""
    tables = {}
    for name in ("cells", "images", "channels"):
        frame = getattr(x, name).copy()
        for column in ("image_id", "sample_id"):
            if column in frame.columns:
                frame[column] = prefix + frame[column]
        tables[name] = frame
    return x.replace(**tables)


def write_example_cohort(root: str | Path, n_directories: int = 3, *, n_cells: int = 200, n_images: int = 2,
                         n_features: int | None = None, seed: int = 0, **options: Any) -> list[Path]:
    """Write ``n_directories`` simulated slides under ``root`` (``slide01``, ``slide02``, ...); returns
    their paths. ``options`` go to :func:`cellspec_sc.example`."""
    root = Path(root)
    paths = []
    for i in range(1, n_directories + 1):
        name = f"slide{i:02d}"
        x = example(seed + i, n_cells=n_cells, n_images=n_images, n_features=n_features, **options)
        paths.append(write(prefixed(x, f"{name}_"), root / name))
    return paths
