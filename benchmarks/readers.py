"""Tool readers: ``read_qupath`` of a QuPath-style export beside ``pandas.read_csv`` of the same file.

The file imitates a QuPath 0.6 "Export measurements" table of cell detections:
the fixed columns, micrometre centroids, a few shape measurements and
``<Compartment>: <marker>: Mean`` intensities up to 120 columns, values rounded
to 4 decimals as QuPath writes them, two images in one file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .cases import Case, Env, Op, memory_goal

COLUMNS = 120
FIXED = ["Image", "Object ID", "Object type", "Name", "Classification", "Parent", "ROI",
         "Centroid X µm", "Centroid Y µm"]
SHAPES = ["Cell: Area µm^2", "Nucleus: Area µm^2", "Cell: Circularity", "Cell: Solidity", "Cell: Max diameter µm",
          "Nucleus/Cell area ratio"]
COMPARTMENTS = ("Nucleus", "Cytoplasm", "Membrane", "Cell")


def qupath_header(columns: int = COLUMNS) -> list[str]:
    """FIXED, SHAPES, then compartment-first intensity means up to ``columns`` names."""
    names = FIXED + SHAPES
    marker = 0
    while len(names) < columns:
        marker += 1
        names += [f"{c}: M{marker:03d}: Mean" for c in COMPARTMENTS]
    return names[:columns]


def write_qupath_file(path: Path, rows: int, columns: int = COLUMNS, seed: int = 0) -> Path:
    """Write the QuPath-style TSV (kept between runs)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    names = qupath_header(columns)
    ids = rng.integers(0, 2**63, size=(rows, 2), dtype=np.uint64)
    object_ids = [f"{a:016x}-{b:016x}" for a, b in ids.tolist()]  # unique per image, like QuPath's UUIDs
    image = np.where(np.arange(rows) < rows // 2, "slide_A.ome.tif", "slide_B.ome.tif")
    fixed = {"Image": image, "Object ID": object_ids, "Object type": np.full(rows, "Cell"),
             "Name": np.full(rows, ""), "Classification": rng.choice(["Tumor", "Stroma", "Immune cells"], rows),
             "Parent": np.full(rows, "Root object (Image)"), "ROI": np.full(rows, "Polygon"),
             "Centroid X µm": np.round(rng.uniform(0, 10000, rows), 4),
             "Centroid Y µm": np.round(rng.uniform(0, 8000, rows), 4)}
    columns_data = [pa.array(fixed[n]) if n in fixed else pa.array(np.round(rng.lognormal(3, 1, rows), 4))
                    for n in names]
    table = pa.table(columns_data, names=names)
    partial = path.with_suffix(".partial")
    pacsv.write_csv(table, partial, pacsv.WriteOptions(delimiter="\t", quoting_style="needed"))
    partial.rename(path)
    return path


def _file(env: Env) -> Path:
    return write_qupath_file(Path(env.data) / f"qupath-{env.n}x{COLUMNS}.tsv", env.n)


def qupath_ours(env: Env) -> Op:
    import cellspec_sc as cs

    path = _file(env)
    return Op(lambda i: cs.read_qupath(path, pixel_size=0.5),
              inspect=lambda x: _describe(x))


def _describe(x: Any) -> dict[str, Any]:
    from .cases import describe_object

    return describe_object(x)


def qupath_baseline(env: Env) -> Op:
    import pandas as pd

    path = _file(env)
    return Op(lambda i: pd.read_csv(path, sep="\t"))


def reader_goal(row: dict[str, Any]) -> bool:
    return bool(row["ratio"] <= 0.5 and memory_goal(row, 2.0))


CASES = [
    Case("read_qupath", "pandas.read_csv (C engine)", qupath_ours, qupath_baseline,
         "time <= 0.5x (2x faster), peak < 2x object", reader_goal,
         requires=("cellspec_sc.readers.qupath",), extra={"columns": COLUMNS}),
]
