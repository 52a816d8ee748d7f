"""The cohort preview: heatmap data from the summary, outlier images, and an image opened in the single-object
preview."""

from __future__ import annotations

import cellspec_sc as cs
from cellspec_sc.cohort.example import write_example_cohort


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
