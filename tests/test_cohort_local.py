"""Cohorts without a cluster (dask's local threads): refusals, cohort checks, CLI, widget, doctests."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from dirhelpers import reseal

import cellspec_sc as cs
from cellspec_sc.cli.main import main
from cellspec_sc.cohort import CohortError
from cellspec_sc.cohort.example import prefixed, write_example_cohort
from cellspec_sc.io._refusals import IncompleteDirectory

@pytest.fixture
def slides(tmp_path):
    return write_example_cohort(tmp_path / "slides", 3, n_cells=60)


def test_open_refuses_what_read_refuses_naming_every_directory(slides, tmp_path):
    (slides[0] / "DONE").unlink()
    (slides[2] / "cellspec.json").write_text("{}")
    with pytest.raises(CohortError) as err:
        cs.open_cohort(slides)
    assert [(f.directory, f.check) for f in err.value.failures] == \
           [(str(slides[0]), "IncompleteDirectory"), (str(slides[2]), "ChecksumMismatch")]
    with pytest.raises(IncompleteDirectory):
        cs.read(slides[0])
    with pytest.raises(CohortError, match="no cellspec directories"):
        cs.open_cohort(tmp_path / "slides" / "nothing*")
    with pytest.raises(CohortError, match="named twice"):
        cs.open_cohort([slides[1], slides[1].parent / ".." / "slides" / slides[1].name])


def test_open_refuses_the_tsv_variant_and_says_how_to_convert(tmp_path):
    path = cs.write(cs.example(), tmp_path / "tsv", format="tsv")
    with pytest.raises(CohortError, match="cellspec convert"):
        cs.open_cohort([path])


def test_dictionaries_that_give_a_feature_two_meanings_are_refused(slides):
    document = json.loads((slides[1] / "cellspec.json").read_text())
    document["dictionary"][0]["unit"] = "photons"
    (slides[1] / "cellspec.json").write_text(json.dumps(document))
    reseal(slides[1])
    for mode in ("strict", "union", "intersection"):
        with pytest.raises(CohortError, match=r"cell:DAPI:mean|describes"):
            cs.open_cohort(slides, features=mode)
    with pytest.raises(CohortError, match="features must be one of"):
        cs.open_cohort(slides, features="some")


def test_cohort_checks_name_the_directories_sharing_an_image(tmp_path):
    a = cs.write(prefixed(cs.example(1, n_cells=30), "p_"), tmp_path / "a")
    b = cs.write(prefixed(cs.example(2, n_cells=30), "p_").replace(
        images=prefixed(cs.example(2, n_cells=30), "p_").images.assign(sample_id="p_other")).replace(
        cells=prefixed(cs.example(2, n_cells=30), "p_").cells.assign(sample_id="p_other")), tmp_path / "b")
    report = cs.open_cohort([a, b]).validate(progress=False)
    assert report.directory(a).ok and report.directory(b).ok and not report.ok
    checks = {f.check: f.directory for f in report.failures}
    assert checks == {"cohort_image_id_unique": f"{a}, {b}", "cohort_sample_consistent": f"{a}, {b}"}
    assert "'p_img1' in " in report.format()
    assert list(report.to_frame().columns) == ["directory", "check", "message"]


def test_write_dataset_refuses_an_existing_target_and_non_character_partitions(slides, tmp_path):
    cohort = cs.open_cohort(slides)
    with pytest.raises(cs.FormatError, match="already exists"):
        cohort.write_dataset(slides[0])
    with pytest.raises(CohortError, match="partition columns are character"):
        cohort.write_dataset(tmp_path / "out", partition_by=["x"])
    out = cohort.write_dataset(tmp_path / "out", partition_by=["image_id", "classification"])
    assert (out / "cells" / "image_id=slide01_img1").is_dir()
    back = cs.open_cohort(out)
    assert back.partition_by == ("image_id", "classification") and back.n_cells == 180
    frame = pd.concat([cs.read(p).cells for p in slides], ignore_index=True)
    cells = back.to_anndata().obs.sort_values(["image_id", "cell_id"])
    expected = frame.sort_values(["image_id", "cell_id"])
    assert cells["classification"].tolist() == expected["classification"].tolist()


def test_to_anndata_without_a_cluster_and_pca_through_scanpys_dask_path(slides):
    import scanpy as sc

    adata = cs.open_cohort(slides).to_anndata()
    expected = np.concatenate([cs.read(p).measurements for p in slides])
    assert np.array_equal(adata.X.compute(), expected, equal_nan=True)
    finite = adata[:, ~np.isnan(expected).any(axis=0)].copy()
    sc.pp.pca(finite, n_comps=3, svd_solver="covariance_eigh")  # scanpy's own dask PCA (no dask-ml)
    assert finite.obsm["X_pca"].shape == (180, 3)
    assert type(finite.obsm["X_pca"]).__module__.startswith("dask")


def test_cli_validate_summary_and_dataset_with_local_threads(slides, tmp_path, capsys):
    folder = str(slides[0].parent)
    assert main(["cohort", "validate", folder, "--scheduler", "threads"]) == 0
    assert "cohort validation: OK (3 directories" in capsys.readouterr().out
    out = tmp_path / "summary.parquet"
    assert main(["cohort", "summary", *map(str, slides), "-o", str(out), "--scheduler", "threads"]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(out), cs.open_cohort(slides).summary(), check_dtype=False)
    assert main(["cohort", "dataset", folder, str(tmp_path / "ds"), "--scheduler", "threads"]) == 0
    assert pq.ParquetDataset(tmp_path / "ds" / "cells").read().num_rows == 180
    assert main(["cohort", "summary", folder, "-o", str(tmp_path / "x.json"), "--scheduler", "threads"]) == 2
    raw = bytearray((slides[1] / "cells.parquet").read_bytes())
    raw[100] ^= 1
    (slides[1] / "cells.parquet").write_bytes(bytes(raw))
    capsys.readouterr()
    assert main(["cohort", "validate", folder, "--scheduler", "threads"]) == 1
    assert f"FAIL  {slides[1]}: ChecksumMismatch" in capsys.readouterr().out
    assert main(["cohort", "dataset", folder, str(tmp_path / "ds2"), "--scheduler", "threads"]) == 1
    assert "slide02" in capsys.readouterr().err and not (tmp_path / "ds2").exists()


def test_preview_heatmap_data_outliers_and_opening_an_image(tmp_path):
    paths = write_example_cohort(tmp_path / "slides", 5, n_cells=80)
    shifted = cs.read(paths[3])
    cs.write(shifted.replace(measurements=shifted.measurements * 50), paths[3], overwrite=True)
    cohort = cs.open_cohort(paths)
    summary = cohort.summary()
    w = cohort.preview(summary=summary)
    medians = w.medians()
    assert list(medians.columns) == ["DAPI", "CD3e", "Pan-Cytokeratin", "FOXP3"]
    row = summary[(summary["image_id"] == "slide02_img1") & (summary["feature_id"] == "cell:CD3e:mean")]
    assert medians.loc["slide02_img1", "CD3e"] == row["median"].item()
    assert (w.na_fraction().to_numpy() == 0).all()
    flagged = w.outliers().any(axis=1)
    assert set(flagged[flagged].index) >= {"slide04_img1", "slide04_img2"}
    assert "slide04_img1" in w.flags.value and w.heatmap.value[:4] == b"\x89PNG"
    w.family.value = ("nucleus", "median")
    assert w.medians().loc["slide01_img2", "FOXP3"] == summary.set_index(["image_id", "feature_id"]).loc[
        ("slide01_img2", "nucleus:FOXP3:median"), "median"]
    w.images.value = "slide04_img2"
    x = w.opened.data.x
    assert x.images["image_id"].tolist() == ["slide04_img2"]
    assert x.n_cells == int((shifted.cells["image_id"] == "slide04_img2").sum())
    assert b"http" not in w.heatmap.value
