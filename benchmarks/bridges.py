"""Bridges: AnnData, SpatialData and Luxar beside what those libraries do on their own.

- ``to_anndata`` beside ``anndata.AnnData(X, obs=cells, var=dictionary)`` of the same frames;
  ``from_anndata`` / ``from_spatialdata`` beside ``CellSpec(...)`` built from the frames they hold;
  writing ``.h5ad`` beside anndata's write of the same AnnData (built untimed), AnnData ``.zarr``
  beside the write of a bare AnnData of the same X.
- ``to_spatialdata`` + write beside spatialdata's write of a hand-built equivalent with the same
  elements (one circles element per image, a table with X, the cells as obs and the dictionary as var).
- ``to_luxar`` with one and with three colour layers (hover labels included): the bridge's own
  time (wall time minus the time spent inside luxar's compiler calls) beside
  luxar's compile time, both taken from the same calls, and the scene's size on disk.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np
import pandas as pd

from .cases import Case, Env, Op, _rmtree_op, describe_object
from .data import scratch

ANNDATA = ("cellspec_sc.bridges.anndata",)
FRESH_COPIES = 5  # more repetitions than this build their AnnData inside the timed write


def _slide(env: Env) -> Any:
    import cellspec_sc as cs

    return cs.read(env.slide)


def _bare(x: Any) -> Any:
    import anndata

    return anndata.AnnData(X=x.measurements)


def to_anndata_ours(env: Env) -> Op:
    import cellspec_sc as cs

    x = _slide(env)
    return Op(lambda i: cs.to_anndata(x), inspect=lambda _: describe_object(x))


def same_frames_anndata(x: Any) -> Any:
    """``AnnData(X, obs=cells, var=dictionary)``: what the bridge builds, without its bookkeeping."""
    import anndata

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # anndata turns the RangeIndex of obs and var into text
        return anndata.AnnData(X=x.measurements, obs=x.cells, var=x.dictionary)


def same_frames_anndata_op(env: Env) -> Op:
    x = _slide(env)
    return Op(lambda i: same_frames_anndata(x))


def from_anndata_ours(env: Env) -> Op:
    import cellspec_sc as cs

    adata = cs.to_anndata(_slide(env))
    return Op(lambda i: cs.from_anndata(adata))


def cellspec_from_frames(table: Any) -> Any:
    """The CellSpec a user builds from an AnnData's frames by hand: obs and var with their index
    dropped and each column back in its spec type (the types the record lists; categoricals back to
    text), X as it is, images, channels and provenance decoded from the record's JSON text.

    This is exactly what the bridge returns for an unedited AnnData, without the bridge's
    bookkeeping (which columns changed, whether X still holds the written values, history).
    """

    import cellspec_sc as cs
    from cellspec_sc.bridges.anndata import decode_table, from_json_text
    from cellspec_sc.spec import as_spec_type

    record = table.uns["cellspec"]
    meta = from_json_text(record["meta"])

    def restored(frame: Any, types: dict[str, str]) -> Any:
        frame = frame.reset_index(drop=True)
        return pd.DataFrame({name: as_spec_type(frame[name], kind) for name, kind in types.items()},
                            index=pd.RangeIndex(len(frame)))

    adjacency = decode_table(record["adjacency"], "adjacency") if "adjacency" in record else None
    return cs.CellSpec(cells=restored(table.obs, meta["cells_types"]), measurements=table.X,
                       dictionary=restored(table.var, meta["dictionary_types"]),
                       images=decode_table(record["images"], "images"),
                       channels=decode_table(record["channels"], "channels"),
                       provenance=from_json_text(record["provenance"]), adjacency=adjacency,
                       spec_version=str(record["spec_version"]))


def cellspec_from_anndata_frames(env: Env) -> Op:
    import cellspec_sc as cs

    adata = cs.to_anndata(_slide(env))
    return Op(lambda i: cellspec_from_frames(adata))


def _write_op(env: Env, name: str, write: Any) -> Op:
    out = scratch(env.work, name)

    def run(i: int) -> None:
        (out / f"out{i}").mkdir()
        write(out / f"out{i}" / "data")

    return Op(run, cleanup=_rmtree_op(out))


def h5ad_ours(env: Env) -> Op:
    from cellspec_sc.bridges.anndata import write_h5ad

    x = _slide(env)
    return _write_op(env, "h5ad-ours", lambda p: write_h5ad(x, p.with_suffix(".h5ad")))


def h5ad_baseline(env: Env) -> Op:
    import cellspec_sc as cs

    # The same AnnData, built untimed, fresh for each repetition: write_h5ad turns obs's strings into
    # categoricals in place, so writing one AnnData again would skip that work. X is shared by all.
    x = _slide(env)
    fresh = [cs.to_anndata(x) for _ in range(FRESH_COPIES)]
    return _write_op(env, "h5ad-base", lambda p: fresh.pop().write_h5ad(p.with_suffix(".h5ad")) if fresh
                     else cs.to_anndata(x).write_h5ad(p.with_suffix(".h5ad")))


def zarr_ours(env: Env) -> Op:
    from cellspec_sc.bridges.anndata import write_anndata_zarr

    x = _slide(env)
    return _write_op(env, "adzarr-ours", lambda p: write_anndata_zarr(x, p.with_suffix(".zarr")))


def zarr_baseline(env: Env) -> Op:
    x = _slide(env)
    return _write_op(env, "adzarr-base", lambda p: _bare(x).write_zarr(p.with_suffix(".zarr")))


# -- SpatialData ---------------------------------------------------------------------------------
def spatialdata_ours(env: Env) -> Op:
    from cellspec_sc.bridges.spatialdata import write_spatialdata

    x = _slide(env)
    return _write_op(env, "sd-ours", lambda p: write_spatialdata(x, p.with_suffix(".zarr")))


def hand_built_spatialdata(x: Any) -> Any:
    """The same content built directly with spatialdata: circles per image and a table over them."""
    import anndata
    import geopandas as gpd
    import spatialdata
    from spatialdata.models import ShapesModel, TableModel

    cells = x.cells
    image = cells["image_id"].astype(str).to_numpy()
    radius = np.sqrt(cells["area"].to_numpy(dtype=np.float64, na_value=np.nan) / np.pi)
    shapes = {}
    for name in pd.unique(image):
        rows = np.flatnonzero(image == name)
        frame = gpd.GeoDataFrame({"radius": radius[rows]},
                                 geometry=gpd.points_from_xy(cells["x"].to_numpy()[rows], cells["y"].to_numpy()[rows]),
                                 index=pd.RangeIndex(rows.size))
        shapes[name] = ShapesModel.parse(frame)
    obs = x.cells.assign(region=pd.Categorical(image),
                         instance=np.concatenate([np.arange((image == n).sum()) for n in pd.unique(image)]))
    obs.index = obs.index.astype(str)
    table = TableModel.parse(anndata.AnnData(X=x.measurements, obs=obs, var=x.dictionary.set_axis(x.feature_ids)),
                             region=list(shapes), region_key="region", instance_key="instance")
    return spatialdata.SpatialData(shapes=shapes, tables={"table": table})


def from_spatialdata_ours(env: Env) -> Op:
    import cellspec_sc as cs

    sdata = cs.to_spatialdata(_slide(env))
    return Op(lambda i: cs.from_spatialdata(sdata))


def cellspec_from_spatialdata_frames(env: Env) -> Op:
    import cellspec_sc as cs

    table = cs.to_spatialdata(_slide(env)).tables["table"]
    return Op(lambda i: cellspec_from_frames(table))


def spatialdata_baseline(env: Env) -> Op:
    x = _slide(env)
    return _write_op(env, "sd-base", lambda p: hand_built_spatialdata(x).write(str(p.with_suffix(".zarr"))))


# -- Luxar ---------------------------------------------------------------------------------------
class _Timed:
    """Forwards to a luxar object, adding the time spent in its methods to ``clock[0]``."""

    def __init__(self, target: Any, clock: list[float]):
        self._target, self._clock = target, clock

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                result = attr(*args, **kwargs)
            finally:
                self._clock[0] += time.perf_counter() - start
            return _Timed(result, self._clock) if name in ("create_scene", "add_group") else result

        return call

    def __enter__(self) -> _Timed:
        start = time.perf_counter()
        self._target.__enter__()
        self._clock[0] += time.perf_counter() - start
        return self

    def __exit__(self, *exc: Any) -> Any:
        start = time.perf_counter()
        try:
            return self._target.__exit__(*exc)
        finally:
            self._clock[0] += time.perf_counter() - start


def _luxar_layers(x: Any, n_colour: int) -> list[str]:
    """``n_colour`` colour layers: one feature (cell mean), then cells by classification, then more features."""
    features = x.features(kind="intensity", statistic="mean")
    layers = [f"feature:{features[0]}", "cells"] + [f"feature:{f}" for f in features[1:]]
    return layers[:n_colour]


def _scene_bytes(path: Any) -> dict[str, Any]:
    from pathlib import Path

    return {"scene_bytes": sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())}


def _luxar_split(env: Env, part: str, n_colour: int) -> Op:
    """Run ``to_luxar`` with ``n_colour`` colour layers; the timed part is the bridge's own or luxar's."""
    import shutil

    import luxar

    import cellspec_sc as cs

    x = _slide(env)
    layers = _luxar_layers(x, n_colour)
    out = scratch(env.work, f"luxar-{part}-{n_colour}")
    real = luxar.LuxarZarrCompiler
    clock = [0.0]
    split: dict[str, float] = {}

    def compiler(*args: Any, **kwargs: Any) -> _Timed:
        start = time.perf_counter()
        made = real(*args, **kwargs)
        clock[0] += time.perf_counter() - start
        return _Timed(made, clock)

    def run(i: int) -> Any:
        clock[0] = 0.0
        luxar.LuxarZarrCompiler = compiler
        start = time.perf_counter()
        try:
            path = cs.to_luxar(x, out / f"out{i}.luxar.zarr", layers=layers)
        finally:
            luxar.LuxarZarrCompiler = real
        total = time.perf_counter() - start
        split["luxar"], split["bridge"] = clock[0], total - clock[0]
        return path

    return Op(run, cleanup=lambda i: shutil.rmtree(out / f"out{i}.luxar.zarr", ignore_errors=True),
              inspect=_scene_bytes, timer=lambda: split[part])


def luxar_bridge(env: Env) -> Op:
    return _luxar_split(env, "bridge", 1)


def luxar_compile(env: Env) -> Op:
    return _luxar_split(env, "luxar", 1)


def luxar_bridge_3(env: Env) -> Op:
    return _luxar_split(env, "bridge", 3)


def luxar_compile_3(env: Env) -> Op:
    return _luxar_split(env, "luxar", 3)


def luxar_goal(row: dict[str, Any]) -> bool:
    """Bridge share < 15%; the share and the scene's size on disk are written into the goal column."""
    share = row["ours_min_s"] / (row["ours_min_s"] + row["baseline_min_s"])
    row["bridge_share"] = share
    scene = row.get("scene_bytes")
    row["goal"] = f"bridge share < 15% (share {share:.0%}, compile {row['ours_min_s'] + row['baseline_min_s']:.3g} s" \
        + (f", scene {scene / 2**20:,.1f} MB)" if scene else ")")
    return share < 0.15


def ratio_at_most(limit: float):
    return lambda row: row["ratio"] <= limit


SPATIALDATA = ("cellspec_sc.bridges.spatialdata",)
CASES = [
    Case("to_anndata", "AnnData(X, obs=cells, var=dictionary)", to_anndata_ours, same_frames_anndata_op,
         "time <= 1.5x", ratio_at_most(1.5), requires=ANNDATA, big=True),
    Case("from_anndata", "CellSpec(...) from the AnnData's frames", from_anndata_ours, cellspec_from_anndata_frames,
         "time <= 1.5x", ratio_at_most(1.5), requires=ANNDATA),
    Case("write .h5ad (to_anndata + write)", "write_h5ad of the same AnnData", h5ad_ours, h5ad_baseline,
         "time <= 1.5x", ratio_at_most(1.5), requires=ANNDATA),
    Case("write AnnData .zarr", "AnnData(X).write_zarr", zarr_ours, zarr_baseline, "information", requires=ANNDATA),
    Case("to_spatialdata + write", "hand-built SpatialData (same elements) + write", spatialdata_ours,
         spatialdata_baseline, "time <= 2x", ratio_at_most(2.0), requires=SPATIALDATA),
    Case("from_spatialdata", "CellSpec(...) from the table's frames", from_spatialdata_ours,
         cellspec_from_spatialdata_frames, "time <= 1.5x", ratio_at_most(1.5), requires=SPATIALDATA),
    Case("to_luxar, 1 colour layer + hover (bridge's own time)", "luxar compile time (same calls)", luxar_bridge,
         luxar_compile, "bridge share < 15% of bridge + compile", luxar_goal, requires=("cellspec_sc.bridges.luxar",)),
    Case("to_luxar, 3 colour layers + hover (bridge's own time)", "luxar compile time (same calls)", luxar_bridge_3,
         luxar_compile_3, "bridge share < 15% of bridge + compile", luxar_goal,
         requires=("cellspec_sc.bridges.luxar",)),
]
