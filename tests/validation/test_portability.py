"""Values a target format cannot store: validation notes them (``portability``), the writer of that format refuses
them naming the value, and a cellspec directory holds them."""

from __future__ import annotations

import pytest

import cellspec_sc as cs
from cellspec_sc.bridges.anndata import write_anndata_zarr, write_h5ad
from cellspec_sc.bridges.spatialdata import write_spatialdata
from cellspec_sc.errors import Unstorable


def test_nul_in_text_refused_for_h5ad_and_noted_by_validate(tmp_path):
    x = cs.example()
    cells = x.cells.copy()
    cells.loc[5, "classification"] = "T\x00cell"
    y = x.replace(cells=cells)
    report = cs.validate(y)
    assert report.ok and report.status("portability") == "warn"
    assert "cells.classification row 5 holds a NUL" in report.result("portability").message
    with pytest.raises(Unstorable, match=r"classification row 5 .* \.h5ad"):
        write_h5ad(y, tmp_path / "y.h5ad")
    assert list(tmp_path.iterdir()) == []
    assert cs.read(cs.write(y, tmp_path / "d")).equals(y)  # a cellspec directory holds it


def test_long_region_layer_name_refused_for_zarr_and_noted_by_validate(tmp_path):
    layer = "L" * 255  # matches the spec's pattern
    x = cs.example(region_layers=(layer,))
    assert cs.validate(x).status("portability") == "warn"
    for write in (write_anndata_zarr, write_spatialdata):
        with pytest.raises(Unstorable, match="255|bytes long"):
            write(x, tmp_path / "x.zarr")
    assert list(tmp_path.iterdir()) == []
    assert cs.validate(cs.example()).status("portability") == "pass"
