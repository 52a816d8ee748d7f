"""The AnnData bridge: mapping, lossless round trips (memory, h5ad, zarr), analysis results coming back.
(Fixtures ``rich`` and ``write_and_read``: conftest.py.)"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import cellspec_sc as cs
from cellspec_sc.bridges.anndata import AnnDataBridgeWarning
from cellspec_sc.bridges.anndata._obs import obs_names, snake_case


# -- mapping -------------------------------------------------------------------------------------
def test_mapping_follows_scanpy_conventions(rich):
    adata = cs.to_anndata(rich)
    assert adata.X.dtype == np.float64 and not np.shares_memory(adata.X, rich.measurements)
    assert adata.X.flags.writeable and np.array_equal(adata.X, rich.measurements, equal_nan=True)
    shared = cs.to_anndata(rich, copy=False).X  # no memory added: the object's read-only matrix
    assert np.shares_memory(shared, rich.measurements) and not shared.flags.writeable
    assert list(adata.var_names) == rich.feature_ids
    assert list(adata.var.columns) == list(rich.dictionary.columns)
    assert adata.var.query('kind == "intensity" and marker == "CD3e"').index.tolist() == \
        ["cell:CD3e:mean", "cell:CD3e:median", "nucleus:CD3e:mean", "nucleus:CD3e:median"]
    assert list(adata.obs.columns) == list(rich.cells.columns)
    assert adata.obs_names.is_unique and adata.obs_names[0] == "img1:1"
    np.testing.assert_array_equal(adata.obsm["spatial"], rich.cells[["x", "y"]].to_numpy())
    assert "spatial" not in adata.uns
    assert adata.uns["cellspec"]["spec_version"] == "1.0.0"


def test_to_anndata_leaves_the_object_unchanged(rich):
    before = rich.replace(cells=rich.cells.copy(), measurements=rich.measurements.copy(), provenance=rich.provenance)
    adata = cs.to_anndata(rich)
    adata.obs["cell_id"] = "changed"
    adata.strings_to_categoricals()
    assert rich.equals(before)


def test_obs_names_are_unique_even_with_colons_in_ids():
    cells = pd.DataFrame({"image_id": ["a:b", "a", "a\\", "a"], "cell_id": ["c", "b:c", ":c", "\\:c"]})
    names = obs_names(cells)
    assert len(set(names)) == 4
    assert names[1] == "a:b:c"


def test_adjacency_as_squidpy_graph():
    x = cs.example(adjacency=True)
    adata = cs.to_anndata(x)
    conn = adata.obsp["spatial_connectivities"]
    shared = adata.obsp["cellspec_shared_boundary"]
    assert conn.shape == (x.n_cells, x.n_cells) and shared.shape == conn.shape
    assert (conn != conn.T).nnz == 0 and (shared != shared.T).nnz == 0
    assert conn.nnz == 2 * len(x.adjacency)
    first = x.adjacency.iloc[0]
    i = list(adata.obs_names).index(f"{first['image_id']}:{first['cell_id_a']}")
    j = list(adata.obs_names).index(f"{first['image_id']}:{first['cell_id_b']}")
    assert conn[i, j] == conn[j, i] == 1.0
    assert shared[i, j] == shared[j, i] == first["shared_boundary"]
    assert adata.obsm["spatial"].shape == (adata.n_obs, 2)  # what squidpy.gr.spatial_neighbors expects


# -- lossless ------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["memory", "h5ad", "zarr"])
def test_round_trip_is_lossless(rich, fmt, tmp_path, write_and_read):
    adata = cs.to_anndata(rich)
    if fmt != "memory":
        adata = write_and_read(adata, tmp_path, fmt)
    back = cs.from_anndata(adata)
    assert back.differences(rich) == []


@pytest.mark.parametrize("fmt", ["h5ad", "zarr"])
def test_zero_features_and_one_cell(fmt, tmp_path, write_and_read):
    x = cs.example(n_cells=1, n_images=1).subset(features=[])
    back = cs.from_anndata(write_and_read(cs.to_anndata(x), tmp_path, fmt))
    assert back.differences(x) == []
    assert back.measurements.shape == (1, 0)


def test_empty_adjacency_round_trips(tmp_path, write_and_read):
    x = cs.example(adjacency=True)
    x = x.replace(adjacency=x.adjacency.iloc[:0])
    back = cs.from_anndata(write_and_read(cs.to_anndata(x), tmp_path, "h5ad"))
    assert back.differences(x) == [] and back.adjacency is not None and len(back.adjacency) == 0


# -- analysis results ----------------------------------------------------------------------------
def test_new_obs_columns_come_back_with_spec_types(x):
    adata = cs.to_anndata(x)
    adata.obs["leiden"] = pd.Categorical(np.array(["0", "1"] * 40))
    adata.obs["Leiden Score"] = np.linspace(0, 1, 80).astype(np.float32)
    adata.obs["n_neighbors"] = np.arange(80, dtype=np.int64)
    with pytest.warns(AnnDataBridgeWarning, match="'Leiden Score' -> 'leiden_score'"):
        back = cs.from_anndata(adata)
    assert list(back.cells.columns[-3:]) == ["leiden", "leiden_score", "n_neighbors"]
    assert back.cells["leiden"].dtype == "string" and back.cells["leiden"].iloc[1] == "1"
    assert back.cells["leiden_score"].dtype == np.float64
    assert back.cells["n_neighbors"].dtype == "Int32"
    assert back.validate().ok
    step = back.provenance["history"][-1]
    assert step["step"] == "from_anndata"
    assert step["details"]["cells_columns_added"] == ["leiden", "leiden_score", "n_neighbors"]
    assert step["details"]["columns_renamed"] == {"Leiden Score": "leiden_score"}


def test_unchanged_round_trip_adds_no_history_but_edits_do(x):
    adata = cs.to_anndata(x)
    assert cs.from_anndata(adata).provenance["history"] == x.provenance["history"]
    adata.obs["classification"] = adata.obs["classification"].str.lower()
    with pytest.raises(cs.CellspecError, match=r"obs columns \['classification'\]"):
        cs.from_anndata(adata)
    step = cs.from_anndata(adata, allow_modified=["classification"]).provenance["history"][-1]
    assert step["details"] == {"cells_columns_changed": ["classification"]}


def test_subset_gives_valid_cellspec():
    x = cs.example(adjacency=True)
    adata = cs.to_anndata(x)
    mask = (adata.obs["classification"] != "Tumor").to_numpy()
    features = adata.var.query('kind == "intensity" and marker == "CD3e"').index
    sub = adata[mask, features]
    back = cs.from_anndata(sub)
    assert back.validate().ok
    assert back.feature_ids == list(features)
    assert back.n_cells == int(mask.sum())
    np.testing.assert_array_equal(back.measurements,
                                  x.measurements[mask][:, [x.feature_ids.index(f) for f in features]])
    expected = x.subset(cells=mask, features=list(features))
    assert back.adjacency.equals(expected.adjacency) and len(back.adjacency) < len(x.adjacency)
    assert back.images.equals(x.images) and back.channels.equals(x.channels)
    details = back.provenance["history"][-1]["details"]
    assert details["contacts_dropped"] == len(x.adjacency) - len(back.adjacency)
    assert details["cells_after"] == back.n_cells and details["features_after"] == 4


def test_other_obsm_and_layers_are_reported(x):
    adata = cs.to_anndata(x)
    adata.obsm["X_umap"] = np.zeros((80, 2))
    adata.layers["arcsinh"] = np.arcsinh(adata.X)
    with pytest.warns(AnnDataBridgeWarning) as record:
        back = cs.from_anndata(adata)
    message = " ".join(str(w.message) for w in record)
    assert "obsm['X_umap']" in message and "layers['arcsinh']" in message and "spatial" not in message
    assert back.equals(x)


def test_snake_case():
    assert snake_case("leiden") == "leiden"
    assert snake_case("cellType") == "cell_type"
    assert snake_case("region__Tumor.A") == "region__Tumor.A"


def test_no_warning_for_plain_round_trip(x):
    with warnings.catch_warnings():
        warnings.simplefilter("error", AnnDataBridgeWarning)
        cs.from_anndata(cs.to_anndata(x))


# -- property-based ------------------------------------------------------------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from strategies import cellspecs  # noqa: E402


@given(x=cellspecs())
def test_generated_objects_round_trip_in_memory(x):
    assert cs.from_anndata(cs.to_anndata(x)).differences(x) == []


# each example writes two stores (~1.5 s with zarr's per-array cost), so fewer examples than the profile's
@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(x=cellspecs())
def test_generated_objects_round_trip_through_h5ad_and_zarr(x, tmp_path_factory, write_and_read):
    path = tmp_path_factory.mktemp("rt")
    for fmt in ("h5ad", "zarr"):
        back = cs.from_anndata(write_and_read(cs.to_anndata(x), path / fmt, fmt))
        assert back.differences(x) == [], fmt


@given(x=cellspecs(), data=st.data())
def test_generated_subsets_match_cellspec_subset(x, data):
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=x.n_cells, max_size=x.n_cells)), dtype=bool)
    features = np.array(data.draw(st.lists(st.booleans(), min_size=len(x.dictionary), max_size=len(x.dictionary))),
                        dtype=bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AnnDataBridgeWarning)
        back = cs.from_anndata(cs.to_anndata(x)[mask, features])
    expected = x.subset(cells=mask, features=features)
    assert back.replace(provenance=expected.provenance).differences(expected) == []
    changed = not (mask.all() and features.all())
    assert len(back.provenance["history"]) == len(x.provenance["history"]) + changed


# text Arrow can hold (no lone surrogates), with NA, "", "001", non-ASCII, ordering-sensitive cases ("a" < "B"?)
TEXT = st.one_of(st.none(), st.sampled_from(["", "001", "1", "a", "B", "ä", "z", "µ", "é", "😀"]),
                 st.text(st.characters(exclude_categories=("Cs",)), max_size=4))


@given(values=st.lists(TEXT, max_size=30))
def test_grouping_categoricals_are_the_ones_pandas_makes(values):
    """Arrow's dictionary encoding gives pandas' categorical of the same values: categories in the same order
    (colours follow it), NA as -1, object categories."""
    from cellspec_sc.bridges.anndata._obs import scverse_obs, sorted_categorical, text_array
    from cellspec_sc.display import natural_order

    column = pd.Series(values, dtype="string")
    expected = pd.Categorical(column.astype(object).where(column.notna(), None))
    made = sorted_categorical(text_array(column).dictionary_encode())
    assert made.categories.tolist() == expected.categories.tolist()
    assert made.categories.dtype == expected.categories.dtype and made.codes.dtype == expected.codes.dtype
    np.testing.assert_array_equal(made.codes, expected.codes)
    obs, _ = scverse_obs(pd.DataFrame({"cell_id": column, "image_id": column}))
    assert obs["cell_id"].dtype == "string"
    assert obs["image_id"].cat.categories.tolist() == natural_order(expected.categories.tolist())


def test_docs_name_every_slot_the_bridge_writes():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "anndata.md").read_text(encoding="utf-8")
    adata = cs.to_anndata(cs.example(adjacency=True))
    slots = [f'obsm["{k}"]' for k in adata.obsm] + [f'obsp["{k}"]' for k in adata.obsp]
    slots += [f'["{k}"]' for k in adata.uns["cellspec"]]
    assert [s for s in slots if s not in text] == []


