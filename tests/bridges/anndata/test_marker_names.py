"""``to_anndata(x, var_names="marker", features=...)``: marker names as var_names for scanpy's plots, the full
dictionary in var, collisions refused by name, and the object back exactly through disk."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import scanpy as sc

import cellspec_sc as cs

CELL_MEANS = {"compartment": "cell", "statistic": "mean"}


def test_marker_names_with_the_full_dictionary_in_var():
    x = cs.example()
    adata = cs.to_anndata(x, var_names="marker", features=CELL_MEANS)
    assert adata.var_names.tolist() == ["DAPI", "CD3e", "Pan-Cytokeratin", "FOXP3"]
    assert adata.var["feature_id"].tolist() == [f"cell:{m}:mean" for m in adata.var_names]
    assert adata.var.columns.tolist() == x.dictionary.columns.tolist()
    for marker in adata.var_names:  # each name holds its feature's values, from the object's own matrix
        expected = x.measurements[:, x.feature_position(f"cell:{marker}:mean")]
        np.testing.assert_array_equal(adata[:, marker].X.ravel(), expected)


def test_features_without_a_marker_keep_their_id():
    x = cs.example()
    adata = cs.to_anndata(x, var_names="marker", features=[*x.features(**CELL_MEANS), "cell:area", "nucleus:area"])
    assert adata.var_names.tolist()[-2:] == ["cell:area", "nucleus:area"]
    np.testing.assert_array_equal(adata[:, "cell:area"].X.ravel(), x.measurements[:, x.feature_position("cell:area")])


def test_an_ambiguous_selection_is_refused_naming_the_collisions():
    x = cs.example()
    with pytest.raises(ValueError, match=r"marker 'CD3e' has cell:CD3e:mean, nucleus:CD3e:mean") as refused:
        cs.to_anndata(x, var_names="marker", features={"statistic": "mean"})
    assert isinstance(refused.value, cs.InputError) and "'DAPI' has" in str(refused.value)
    with pytest.raises(cs.InputError, match="var_names must be one of 'feature_id', 'marker', not 'name'"):
        cs.to_anndata(x, var_names="name")


@pytest.mark.parametrize("fmt", ["h5ad", "zarr"])
def test_the_object_comes_back_exactly_through_disk(tmp_path, write_and_read, fmt):
    x = cs.example(adjacency=True)
    adata = cs.to_anndata(x, var_names="marker", features=CELL_MEANS)
    back = cs.from_anndata(write_and_read(adata, tmp_path, fmt))
    assert back.equals(x.subset(features=CELL_MEANS).replace(provenance=back.provenance))
    steps = back.provenance["history"]
    assert steps[:-1] == x.provenance["history"] and steps[-1]["step"] == "subset"
    assert steps[-1]["details"] == {"cells_before": 80, "cells_after": 80, "features_before": 19,
                                    "features_after": 4, "contacts_dropped": 0}
    whole = cs.to_anndata(x, var_names="feature_id")
    assert cs.from_anndata(write_and_read(whole, tmp_path / "whole", fmt)).equals(x)


def test_a_subset_by_marker_names_comes_back_as_that_subset():
    x = cs.example()
    adata = cs.to_anndata(x, var_names="marker", features=CELL_MEANS)
    part = cs.from_anndata(adata[:10, ["FOXP3", "CD3e"]])
    assert part.feature_ids == ["cell:FOXP3:mean", "cell:CD3e:mean"] and part.n_cells == 10
    np.testing.assert_array_equal(part.measurements, x.measurements[:10][:, [x.feature_position("cell:FOXP3:mean"),
                                                                           x.feature_position("cell:CD3e:mean")]])


def test_scanpy_plots_a_marker_by_its_name():
    x = cs.example(n_cells=400)
    adata = cs.to_anndata(x, var_names="marker", features=CELL_MEANS)
    adata.obsm["X_umap"] = np.column_stack([x.cells["x"].to_numpy(float), x.cells["y"].to_numpy(float)])
    ax = sc.pl.umap(adata, color="CD3e", show=False)
    assert ax.get_title() == "CD3e"
    plotted = np.sort(np.asarray(ax.collections[0].get_array(), dtype=float))
    np.testing.assert_array_equal(plotted, np.sort(x.measurements[:, x.feature_position("cell:CD3e:mean")]))
    with pytest.raises(KeyError):  # by feature id the plot would need 'cell:CD3e:mean'
        sc.pl.umap(cs.to_anndata(x, features=CELL_MEANS), color="CD3e", show=False)
    matplotlib.pyplot.close("all")


def test_every_entry_left_out_is_named_in_one_warning_but_colours_of_a_carried_category():
    import warnings

    import pandas as pd

    x = cs.example()
    adata = cs.to_anndata(x)
    adata.obs["leiden"] = pd.Categorical(["0", "1"] * 40)
    adata.uns["leiden_colors"] = ["#ff0000", "#00ff00"]   # travels with the leiden column
    adata.uns["score_colors"] = ["#000000"]               # no such category column: listed
    adata.uns["moranI"] = pd.DataFrame({"I": [0.5]})
    adata.uns["neighbors"] = {"params": {"n_neighbors": 15}}
    adata.obsm["X_umap"] = np.zeros((80, 2))
    adata.obsp["connectivities"] = np.eye(80)
    adata.layers["arcsinh"] = np.arcsinh(adata.X)
    adata.varm["PCs"] = np.zeros((19, 2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        back = cs.from_anndata(adata)
    mine = [str(w.message) for w in caught if issubclass(w.category, cs.CellspecWarning)]
    assert len(mine) == 1, mine
    listed = mine[0].split(": ", 1)[1].split("; ")[0].split(", ")
    assert listed == ["uns['score_colors']", "uns['moranI']", "uns['neighbors']", "obsm['X_umap']",
                      "obsp['connectivities']", "layers['arcsinh']", "varm['PCs']"]
    assert back.cells["leiden"].tolist() == ["0", "1"] * 40
