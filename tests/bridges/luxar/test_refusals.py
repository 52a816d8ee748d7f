"""What to_luxar refuses, naming the problem, and what a refusal leaves behind (nothing new; the previous
scene kept)."""

from __future__ import annotations

import pytest

import cellspec_sc as cs
from cellspec_sc.bridges.luxar import parse_layer
from luxar_scenes import points_total


def test_layer_strings_parse_like_the_cli():
    assert parse_layer("feature:nucleus:FOXP3:mean").argument == "nucleus:FOXP3:mean"
    assert parse_layer("category:region__tissue").kind == "category"
    assert parse_layer(" adjacency ").kind == "adjacency"
    for bad in ("feature:", "colour:red", "cells:x", ""):
        with pytest.raises(cs.InputError, match="unknown layer"):
            parse_layer(bad)


@pytest.mark.parametrize(("layers", "message"), [
    (["feature:cell:NOPE:mean"], "unknown feature_id 'cell:NOPE:mean'"),
    (["marker:NOPE"], "no intensity feature for marker 'NOPE'"),
    (["category:leiden"], "no cells column 'leiden'"),
    (["embedding:X_umap"], "a CellSpec has no embeddings"),
    (["adjacency"], "has no adjacency"),
    ([], "no layer selected"),
])
def test_refusals_name_the_problem_and_write_nothing(tmp_path, x, layers, message):
    out = tmp_path / "s.luxar.zarr"
    with pytest.raises(cs.InputError, match=message):
        cs.to_luxar(x, out, layers=layers)
    assert not out.exists()


def test_refuses_other_objects_and_layouts(tmp_path, x):
    with pytest.raises(cs.InputError, match="CellSpec or an AnnData"):
        cs.to_luxar(x.cells, tmp_path / "s.luxar.zarr")
    with pytest.raises(cs.InputError, match="layout must be one of side, stack"):
        cs.to_luxar(x, tmp_path / "s.luxar.zarr", layout="grid")


def test_a_failed_compile_keeps_the_previous_scene(tmp_path, x):
    out = cs.to_luxar(x, tmp_path / "s.luxar.zarr")
    cells = x.cells.copy()
    cells.loc[0, "image_id"] = "ghost"
    with pytest.raises(cs.InputError, match="image_id 'ghost' is not in images"):
        cs.to_luxar(x.replace(cells=cells), out)
    assert points_total(out) == x.n_cells


def test_coordinates_beyond_float32_are_refused(tmp_path, x):
    cells = x.cells.copy()
    cells.loc[3, "y"] = 1e300
    with pytest.raises(cs.InputError, match=r"cells row 3: y = 1e\+300 um cannot be placed"):
        cs.to_luxar(x.replace(cells=cells), tmp_path / "s.luxar.zarr")
