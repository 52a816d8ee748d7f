"""``cellspec luxar``: a directory, ``example`` or an ``.h5ad`` compiled from the command line."""

from __future__ import annotations

import luxar
import pandas as pd

import cellspec_sc as cs
from cellspec_sc.cli.main import main
from luxar_scenes import cells_of, points_total


def test_cli_compiles_a_directory_source_and_refuses_bad_layers(tmp_path, capsys):
    out = tmp_path / "cli.luxar.zarr"
    assert main(["luxar", "example", str(out), "--layer", "cells", "--layer", "marker:CD3e"]) == 0
    assert f"open it with: cellspec view {out}" in capsys.readouterr().out
    assert points_total(out) == 160
    assert main(["luxar", "example", str(out), "--layer", "colour:red"]) == 2
    assert "unknown layer 'colour:red'" in capsys.readouterr().err
    assert main(["luxar", str(tmp_path / "missing.h5ad"), str(out)]) == 2


def test_cli_refuses_an_h5ad_anndata_cannot_read_naming_it(tmp_path, capsys):
    # valid HDF5 that anndata refuses with its IORegistryError, which escaped as a traceback
    import h5py

    odd = tmp_path / "odd.h5ad"
    with h5py.File(odd, "w") as f:
        f.attrs["encoding-type"], f.attrs["encoding-version"] = "anndata", "0.1.0"
        f.create_group("X").attrs["encoding-type"] = "csr_matrix"
    assert main(["luxar", str(odd), str(tmp_path / "odd.luxar.zarr")]) == 2
    assert f"{odd}: cannot be read as AnnData (IORegistryError: No read method registered" in capsys.readouterr().err
    assert not (tmp_path / "odd.luxar.zarr").exists()


def test_cli_compiles_a_cellspec_directory_with_outlines(tmp_path):
    import json

    x = cs.example()
    cells = cells_of(x, "img2").iloc[:5]
    square = [[0, 0], [4, 0], [4, 4], [0, 4], [0, 0]]
    features = [{"type": "Feature", "id": c, "geometry": {"type": "Polygon", "coordinates": [
        [[cx / 0.5 + dx, cy / 0.5 + dy] for dx, dy in square]]}}
        for c, cx, cy in zip(cells["cell_id"], cells["x"], cells["y"], strict=True)]
    (tmp_path / "img2.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    images = x.images.copy()
    images["geometry_ref"] = pd.array([None, "img2.geojson"], dtype="string")
    directory = cs.write(x.replace(images=images, source_dir=tmp_path), tmp_path / "slide.cellspec")
    out = tmp_path / "slide.luxar.zarr"
    assert main(["luxar", str(directory), str(out), "--layer", "cells", "--layer", "outlines"]) == 0
    lines = luxar.LuxarScene.load(out).get_lines("outlines/img2/outlines.cells")
    assert len(lines.segments) == 4 * 5


def test_cli_reads_h5ad_with_its_embedding(tmp_path, scanpy_adata):
    _, adata = scanpy_adata
    h5ad = tmp_path / "cells.h5ad"
    adata.write_h5ad(h5ad)
    out = tmp_path / "cli.luxar.zarr"
    assert main(["luxar", str(h5ad), str(out), "--layer", "category:cluster", "--layer", "embedding:X_umap",
                 "--layout", "stack"]) == 0
    assert points_total(out) == 4 * adata.n_obs  # the category layer twice (at 'all' and at its cluster)
