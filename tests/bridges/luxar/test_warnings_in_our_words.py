"""luxar's own warnings while compiling reach the user once, in words that say what they mean, never raw."""

from __future__ import annotations

import warnings

import pandas as pd

import cellspec_sc as cs
from cellspec_sc.cli.main import print_warning
from luxar_scenes import cells_object


def wide_object(width_um: float) -> cs.CellSpec:
    cells = pd.DataFrame({"cell_id": ["a", "b", "c"], "image_id": "wide", "x": [10.0, width_um / 2, width_um - 10.0],
                          "y": [50.0, 50.0, 50.0], "area": 80.0, "classification": ["T cell", "Tumor", "T cell"]})
    return cells_object({"wide": (width_um, 100.0)}, cells)


def test_fixed_point_step_of_a_wide_scene_is_said_once_in_micrometres(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cs.to_luxar(wide_object(9000.0), tmp_path / "wide.luxar.zarr", layers=["cells", "marker:CD3e"])
    texts = [str(w.message) for w in caught]
    assert not any("COORDINATE" in t or "uint16" in t for t in texts), texts
    ours = [t for t in texts if "stores cell positions" in t]
    assert len(ours) == 1, texts
    assert "9,000 um" in ours[0] and "0.14 um" in ours[0]  # 9,000 um / 65,535 levels


def test_the_command_line_prints_it_as_one_cellspec_warning_line(tmp_path, capsys):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cs.to_luxar(wide_object(9000.0), tmp_path / "wide.luxar.zarr")
    for w in caught:
        print_warning(w.message, w.category, w.filename, w.lineno)
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if "positions" in line] == [
        "cellspec: warning: the scene spans up to 9,000 um along one axis, so luxar stores cell positions to within "
        "0.14 um (far below a cell's size; nothing to do)"]


def test_a_scene_within_4096_um_says_nothing(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cs.to_luxar(wide_object(4000.0), tmp_path / "narrow.luxar.zarr")
    assert [str(w.message) for w in caught if "position" in str(w.message)] == []
