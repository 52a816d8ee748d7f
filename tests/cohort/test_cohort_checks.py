"""The cohort-level checks of Cohort.validate name the directories involved."""

from __future__ import annotations

import cellspec_sc as cs
from cellspec_sc.cohort.example import prefixed


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
