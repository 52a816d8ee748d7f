"""scanpy's and squidpy's in-place steps on ``cs.to_anndata(x)`` never change ``x``; an object from
``from_anndata``/``from_spatialdata`` or a lazy read does not follow later edits of what it came from."""


from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scanpy as sc
import squidpy as sq

import cellspec_sc as cs
from snapshots import assert_unchanged, bits, snapshot


def clustered_anndata(x: cs.CellSpec):
    adata = cs.to_anndata(x)
    adata.obs["group"] = pd.Categorical(np.where(np.arange(adata.n_obs) % 3 == 0, "a", "b"))
    return adata


SCANPY_STEPS = {
    "log1p": lambda a: sc.pp.log1p(a),
    "normalize_total": lambda a: sc.pp.normalize_total(a),
    "scale": lambda a: sc.pp.scale(a),
    "regress_out": lambda a: sc.pp.regress_out(a, ["x"]),
    "pca": lambda a: sc.pp.pca(a, n_comps=5),
    "neighbors": lambda a: (sc.pp.pca(a, n_comps=5), sc.pp.neighbors(a, n_neighbors=5)),
    "assign": lambda a: a.X.__setitem__((slice(None), 0), 0.0),
    "spatial_neighbors": lambda a: sq.gr.spatial_neighbors(a, coord_type="generic", n_neighs=5),
    "nhood_enrichment": lambda a: (sq.gr.spatial_neighbors(a, coord_type="generic", n_neighs=5),
                                   sq.gr.nhood_enrichment(a, cluster_key="group", n_perms=5, seed=0,
                                                          show_progress_bar=False)),
}


@pytest.mark.parametrize("step", list(SCANPY_STEPS))
def test_scanpy_and_squidpy_in_place_steps_leave_the_object_bit_identical(step, tmp_path):
    x = cs.example(n_cells=400, seed=3)
    x.measurements  # noqa: B018 - the view the user would have looked at
    before = snapshot(x)
    adata = clustered_anndata(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        SCANPY_STEPS[step](adata)
    assert_unchanged(x, before, step)
    if step in ("log1p", "scale", "assign"):  # the AnnData did change: the step really ran on X
        assert not np.array_equal(bits(adata.X), before[0])
    cs.write(x, tmp_path / "x.cellspec")
    back = cs.read(tmp_path / "x.cellspec")
    assert np.array_equal(bits(back.measurements), before[0]) and back.equals(x)


def test_from_anndata_of_a_log_transformed_anndata_is_recorded_or_refused():
    x = cs.example(n_cells=300, seed=2)
    adata = cs.to_anndata(x)
    sc.pp.log1p(adata)
    with pytest.raises(cs.InputError, match="raw"):
        cs.from_anndata(adata)


def test_read_only_x_without_a_copy_fails_in_place_steps_and_keeps_the_object():
    x = cs.example(n_cells=200, seed=1)
    before = snapshot(x)
    adata = cs.to_anndata(x, copy=False)
    assert np.shares_memory(adata.X, x.measurements) and not adata.X.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        sc.pp.log1p(adata)
    logged = sc.pp.log1p(adata, copy=True)  # what the docs say to do instead
    assert not np.shares_memory(logged.X, x.measurements)
    assert_unchanged(x, before, "log1p on a read-only X")


def test_the_object_from_from_anndata_does_not_follow_later_edits_of_the_anndata():
    x = cs.example(n_cells=200, seed=4)
    adata = cs.to_anndata(x)
    y = cs.from_anndata(adata)
    before = snapshot(y)
    adata.X[:] = 0.0
    adata.obs["x"] = -1.0
    adata.var["unit"] = "changed"
    assert_unchanged(y, before, "editing the AnnData")
    assert y.equals(x)


def test_the_object_from_from_spatialdata_does_not_follow_later_edits_of_the_table():
    x = cs.example(n_cells=120, seed=5)
    sdata = cs.to_spatialdata(x)
    y = cs.from_spatialdata(sdata)
    before = snapshot(y)
    table = next(iter(sdata.tables.values()))
    table.X[:] = 0.0
    assert_unchanged(y, before, "editing the SpatialData table")


def test_lazy_reads_hand_out_a_fresh_handle_whose_assignment_does_not_reach_the_object(tmp_path):
    x = cs.example(n_cells=300, seed=6)
    cs.write(x, tmp_path / "x.cellspec")
    lazy = cs.read(tmp_path / "x.cellspec", lazy=True)
    handle = lazy.measurements
    handle[0, 0] = -99.0  # dask rewrites this handle's graph only
    assert float(lazy.measurements[0, 0].compute()) == x.measurements[0, 0]


