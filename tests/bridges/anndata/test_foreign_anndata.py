"""AnnData made elsewhere (no uns['cellspec']): built when told what it needs, refused otherwise."""

from __future__ import annotations

import anndata as ad
import numpy as np
import pandas as pd
import pytest

import cellspec_sc as cs
from cellspec_sc.bridges.anndata import AnnDataBridgeWarning, intensity_features


@pytest.fixture
def scimap_like():
    """The shape of scimap's MCMICRO import: markers as var, pixel centroids and ids in obs."""
    rng = np.random.default_rng(1)
    obs = pd.DataFrame({
        "CellID": np.arange(1, 7),
        "X_centroid": [10.0, 20.0, 30.0, 40.0, 50.0, 60.0],
        "Y_centroid": [5.0, 15.0, 25.0, 35.0, 45.0, 55.0],
        "Area": [100, 120, 90, 80, 110, 130],
        "imageid": pd.Categorical(["exemplar-001"] * 3 + ["exemplar-002"] * 3),
        "phenotype": pd.Categorical(["T", "B", "T", "T", None, "B"]),
    }, index=[f"exemplar_{i}" for i in range(6)])
    var = pd.DataFrame(index=["DNA_1", "CD3D", "CD20", "Area_px"])
    x = rng.uniform(100, 1000, (6, 4))
    x[0, 1] = np.inf
    return ad.AnnData(X=x.astype(np.float32), obs=obs, var=var)


def test_missing_facts_are_named(scimap_like):
    with pytest.raises(cs.CellspecError) as err:
        cs.from_anndata(scimap_like)
    text = str(err.value)
    for needed in ("image_id=", "image_key=", "sample_id=", "sample_key=", "pixel_size=", "coordinate_unit=",
                   "obsm has no 'spatial'"):
        assert needed in text
    with pytest.raises(cs.CellspecError, match="'imgid' not in obs"):
        cs.from_anndata(scimap_like, image_key="imgid", sample_key="imageid", pixel_size=0.65,
                        coordinates=("X_centroid", "Y_centroid"), coordinate_unit="px")


def test_scimap_like_anndata_becomes_a_valid_cellspec(scimap_like, tmp_path):
    with pytest.warns(AnnDataBridgeWarning, match="'Area' -> 'area_2'"):
        x = cs.from_anndata(scimap_like, image_key="imageid", sample_key="imageid", pixel_size=0.65,
                            coordinates=("X_centroid", "Y_centroid"), coordinate_unit="px", pixel_origin="center",
                            cell_key="CellID", features=intensity_features(others=("Area_px",)))
    assert x.validate().ok, x.validate().format(only_problems=True)
    assert x.cells["cell_id"].tolist() == ["1", "2", "3", "4", "5", "6"]
    assert x.cells["image_id"].tolist()[2:4] == ["exemplar-001", "exemplar-002"]
    # regionprops centroids: pixel i has its centre at i, the spec puts it at i + 0.5 (section 8)
    assert x.cells["x"].tolist() == [10.5 * 0.65, 20.5 * 0.65, 30.5 * 0.65, 40.5 * 0.65, 50.5 * 0.65, 60.5 * 0.65]
    assert x.cells["x_px"].tolist()[0] == 10.5
    assert list(x.cells.columns) == ["cell_id", "image_id", "sample_id", "x", "y", "x_px", "y_px", "area_2",
                                     "phenotype"]
    assert x.cells["phenotype"].isna().tolist() == [False] * 4 + [True, False]
    assert x.feature_ids == ["cell:DNA_1:mean", "cell:CD3D:mean", "cell:CD20:mean", "other:Area_px"]
    assert x.dictionary["source_name"].tolist() == ["DNA_1", "CD3D", "CD20", "Area_px"]
    assert x.channels["marker"].tolist() == ["DNA_1", "CD3D", "CD20"] * 2
    assert np.isnan(x.measurements[0, 1]) and x.provenance["counts"]["nonfinite_converted"] == 1
    assert x.measurements[1, 2] == np.float64(scimap_like.X[1, 2])
    assert x.provenance["reader"]["adapter"] == "anndata"
    assert x.provenance["history"][-1]["step"] == "from_anndata"
    # and from there the lossless bridge takes over
    adata = cs.to_anndata(x)
    adata.write_h5ad(tmp_path / "x.h5ad")
    assert cs.from_anndata(ad.read_h5ad(tmp_path / "x.h5ad")).equals(x)


def test_default_features_are_other_and_obsm_spatial_in_micrometres():
    adata = ad.AnnData(X=np.ones((2, 2)), var=pd.DataFrame(index=["score", "n_genes"]),
                       obs=pd.DataFrame(index=["a", "b"]), obsm={"spatial": np.array([[1.5, 2.5], [3.5, 4.5]])})
    x = cs.from_anndata(adata, image_id="img", sample_id="s", pixel_size=0.5, coordinate_unit="um")
    assert x.feature_ids == ["other:score", "other:n_genes"]
    assert x.dictionary["kind"].tolist() == ["other", "other"]
    assert x.cells["y"].tolist() == [2.5, 4.5] and "x_px" not in x.cells
    assert x.cells["cell_id"].tolist() == ["a", "b"]
    assert x.validate().ok


def foreign_table(x):
    return ad.AnnData(X=x, obs=pd.DataFrame(index=[f"c{i}" for i in range(x.shape[0])]),
                      var=pd.DataFrame(index=[f"M{j}" for j in range(x.shape[1])]),
                      obsm={"spatial": np.arange(2.0 * x.shape[0]).reshape(-1, 2)})


FACTS = {"image_id": "img", "sample_id": "s", "pixel_size": 0.5, "coordinate_unit": "um"}


@pytest.mark.parametrize("transform, named", [
    (np.log1p, r"log1p\(adata.raw.X\)"),
    (lambda v: np.arcsinh(v / 5.0), r"arcsinh\(adata.raw.X / 5\)"),
    (lambda v: v / v.sum(axis=1, keepdims=True), "adata.raw holds other values than X"),
])
def test_transformed_x_is_refused_unless_the_layer_is_named(transform, named):
    values = np.random.default_rng(0).uniform(1, 1000, (5, 3))
    adata = foreign_table(values.copy())
    adata.raw = adata.copy()
    adata.X = transform(values)
    with pytest.raises(cs.CellspecError, match=named + ".*layer='raw'"):
        cs.from_anndata(adata, **FACTS)
    assert cs.from_anndata(adata, layer="raw", **FACTS).measurements.tobytes() == values.tobytes()
    assert np.array_equal(cs.from_anndata(adata, layer="X", **FACTS).measurements, transform(values))


def test_negative_x_or_a_transform_of_a_layer_is_refused():
    values = np.random.default_rng(1).uniform(1, 1000, (5, 3))
    scaled = foreign_table((values - values.mean(axis=0)) / values.std(axis=0))
    with pytest.raises(cs.CellspecError, match="negative values"):
        cs.from_anndata(scaled, **FACTS)
    logged = foreign_table(np.log1p(values))
    logged.layers["counts"] = values
    with pytest.raises(cs.CellspecError, match=r"log1p\(layers\['counts'\]\)"):
        cs.from_anndata(logged, **FACTS)
    assert cs.from_anndata(logged, layer="counts", **FACTS).measurements.tobytes() == values.tobytes()
    untouched = foreign_table(values)
    untouched.raw = untouched.copy()  # raw equal to X: nothing to choose
    assert cs.from_anndata(untouched, **FACTS).measurements.tobytes() == values.tobytes()


def test_pixel_origin_corner_and_yx_order():
    adata = foreign_table(np.ones((2, 1)))
    adata.obsm["spatial"] = np.array([[10.0, 4.0], [20.0, 6.0]])  # (y, x)
    x = cs.from_anndata(adata, image_id="img", sample_id="s", pixel_size=0.5, coordinate_unit="px",
                        pixel_origin="corner", coordinate_order="yx")
    assert x.cells["x"].tolist() == [2.0, 3.0] and x.cells["y"].tolist() == [5.0, 10.0]
    assert x.cells["x_px"].tolist() == [4.0, 6.0]
    with pytest.raises(cs.CellspecError, match="pixel_origin='corner' or 'center'"):
        cs.from_anndata(adata, image_id="img", sample_id="s", pixel_size=0.5, coordinate_unit="px")


def test_obs_columns_named_like_built_ones_are_kept_beside_them():
    adata = foreign_table(np.ones((2, 1)))
    adata.obs["sample_id"] = ["other", "other"]
    with pytest.warns(AnnDataBridgeWarning, match=r"\['sample_id'\] are kept as \['sample_id_2'\]"):
        x = cs.from_anndata(adata, **FACTS)
    assert x.cells["sample_id"].tolist() == ["s", "s"] and x.cells["sample_id_2"].tolist() == ["other", "other"]
    with pytest.raises(cs.CellspecError, match="preset='qupath' is not known"):
        cs.from_anndata(adata, preset="qupath")
