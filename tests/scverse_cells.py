"""Data for the scverse client tests: a cellspec laid out so that spatial statistics have known answers, and an
mcquant table.

Two images of 20 x 20 cells on a 10 um grid, in the same micrometre frame (``top`` shifted by 5 um):
in ``left`` the T cells fill the left half, in ``top`` the top half; the other cells are Tumor.
``CD3`` is high in T cells and low in Tumor (spatially autocorrelated); ``noise`` is random.
The cell nearest the top-left corner of ``left`` is ``marked == "yes"`` (for plot orientation
checks). Contacts are the Delaunay edges of each image.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.spatial import Delaunay

import cellspec_sc as cs
from cellspec_sc.model import new_provenance
from cellspec_sc.spec import canonical_frame

SIDE, STEP, PIXEL_SIZE = 20, 10.0, 0.5


def layout_cells() -> pd.DataFrame:
    rows = []
    for image, t_cell, shift in (("left", lambda i, j: j < SIDE // 2, 0.0), ("top", lambda i, j: i < SIDE // 2, 5.0)):
        for i in range(SIDE):        # grid row: y
            for j in range(SIDE):    # grid column: x
                rows.append({"cell_id": f"{i * SIDE + j + 1:03d}", "image_id": image,
                             "sample_id": "s1" if image == "left" else "s2",
                             "x": (j + 0.5) * STEP + shift, "y": (i + 0.5) * STEP + shift, "area": 60.0 + (i + j) % 7,
                             "classification": "T cell" if t_cell(i, j) else "Tumor",
                             "marked": "yes" if (image, i, j) == ("left", 0, 0) else "no"})
    return canonical_frame(pd.DataFrame(rows), "cells")


def delaunay_adjacency(cells: pd.DataFrame) -> pd.DataFrame:
    parts = []
    for image_id, group in cells.groupby("image_id", sort=False):
        points = group[["x", "y"]].to_numpy()
        simplices = Delaunay(points).simplices
        edges = np.unique(np.sort(np.concatenate([simplices[:, [0, 1]], simplices[:, [1, 2]],
                                                  simplices[:, [0, 2]]]), axis=1), axis=0)
        ids = group["cell_id"].to_numpy(dtype=object)
        a, b = ids[edges[:, 0]], ids[edges[:, 1]]
        parts.append(pd.DataFrame({"image_id": image_id, "cell_id_a": np.minimum(a, b), "cell_id_b": np.maximum(a, b),
                                   "shared_boundary": 5.0, "method": "delaunay"}))
    return canonical_frame(pd.concat(parts, ignore_index=True), "adjacency")


def layout_cellspec(seed: int = 0) -> cs.CellSpec:
    rng = np.random.default_rng(seed)
    cells = layout_cells()
    t_cell = (cells["classification"] == "T cell").to_numpy()
    cd3 = np.where(t_cell, 400.0, 20.0) + rng.normal(0, 5, len(cells))
    measurements = np.column_stack([cd3, rng.uniform(0, 100, len(cells)), cells["area"].to_numpy()])
    dictionary = canonical_frame(pd.DataFrame({
        "feature_id": ["cell:CD3:mean", "cell:noise:mean", "cell:area"], "kind": ["intensity", "intensity", "shape"],
        "marker": ["CD3", "noise", None], "compartment": ["cell", "cell", "cell"],
        "statistic": ["mean", "mean", "area"], "unit": ["a.u.", "a.u.", "um2"],
        "source_name": ["CD3", "noise", "Area"]}), "dictionary")
    images = canonical_frame(pd.DataFrame({"image_id": ["left", "top"], "sample_id": ["s1", "s2"],
                                           "pixel_size": [PIXEL_SIZE, PIXEL_SIZE]}), "images")
    channels = canonical_frame(pd.DataFrame({"image_id": ["left", "left", "top", "top"], "channel_index": [1, 2, 1, 2],
                                             "channel_name": ["CD3", "noise"] * 2, "marker": ["CD3", "noise"] * 2}),
                               "channels")
    provenance = new_provenance(producer={"tool": "tests/scverse_cells.py", "version": "1"}, adapter="test",
                                adapter_version="1", counts={"rows_read": len(cells), "rows_kept": len(cells),
                                                             "na_converted": 0, "nonfinite_converted": 0})
    x = cs.CellSpec(spec_version=cs.SPEC_VERSION, cells=cells, measurements=measurements, dictionary=dictionary,
                    images=images, channels=channels, provenance=provenance, adjacency=delaunay_adjacency(cells))
    x.validate().raise_if_failed()
    return x


def red_pixels_in_top_left(fig, ax) -> tuple[int, float, float]:
    """(number of pure-red pixels, their mean column and row as fractions of the axes box, 0 = left / top)."""
    fig.canvas.draw()
    rgba = np.asarray(fig.canvas.buffer_rgba())
    red = (rgba[..., 0] > 200) & (rgba[..., 1] < 60) & (rgba[..., 2] < 60)
    box = ax.get_window_extent()
    height = rgba.shape[0]
    rows, cols = np.nonzero(red)
    col = (cols.mean() - box.x0) / box.width
    row = (rows.mean() - (height - box.y1)) / box.height  # buffer rows run downward, display y upward
    return int(red.sum()), float(col), float(row)


def write_mcquant_csv(path, n=40, seed=3):
    """An mcquant table: CellID, one mean-intensity column per marker, then the regionprops of the cell mask."""
    rng = np.random.default_rng(seed)
    table = pd.DataFrame({"CellID": np.arange(1, n + 1)})
    for marker in ("DNA_1", "CD3D", "CD20", "KI67"):
        table[marker] = np.round(rng.uniform(50, 5000, n), 3)
    table["X_centroid"] = np.round(rng.uniform(0, 900, n), 4)
    table["Y_centroid"] = np.round(rng.uniform(0, 700, n), 4)
    table["Area"] = rng.integers(40, 400, n)
    table["MajorAxisLength"] = np.round(rng.uniform(8, 30, n), 5)
    table["MinorAxisLength"] = np.round(rng.uniform(5, 8, n), 5)
    table["Eccentricity"] = np.round(rng.uniform(0, 1, n), 6)
    table["Solidity"] = np.round(rng.uniform(0.8, 1, n), 6)
    table["Extent"] = np.round(rng.uniform(0.5, 0.9, n), 6)
    table["Orientation"] = np.round(rng.uniform(-1.5, 1.5, n), 6)
    table.to_csv(path, index=False)
    return pd.read_csv(path, float_precision="round_trip")
