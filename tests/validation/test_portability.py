"""Values a target format cannot store: validation notes them (``portability``), the writer of that format refuses
them naming the value, and a cellspec directory holds them."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cellspec_sc as cs
from cellspec_sc.bridges.anndata import write_anndata_zarr, write_h5ad
from cellspec_sc.bridges.spatialdata import write_spatialdata
from cellspec_sc.errors import Unstorable
from cellspec_sc.validation._portability import _any_nul_byte, unstorable_text


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


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.text(alphabet="ab\x00é", max_size=3)), max_size=12),
       start=st.integers(0, 12), size=st.integers(0, 12), large=st.booleans())
def test_a_nul_is_found_exactly_among_the_values_of_a_column_slice(values, start, size, large):
    # a slice shares its parent's bytes: a NUL outside it is not in the column; Arrow pads empty buffers with zeros
    arrow = pa.array(values, type=pa.large_string() if large else pa.string()).slice(start, size)
    column = pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array([arrow.cast(pa.large_string())])))
    held = [v for v in arrow.to_pylist() if v is not None]
    has_nul = any("\x00" in v for v in held)
    assert _any_nul_byte(column) is has_nul
    x = cs.example()
    cells = x.cells.iloc[:len(column)].reset_index(drop=True).assign(note=column.to_numpy()) if len(column) else None
    if cells is not None:
        found = unstorable_text(x.replace(cells=cells, measurements=x.measurements[:len(column)]))
        first = next((row for row, v in enumerate(arrow.to_pylist()) if v is not None and "\x00" in v), None)
        assert (found is None) is (first is None)
        if first is not None:
            assert found.startswith(f"cells.note row {first} holds a NUL")


@pytest.mark.parametrize(("characters", "noted"), [(127, False), (128, True)], ids=["254 bytes", "256 bytes"])
def test_an_image_id_longer_than_a_file_name_may_be_is_noted_by_validate(characters, noted):
    """'é' takes two bytes in UTF-8: 128 of them are 256 bytes, one more than most file systems allow a name."""
    long_id = "é" * characters
    x = cs.example(n_cells=20)
    renamed = {"img1": long_id}

    def rename(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.assign(image_id=frame["image_id"].replace(renamed))

    y = x.replace(cells=rename(x.cells), images=rename(x.images), channels=rename(x.channels))
    result = cs.validate(y).result("portability")
    assert cs.validate(y).ok
    assert result.status == ("warn" if noted else "pass")
    if noted:
        assert f"image_id {long_id[:40]!r}... is 256 bytes long" in result.message
