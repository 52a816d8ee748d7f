"""What is measured: each case times an operation of this package beside a baseline.

A case is two setups, ``ours`` and ``baseline``: each takes the :class:`Env`
(size, data root, scratch folder), loads its inputs untimed and returns an
:class:`Op` whose ``run(i)`` is timed once per repetition in a fresh worker
process. ``goal(row)`` says whether the issue's goal is met (None: no goal,
the row is reported for information). Cases of capabilities that are not
installed are skipped, so the harness runs on any branch.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .data import object_bytes, prepare_slide, scratch, slide_dir


@dataclass
class Env:
    n: int
    f: int
    data: Path
    work: Path
    big: bool = False

    @property
    def slide(self) -> Path:
        return slide_dir(self.data, self.n, self.f)


@dataclass
class Op:
    run: Callable[[int], Any]
    cleanup: Callable[[int], Any] | None = None
    inspect: Callable[[Any], dict[str, Any]] | None = None  # facts about the first result (untimed)
    timer: Callable[[], float] | None = None  # time of the part measured, when not the whole run


@dataclass
class Case:
    name: str
    baseline_name: str
    ours: Callable[[Env], Op]
    baseline: Callable[[Env], Op]
    goal_text: str = ""
    goal: Callable[[dict[str, Any]], bool | None] = lambda row: None
    requires: tuple[str, ...] = ()
    needs_slide: bool = True
    big: bool = False  # also runs at the --big size
    big_baseline_name: str | None = None  # when the baseline differs at the --big size
    extra: dict[str, Any] = field(default_factory=dict)

    def available(self) -> bool:
        return all(importlib.util.find_spec(m) is not None for m in self.requires)


def sha256_bytes(path: Path, chunk: int = 1 << 22) -> str:
    """Hex SHA-256 of a file read in chunks (the baseline's hashing)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def describe_object(x: Any) -> dict[str, Any]:
    return {"object_bytes": object_bytes(x), "matrix_bytes": int(np.prod(x.measurements.shape)) * 8}


def _rmtree_op(folder: Path) -> Callable[[int], None]:
    import shutil

    return lambda i: shutil.rmtree(folder / f"out{i}", ignore_errors=True)


def memory_goal(row: dict[str, Any], factor: float, of: str = "object_bytes") -> bool | None:
    """The operation's own peak (high-water mark minus resident memory before it) <= factor x ``of``."""
    size = row.get(of)
    return None if not size else row["ours_peak_growth_bytes"] <= factor * size


# -- example -------------------------------------------------------------------------------------
def example_ours(env: Env) -> Op:
    import cellspec_sc as cs

    return Op(lambda i: cs.example(seed=i, n_cells=env.n, n_features=env.f, n_images=4), inspect=describe_object)


def example_tissue_ours(env: Env) -> Op:
    import cellspec_sc as cs

    return Op(lambda i: cs.example(seed=i, n_cells=env.n, n_features=env.f, n_images=4, adjacency=True,
                                   region_layers=("tumor",)), inspect=describe_object)


def example_baseline(env: Env) -> Op:
    return Op(lambda i: np.random.default_rng(i).random((env.n, env.f)))


def example_goal(row: dict[str, Any]) -> bool | None:
    """A million cells x 200 features in a few seconds (5 s); other sizes are for information."""
    return row["ours_min_s"] < 5.0 if (row["n_cells"], row["n_features"]) == (1_000_000, 200) else None


# -- directory write -----------------------------------------------------------------------------
def write_ours(env: Env) -> Op:
    import cellspec_sc as cs

    x = cs.read(env.slide)
    out = scratch(env.work, "write-ours")
    return Op(lambda i: cs.write(x, out / f"out{i}"), cleanup=_rmtree_op(out), inspect=lambda _: describe_object(x))


def _arrow_table(path: Path) -> Any:
    """The whole file as one Arrow table, loaded a row group at a time.

    ``pq.read_table`` itself peaks at about 2.4x the table (1M x 200), which the 16 GB slide cannot
    afford on a 24 GB machine; batch by batch the table is held once.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    handle = pq.ParquetFile(path)
    return pa.Table.from_batches(handle.iter_batches(batch_size=1 << 16), schema=handle.schema_arrow)


def write_baseline(env: Env) -> Op:
    import pyarrow.parquet as pq

    table = _arrow_table(env.slide / "cells.parquet")
    out = scratch(env.work, "write-baseline")

    def run(i: int) -> str:
        target = out / f"out{i}"
        target.mkdir()
        pq.write_table(table, target / "cells.parquet")
        return sha256_bytes(target / "cells.parquet")

    return Op(run, cleanup=_rmtree_op(out))


# -- directory read ------------------------------------------------------------------------------
def read_ours(env: Env) -> Op:
    import cellspec_sc as cs

    return Op(lambda i: cs.read(env.slide), inspect=describe_object)


def read_baseline(env: Env) -> Op:
    import pyarrow.parquet as pq

    path = env.slide / "cells.parquet"
    if env.big:  # read_table would need ~2.4x the 16 GB table: pyarrow's streaming decode instead
        return Op(lambda i: (sum(b.num_rows for b in pq.ParquetFile(path).iter_batches()), sha256_bytes(path)))
    return Op(lambda i: (pq.read_table(path), sha256_bytes(path)))


def read_goal(row: dict[str, Any]) -> bool:
    factor = 1.2 if row.get("big") else 1.3
    of = "matrix_bytes" if row.get("big") else "object_bytes"
    time_ok = row["big"] or row["ratio"] <= 1.25
    return bool(time_ok and memory_goal(row, factor, of))


# -- wide tables ----------------------------------------------------------------------------------
WIDE = (10, 100_000)  # cells x features
WIDE_QUICK = (10, 2_000)


def wide_dir(env: Env) -> Path:
    """A directory of ``WIDE`` (``WIDE_QUICK`` in the quick run) written once under the data root."""
    import cellspec_sc as cs

    n, f = WIDE_QUICK if env.f < 100 else WIDE
    path = Path(env.data) / f"wide-{n}x{f}"
    if not (path / "DONE").exists():
        cs.write(cs.example(seed=0, n_cells=n, n_features=f, n_images=1), path, overwrite=True)
    return path


def wide_read_ours(env: Env) -> Op:
    import cellspec_sc as cs

    path = wide_dir(env)
    return Op(lambda i: cs.read(path), inspect=describe_object)


def wide_read_baseline(env: Env) -> Op:
    import pyarrow.parquet as pq

    path = wide_dir(env) / "cells.parquet"
    return Op(lambda i: (pq.read_table(path), sha256_bytes(path)))


def wide_write_ours(env: Env) -> Op:
    import cellspec_sc as cs

    x = cs.read(wide_dir(env))
    out = scratch(env.work, "wide-write-ours")
    return Op(lambda i: cs.write(x, out / f"out{i}"), cleanup=_rmtree_op(out))


def wide_write_baseline(env: Env) -> Op:
    import pyarrow.parquet as pq

    table = pq.read_table(wide_dir(env) / "cells.parquet")
    out = scratch(env.work, "wide-write-base")

    def run(i: int) -> str:
        (out / f"out{i}").mkdir()
        pq.write_table(table, out / f"out{i}" / "cells.parquet")
        return sha256_bytes(out / f"out{i}" / "cells.parquet")

    return Op(run, cleanup=_rmtree_op(out))


def under_seconds(limit: float) -> Callable[[dict[str, Any]], bool]:
    return lambda row: row["ours_min_s"] < limit


# -- validate ------------------------------------------------------------------------------------
def validate_ours(env: Env) -> Op:
    import cellspec_sc as cs

    x = cs.read(env.slide)  # validated by the read, which keeps the report on the object: time a fresh validation
    return Op(lambda i: cs.validate(x.replace()), inspect=lambda _: describe_object(x))


def validate_baseline(env: Env) -> Op:
    import cellspec_sc as cs

    m = cs.read(env.slide).measurements

    def one_pass(i: int) -> np.ndarray:  # in row blocks, so the 16 GB slide needs no 2 GB mask
        return sum(np.count_nonzero(np.isnan(m[s:s + 65536]), axis=0) for s in range(0, len(m), 65536))

    return Op(one_pass)


def _tissue(env: Env) -> Any:
    import cellspec_sc as cs

    return cs.example(seed=0, n_cells=env.n, n_features=env.f, n_images=4, adjacency=True)


def validate_contacts_ours(env: Env) -> Op:
    import cellspec_sc as cs

    x = _tissue(env)
    return Op(lambda i: cs.validate(x.replace()),  # a fresh object each time: no report kept from the last one
              inspect=lambda _: {**describe_object(x), "contacts": len(x.adjacency)})


def validate_contacts_baseline(env: Env) -> Op:
    """What a pandas user would run for the same object: one NaN pass over the matrix, both ends of every contact
    looked up among the cells (MultiIndex ``isin``) and the pairs listed twice (``duplicated``)."""
    import pandas as pd

    x = _tissue(env)
    m, cells, adj = x.measurements, x.cells, x.adjacency

    def checks(i: int) -> tuple[Any, ...]:
        index = pd.MultiIndex.from_arrays([cells["image_id"], cells["cell_id"]])
        ends = [pd.MultiIndex.from_arrays([adj["image_id"], adj[c]]).isin(index) for c in ("cell_id_a", "cell_id_b")]
        twice = adj[["image_id", "cell_id_a", "cell_id_b"]].duplicated(keep=False)
        return np.count_nonzero(np.isnan(m), axis=0), ends, twice

    return Op(checks)


# -- lazy read -----------------------------------------------------------------------------------
def lazy_ours(env: Env) -> Op:
    import cellspec_sc as cs

    return Op(lambda i: cs.read(env.slide, lazy=True),
              inspect=lambda x: {"object_bytes": object_bytes(x),
                                 "matrix_bytes": int(np.prod(x.measurements.shape)) * 8})


def lazy_to_disk_ours(env: Env) -> Op:
    import cellspec_sc as cs

    out = scratch(env.work, "lazy-write")
    return Op(lambda i: cs.write(cs.read(env.slide, lazy=True), out / f"out{i}"), cleanup=_rmtree_op(out))


def eager_to_disk(env: Env) -> Op:
    import cellspec_sc as cs

    out = scratch(env.work, "eager-write")
    return Op(lambda i: cs.write(cs.read(env.slide), out / f"out{i}"), cleanup=_rmtree_op(out))


def below_baseline_peak(row: dict[str, Any]) -> bool:
    return row["ours_peak_growth_bytes"] < row["baseline_peak_growth_bytes"]


DIRECTORY_CASES = [
    Case("example()", "numpy random matrix", example_ours, example_baseline,
         "1,000,000 x 200 in < 5 s (input generation)", example_goal),
    Case("example(adjacency, region layer)", "numpy random matrix", example_tissue_ours, example_baseline,
         "information (tissue, contacts and regions on top)"),
    Case("directory write", "pyarrow write_table + SHA-256", write_ours, write_baseline,
         "time <= 1.3x", lambda row: row["big"] or row["ratio"] <= 1.3, big=True),
    Case("directory read", "pyarrow read_table + SHA-256", read_ours, read_baseline,
         "time <= 1.25x, peak <= 1.3x object (big: 1.2x matrix)", read_goal, big=True,
         big_baseline_name="pyarrow iter_batches (streaming) + SHA-256"),
    Case("wide table read", "pyarrow read_table + SHA-256", wide_read_ours, wide_read_baseline,
         "10 x 100,000 read in < 5 s (linear in features)", under_seconds(5.0),
         extra={"cells": WIDE[0], "columns": WIDE[1]}),
    Case("wide table write", "pyarrow write_table + SHA-256", wide_write_ours, wide_write_baseline,
         "information (linear in features)", extra={"cells": WIDE[0], "columns": WIDE[1]}),
    Case("validate", "one numpy pass (NaN count)", validate_ours, validate_baseline,
         "information (cells/s)", big=True),
    Case("validate (with contacts)", "pandas: NaN pass, MultiIndex isin of contact ends, duplicated pairs",
         validate_contacts_ours, validate_contacts_baseline, "information (every check against the adjacency ones)",
         needs_slide=False),
    Case("read lazy=True (validated)", "eager read", lazy_ours, read_ours,
         "peak < eager read's peak", below_baseline_peak, big=True),
    Case("lazy read + write", "eager read + write", lazy_to_disk_ours, eager_to_disk,
         "peak < eager's peak", below_baseline_peak, big=True),
]


def all_cases() -> list[Case]:
    """Every case, in report order; cases of capabilities not on this branch are left out."""
    cases = list(DIRECTORY_CASES)
    for module in ("benchmarks.bridges", "benchmarks.readers", "benchmarks.widgets", "benchmarks.images",
                   "benchmarks.object_storage"):
        if importlib.util.find_spec(module) is not None:
            cases += importlib.import_module(module).CASES
    return [c for c in cases if c.available()]


def case_named(name: str) -> Case:
    for case in all_cases():
        if case.name == name:
            return case
    raise KeyError(name)


def setup_slide(env: Env) -> Path:
    return prepare_slide(env.data, env.n, env.f)

