"""scimap on both sides of the bridge: its MCMICRO import read with preset="scimap" gives what cs.read_mcmicro gives
for the same mcquant table, and its spatial analysis runs on the AnnData of to_anndata."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
import scimap as sm

import cellspec_sc as cs
from scverse_cells import layout_cellspec, write_mcquant_csv

matplotlib.use("Agg")

PIXEL_SIZE = 0.65


@pytest.fixture(scope="module")
def mcquant(tmp_path_factory):
    path = tmp_path_factory.mktemp("mcmicro") / "exemplar-001--unmicst_cell.csv"
    return path, write_mcquant_csv(path)


def test_scimap_import_needs_the_layer_and_pixel_convention_named(mcquant):
    path, _ = mcquant
    adata = sm.pp.mcmicro_to_scimap([str(path)], verbose=False)  # X = log1p(CSV), raw = CSV
    with pytest.raises(cs.CellspecError, match=r"equals log1p\(adata.raw.X\).*layer='raw'"):
        cs.from_anndata(adata, image_key="imageid", sample_key="imageid", pixel_size=PIXEL_SIZE, cell_key="CellID",
                        coordinates=("X_centroid", "Y_centroid"), coordinate_unit="px", pixel_origin="center")
    with pytest.raises(cs.CellspecError, match=r"pixel_origin='corner' or 'center'.*mcquant"):
        cs.from_anndata(adata, image_key="imageid", sample_key="imageid", pixel_size=PIXEL_SIZE, cell_key="CellID",
                        coordinates=("X_centroid", "Y_centroid"), coordinate_unit="px", layer="raw")


def test_preset_scimap_equals_read_mcmicro(mcquant):
    path, csv = mcquant
    adata = sm.pp.mcmicro_to_scimap([str(path)], verbose=False)
    x = cs.from_anndata(adata, preset="scimap", pixel_size=PIXEL_SIZE)
    direct = cs.read_mcmicro(path, pixel_size=PIXEL_SIZE)
    assert x.validate().ok
    # scimap drops DNA channels; every other feature has the reader's id, dictionary row and values, to the bit
    shared = [f for f in direct.feature_ids if f != "cell:DNA_1:mean"]
    assert x.feature_ids == shared
    for column in ("kind", "marker", "compartment", "statistic", "unit", "source_name"):
        assert x.dictionary[column].tolist() == direct.dictionary.set_index("feature_id").loc[shared, column].tolist()
    assert x.measurement_frame(shared).to_numpy().tobytes() == direct.measurement_frame(shared).to_numpy().tobytes()
    np.testing.assert_array_equal(x.measurement_frame(["cell:CD3D:mean"]).to_numpy().ravel(), csv["CD3D"].to_numpy())
    for column in ("x", "y", "x_px", "y_px", "area"):
        assert x.cells[column].to_numpy().tobytes() == direct.cells[column].to_numpy().tobytes(), column
    assert x.cells["x"].iloc[0] == (csv["X_centroid"].iloc[0] + 0.5) * PIXEL_SIZE
    assert x.cells["area"].iloc[0] == csv["Area"].iloc[0] * (PIXEL_SIZE * PIXEL_SIZE)  # um2
    assert x.dictionary.set_index("feature_id").loc["cell:area", "unit"] == "px2"
    assert x.cells["cell_id"].tolist() == direct.cells["cell_id"].tolist()
    assert x.cells["image_id"].unique().tolist() == ["exemplar-001--unmicst_cell"]  # scimap's imageid
    assert x.provenance["parameters"]["layer"] == "raw"


def test_spatial_interaction_and_its_plot(tmp_path):
    import matplotlib.pyplot as plt

    adata = cs.to_anndata(layout_cellspec())
    sm.tl.spatial_interaction(adata, x_coordinate="x", y_coordinate="y", phenotype="classification",
                              imageid="image_id", method="radius", radius=12, permutation=100, verbose=False)
    result = adata.uns["spatial_interaction"].set_index(["phenotype", "neighbour_phenotype"])
    for image in ("left", "top"):
        assert result.loc[("T cell", "T cell"), image] > 0 and result.loc[("T cell", "Tumor"), image] < 0
        assert result.loc[("T cell", "Tumor"), f"pvalue_{image}"] < 0.05
    sm.pl.spatial_interaction(adata, saveDir=str(tmp_path), fileName="interaction.png")
    plt.close("all")
    assert (tmp_path / "interaction.png").stat().st_size > 5000
