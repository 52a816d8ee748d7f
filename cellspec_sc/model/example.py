"""Simulated example objects: the spec's example, and larger ones for tests and benchmarks.

>>> from cellspec_sc import example
>>> x = example()
>>> x.summary()["kinds"]
{'intensity': 16, 'shape': 2, 'other': 1}
>>> big = example(n_cells=10_000, n_features=200, adjacency=True, region_layers=("tissue",))
>>> big.measurements.shape
(10000, 200)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from cellspec_sc.model.cellspec import CellSpec
from cellspec_sc.model.memory import empty_matrix
from cellspec_sc.model.provenance import new_provenance
from cellspec_sc.spec.types import canonical_frame
from cellspec_sc.spec.vocabulary import SPEC_VERSION

SIMULATOR_VERSION = "1.0.0"
SPEC_MARKERS = ("DAPI", "CD3e", "Pan-Cytokeratin", "FOXP3")
CLASSES = ("Tumor", "T cell", "Treg", "Stroma")
# Mean level of each spec marker per class (rows follow CLASSES); extra markers get random levels.
_LEVELS = {
    "DAPI": (900.0, 800.0, 800.0, 700.0),
    "CD3e": (20.0, 600.0, 550.0, 15.0),
    "Pan-Cytokeratin": (1200.0, 30.0, 30.0, 60.0),
    "FOXP3": (5.0, 10.0, 400.0, 5.0),
}
_CLASS_WEIGHTS = (0.45, 0.25, 0.05, 0.25)
_COMPARTMENT_SCALE = {"cell": 1.0, "nucleus": 1.3}
_STAT_SCALE = {"mean": 1.0, "median": 0.92}
_IMAGE_SIZE_PX = (2000, 1500)
_CHUNK_BYTES = 1 << 26  # rows simulated at once: about 64 MB of values (one dask block when lazy)
# Fixed so that example(seed) is reproducible to the bit, provenance included.
_CREATED_UTC = "2026-01-01T00:00:00Z"


def example(
    seed: int = 0,
    *,
    n_cells: int = 80,
    n_images: int = 2,
    n_samples: int | None = None,
    markers: Sequence[str] = SPEC_MARKERS,
    n_features: int | None = None,
    pixel_size: float = 0.5,
    adjacency: bool = False,
    region_layers: Sequence[str] = (),
    lazy: bool = False,
) -> CellSpec:
    """Simulate a valid cellspec object.

    The defaults give the spec's example: 80 cells in 2 images of 2 samples,
    19 features (16 intensity: 4 markers x cell/nucleus x mean/median; 2 shape:
    cell and nucleus area; 1 other: detection probability), pixel size 0.5 um/px,
    no adjacency. ``n_features`` adds markers (``M005``, ``M006``, ...) until
    there are that many features in total; ``adjacency=True`` adds Delaunay
    contacts; each name in ``region_layers`` adds ``region__<layer>`` and
    ``boundary_distance__<layer>`` columns. One million cells x 200 features
    take a few seconds.

    ``lazy=True`` gives the same object with the measurements as a dask array
    whose blocks are simulated when computed, so a slide bigger than memory can
    be written (``cs.write`` streams it) without ever being held:
    ``example(n_cells=2_000_000, n_features=1000, lazy=True)`` is 16 GB of
    values in about 200 MB. Its values equal the eager ones to the bit.
    """
    rng = np.random.default_rng(seed)
    n_samples = n_images if n_samples is None else n_samples
    markers = _markers_for(list(markers), n_features)
    dictionary = _dictionary(markers, n_features)
    images = _images(n_images, n_samples, pixel_size)
    image_of_cell = np.sort(np.arange(n_cells) % n_images) if n_images else np.zeros(0, dtype=int)
    cls = rng.choice(len(CLASSES), size=n_cells, p=_CLASS_WEIGHTS)
    cells = _cells(rng, image_of_cell, images, cls, region_layers)
    measurements = _measurements(seed, rng, dictionary, markers, cls, cells["area"].to_numpy(), lazy)
    parameters = {"seed": seed, "n_cells": n_cells, "n_images": n_images, "n_samples": n_samples,
                  "n_features": len(dictionary), "pixel_size": pixel_size, "adjacency": adjacency,
                  "region_layers": list(region_layers)}
    provenance = new_provenance(
        producer={"tool": "simulate", "version": SIMULATOR_VERSION},
        adapter="simulator", adapter_version=SIMULATOR_VERSION,
        counts={"rows_read": n_cells, "rows_kept": n_cells, "na_converted": 0, "nonfinite_converted": 0},
        parameters=parameters,
    )
    provenance["created_utc"] = _CREATED_UTC
    return CellSpec(
        spec_version=SPEC_VERSION,
        cells=cells,
        measurements=measurements,
        dictionary=dictionary,
        images=images,
        channels=_channels(images, markers),
        provenance=provenance,
        adjacency=_delaunay_contacts(cells) if adjacency else None,
    )


def _markers_for(markers: list[str], n_features: int | None) -> list[str]:
    if n_features is None:
        return markers
    needed = max(1, -(-(n_features - 3) // 4))  # 4 intensity features per marker
    extra = [f"M{i:03d}" for i in range(len(markers) + 1, needed + 1)]
    return markers + extra


def _dictionary(markers: list[str], n_features: int | None) -> pd.DataFrame:
    rows = [(f"{comp}:{m}:{stat}", "intensity", m, comp, stat, "a.u.", f"{comp.capitalize()}: {m} {stat}")
            for comp in _COMPARTMENT_SCALE for m in markers for stat in _STAT_SCALE]
    if n_features is not None:
        rows = rows[:max(0, n_features - 3)]
    rows += [("cell:area", "shape", None, "cell", "area", "um2", "Cell: Area µm^2"),
             ("nucleus:area", "shape", None, "nucleus", "area", "um2", "Nucleus: Area µm^2"),
             ("other:detection_probability", "other", None, None, "detection_probability", "1",
              "Detection probability")]
    columns = ["feature_id", "kind", "marker", "compartment", "statistic", "unit", "source_name"]
    return canonical_frame(pd.DataFrame(rows, columns=columns), "dictionary")


def _images(n_images: int, n_samples: int, pixel_size: float) -> pd.DataFrame:
    ids = [f"img{i + 1}" for i in range(n_images)]
    frame = pd.DataFrame({
        "image_id": ids,
        "sample_id": [f"s{i % max(n_samples, 1) + 1}" for i in range(n_images)],
        "pixel_size": [float(pixel_size)] * n_images,
        "width_px": [_IMAGE_SIZE_PX[0]] * n_images,
        "height_px": [_IMAGE_SIZE_PX[1]] * n_images,
        "platform": ["simulated"] * n_images,
        "source_image": [f"{i}.ome.tiff" for i in ids],
    })
    return canonical_frame(frame, "images")


def _channels(images: pd.DataFrame, markers: list[str]) -> pd.DataFrame:
    n = len(markers)
    frame = pd.DataFrame({
        "image_id": np.repeat(images["image_id"].to_numpy(dtype=object), n),
        "channel_index": np.tile(np.arange(1, n + 1), len(images)),
        "channel_name": markers * len(images),
        "marker": markers * len(images),
    })
    return canonical_frame(frame, "channels")


def _cells(rng: np.random.Generator, image_of_cell: np.ndarray, images: pd.DataFrame, cls: np.ndarray,
           region_layers: Sequence[str]) -> pd.DataFrame:
    n = image_of_cell.size
    ps = float(images["pixel_size"].iloc[0]) if len(images) else 1.0
    width, height = _IMAGE_SIZE_PX[0] * ps, _IMAGE_SIZE_PX[1] * ps
    ids = images["image_id"].to_numpy(dtype=object)
    samples = images["sample_id"].to_numpy(dtype=object)
    first_of_image = np.searchsorted(image_of_cell, np.arange(len(images)))
    local_index = np.arange(n) - first_of_image[image_of_cell] + 1 if n else np.zeros(0, dtype=int)
    x = rng.uniform(0.0, width, n)
    y = rng.uniform(0.0, height, n)
    frame = {
        "cell_id": local_index.astype(str).astype(object),
        "image_id": ids[image_of_cell],
        "sample_id": samples[image_of_cell],
        "x": x,
        "y": y,
        "area": np.clip(rng.lognormal(np.log(150.0), 0.35, n), 20.0, 2000.0),
        "classification": np.asarray(CLASSES, dtype=object)[cls],
    }
    for layer in region_layers:
        boundary = width * rng.uniform(0.3, 0.7)
        frame[f"region__{layer}"] = np.where(x < boundary, "tumor", "stroma").astype(object)
        frame[f"boundary_distance__{layer}"] = x - boundary
    return canonical_frame(pd.DataFrame(frame), "cells")


def _measurements(seed: int, rng: np.random.Generator, dictionary: pd.DataFrame, markers: list[str],
                  cls: np.ndarray, area: np.ndarray, lazy: bool) -> np.ndarray:
    """The matrix, simulated in row chunks that each draw from their own seeded generator.

    So any chunk can be made alone (``lazy``: one dask block per chunk) and the lazy and eager
    matrices are equal to the bit.
    """
    n, k = cls.size, len(dictionary)
    intensity = (dictionary["kind"] == "intensity").to_numpy(dtype=bool)
    levels = _intensity_levels(rng, dictionary[intensity], markers)  # classes x intensity features
    rows = max(256, _CHUNK_BYTES // (8 * k))
    bounds = [(start, min(start + rows, n)) for start in range(0, n, rows)]
    if lazy:
        import dask
        import dask.array as da

        chunk = dask.delayed(_measurement_rows, pure=True)
        blocks = [da.from_delayed(chunk(seed, a, b, levels, cls[a:b], area[a:b], k), shape=(b - a, k),
                                  dtype=np.float64) for a, b in bounds]
        return da.concatenate(blocks, axis=0) if blocks else da.zeros((0, k), dtype=np.float64)
    out = empty_matrix(n, k)
    for a, b in bounds:
        out[a:b] = _measurement_rows(seed, a, b, levels, cls[a:b], area[a:b], k)
    return out


def _measurement_rows(seed: int, start: int, stop: int, levels: np.ndarray, cls: np.ndarray, area: np.ndarray,
                      k: int) -> np.ndarray:
    """Rows ``start:stop`` of the matrix: intensities first (in dictionary order), then two areas
    and a detection probability."""
    rng = np.random.default_rng([seed, start])
    out = np.empty((stop - start, k), dtype=np.float64)
    block = rng.random((stop - start, levels.shape[1]))
    block += 0.5
    block *= levels[cls]
    out[:, :levels.shape[1]] = block  # intensity features come first in the dictionary
    out[:, k - 3] = area
    out[:, k - 2] = area * rng.uniform(0.25, 0.55, stop - start)
    out[:, k - 1] = rng.uniform(0.5, 1.0, stop - start)
    return out


def _intensity_levels(rng: np.random.Generator, dictionary: pd.DataFrame, markers: list[str]) -> np.ndarray:
    per_marker = {m: np.asarray(_LEVELS.get(m) or rng.uniform(10.0, 1000.0, len(CLASSES))) for m in markers}
    columns = [per_marker[m] * _COMPARTMENT_SCALE[c] * _STAT_SCALE[s]
               for m, c, s in zip(dictionary["marker"], dictionary["compartment"], dictionary["statistic"], strict=True)]
    return np.column_stack(columns) if columns else np.zeros((len(CLASSES), 0))


def _delaunay_contacts(cells: pd.DataFrame) -> pd.DataFrame:
    from scipy.spatial import Delaunay

    parts = []
    for image_id, group in cells.groupby("image_id", sort=False):
        if len(group) < 3:
            continue
        pts = group[["x", "y"]].to_numpy()
        tri = Delaunay(pts)
        edges = np.concatenate([tri.simplices[:, [0, 1]], tri.simplices[:, [1, 2]], tri.simplices[:, [0, 2]]])
        edges = np.unique(np.sort(edges, axis=1), axis=0)
        length = np.linalg.norm(pts[edges[:, 0]] - pts[edges[:, 1]], axis=1)
        ids = group["cell_id"].to_numpy(dtype=object)
        a, b = ids[edges[:, 0]], ids[edges[:, 1]]
        swap = np.array([x.encode() > y.encode() for x, y in zip(a, b, strict=True)], dtype=bool)
        parts.append(pd.DataFrame({
            "image_id": image_id,
            "cell_id_a": np.where(swap, b, a),
            "cell_id_b": np.where(swap, a, b),
            "shared_boundary": np.round(np.clip(20.0 - 0.5 * length, 0.0, None), 6),
            "method": "delaunay",
        }))
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        {"image_id": [], "cell_id_a": [], "cell_id_b": [], "shared_boundary": [], "method": []})
    return canonical_frame(frame, "adjacency")
