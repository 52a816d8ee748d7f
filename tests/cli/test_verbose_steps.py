"""``cellspec -v`` logs one line per step (opening, parsing, validating, writing, compiling a Luxar scene), and
``cellspec luxar`` reads an AnnData file as AnnData, so its obsm embeddings and uns colours reach the scene."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgb

import cellspec_sc as cs
from cellspec_sc.bridges.luxar._colour import linear_rgb
from cellspec_sc.cli.main import main
from luxar_scenes import points_node

DATA = Path(__file__).resolve().parents[1] / "data"
STEP = r"cellspec: {}: done in \d+\.\d s"


def _log_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("cellspec: ") and "warning:" not in line]


def _assert_steps(lines: list[str], patterns: list[str]) -> None:
    """Exactly these lines, in this order."""
    assert len(lines) == len(patterns), lines
    for line, pattern in zip(lines, patterns, strict=True):
        assert re.fullmatch(pattern, line), (line, pattern)


@pytest.mark.parametrize("reader", ["qupath", "mcmicro"])
def test_import_logs_the_header_the_parse_the_validation_and_the_write(tmp_path, capsys, reader):
    source, pixel = {"qupath": ("qupath/micro_variants.tsv", "0.5"),
                     "mcmicro": ("mcmicro/exemplar-001--unmicst_cell.csv", "0.65")}[reader]
    name = Path(source).name
    assert main(["-v", "import", reader, str(DATA / source), str(tmp_path / "out"), "--pixel-size", pixel]) == 0
    written = cs.read(tmp_path / "out")
    n_checks = len(cs.vocabulary().checks) + 1  # and the portability note
    _assert_steps(_log_lines(capsys.readouterr().err), [
        STEP.format(re.escape(f"reading the header of {name} ({reader})")),
        STEP.format(re.escape(f"parsing {name} ({reader})")),
        rf"cellspec: validating: {n_checks} checks in \d+\.\d s",
        rf"cellspec: writing cells.parquet: {written.n_cells} rows in \d+\.\d s",
    ])


def test_luxar_logs_opening_and_the_compile(tmp_path, capsys):
    out = tmp_path / "s.luxar.zarr"
    assert main(["-v", "luxar", "example", str(out)]) == 0
    _assert_steps(_log_lines(capsys.readouterr().err), [
        STEP.format(re.escape("opening example (the simulated spec example)")),
        STEP.format(re.escape(f"compiling the Luxar scene {out}")),
    ])


def test_without_v_no_step_is_logged(tmp_path, capsys):
    assert main(["luxar", "example", str(tmp_path / "s.luxar.zarr")]) == 0
    assert capsys.readouterr().err == ""


@pytest.fixture(scope="module")
def clustered():
    """An AnnData of to_anndata with a 2-D embedding, clusters 0, 1, 2, 10 and scanpy's colours for them."""
    matplotlib.use("Agg")
    x = cs.example(n_cells=120)
    adata = cs.to_anndata(x)
    adata.obsm["X_umap"] = np.random.default_rng(1).normal(size=(adata.n_obs, 2))
    labels = np.array(["0", "1", "2", "10"])[np.arange(adata.n_obs) % 4]
    adata.obs["leiden"] = pd.Categorical(labels, categories=["0", "1", "2", "10"])
    adata.uns["leiden_colors"] = np.array(["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e"], dtype=object)
    return adata


@pytest.mark.parametrize("suffix", [".h5ad", ".zarr"])
def test_luxar_reads_an_anndata_file_with_its_embeddings_and_colours(tmp_path, capsys, clustered, suffix):
    source = tmp_path / f"clustered{suffix}"
    (clustered.write_h5ad if suffix == ".h5ad" else clustered.write_zarr)(source)
    out = tmp_path / "s.luxar.zarr"
    assert main(["-v", "luxar", str(source), str(out), "--layer", "category:leiden",
                 "--layer", "embedding:X_umap"]) == 0
    _assert_steps(_log_lines(capsys.readouterr().err), [
        STEP.format(re.escape(f"reading {source} as AnnData")),
        STEP.format(re.escape(f"compiling the Luxar scene {out}")),
    ])
    palette = dict(zip(["0", "1", "2", "10"], ["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e"], strict=True))
    keys = (clustered.obs["image_id"].astype(str) + "/" + clustered.obs["cell_id"].astype(str)).to_numpy()
    cluster = pd.Series(clustered.obs["leiden"].astype(str).to_numpy(), index=keys)
    for image in ("img1", "img2"):
        view = points_node(out, f"embedding_X_umap/{image}.category_leiden")  # the embedding: from obsm
        ids = [f"{image}/{k}" for k in view["keys"]]
        assert len(ids) >= (clustered.obs["image_id"] == image).sum()
        np.testing.assert_allclose(view["colors"], linear_rgb([to_rgb(palette[c]) for c in cluster[ids]]),
                                   atol=2 / 255)  # the colours: uns["leiden_colors"]


def test_preview_logs_opening_the_figures_and_the_write(tmp_path, capsys):
    out = tmp_path / "p.html"
    assert main(["-v", "preview", "example", "-o", str(out)]) == 0
    n_checks = len(cs.vocabulary().checks) + 1
    _assert_steps(_log_lines(capsys.readouterr().err), [
        STEP.format(re.escape("opening example (the simulated spec example)")),
        r"cellspec: preview figures: \d+ figures in \d+\.\d s",
        rf"cellspec: validating: {n_checks} checks in \d+\.\d s",
        STEP.format(re.escape(f"writing the preview {out}")),
    ])
