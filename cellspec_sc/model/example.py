"""Simulated example objects: the spec's example, and larger ones for tests and benchmarks.

The cells sit in a simulated tissue (:mod:`cellspec_sc.model.tissue`): tumour nests
in stroma, T cells and Tregs at the nest margins, markers that follow the cell
types, contacts and outlines from the cells' geometry.

>>> from cellspec_sc import example
>>> x = example()
>>> x.summary()["kinds"]
{'intensity': 16, 'shape': 2, 'other': 1}
>>> big = example(n_cells=10_000, n_features=200, adjacency=True, region_layers=("tissue",))
>>> big.measurements.shape
(10000, 200)
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc.io.staging import scratch_folder
from cellspec_sc.model.cellspec import CellSpec
from cellspec_sc.model.ownership import sealed
from cellspec_sc.model.memory import empty_matrix
from cellspec_sc.model.provenance import new_provenance
from cellspec_sc.model.tissue import CLASSES, OUTLINE_VERTICES, Tissue, contacts, simulate_tissue
from cellspec_sc.spec.types import PANDAS_DTYPES, canonical_frame
from cellspec_sc.spec.vocabulary import SPEC_VERSION

SIMULATOR_VERSION = "2.0.0"
SPEC_MARKERS = ("DAPI", "CD3e", "Pan-Cytokeratin", "FOXP3")
# Mean level of each spec marker per class (rows follow CLASSES); extra markers get random levels.
_LEVELS = {
    "DAPI": (900.0, 800.0, 800.0, 700.0),
    "CD3e": (20.0, 600.0, 550.0, 15.0),
    "Pan-Cytokeratin": (1200.0, 30.0, 30.0, 60.0),
    "FOXP3": (5.0, 10.0, 400.0, 5.0),
}
_COMPARTMENT_SCALE = {"cell": 1.0, "nucleus": 1.3}
_STAT_SCALE = {"mean": 1.0, "median": 0.92}
_LAYER_INSET_UM = 20.0  # each further region layer marks the nests shrunk by this much more
_OUTLINE_SEED = 1  # spawn key of the generator that turns the outlines (apart from the cells' one)
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
    outlines: bool = False,
    outline_dir: str | os.PathLike | None = None,
) -> CellSpec:
    """Simulate a valid cellspec object: a section of tissue with tumour nests, stroma and immune cells.

    The defaults give the spec's example: 80 cells in 2 images of 2 samples,
    19 features (16 intensity: 4 markers x cell/nucleus x mean/median; 2 shape:
    cell and nucleus area; 1 other: detection probability), pixel size 0.5 um/px,
    no adjacency. ``n_features`` adds markers (``M005``, ``M006``, ...) until
    there are that many features in total.

    Cells are packed one per ~170 um2, so the images grow with ``n_cells``
    (all images share one frame). ``classification`` is Tumor inside irregular
    nests, T cell and Treg mostly in a band just outside them and in a few
    lymphoid aggregates, Stroma elsewhere; each marker's level follows the class
    (Pan-Cytokeratin in tumour, CD3e in T cells and Tregs, FOXP3 in Tregs), so
    markers are spatially autocorrelated. ``adjacency=True`` adds the contacts of
    the cells' outlines (method ``polygon_intersection``, see
    :mod:`cellspec_sc.model.tissue`); each name in ``region_layers`` adds
    ``region__<layer>`` (``tumor``/``stroma``) and ``boundary_distance__<layer>``
    columns that follow the nests (each further layer draws them 20 um smaller).
    ``outlines=True`` writes each image's cell outlines as GeoJSON (pixels, one
    polygon per cell of exactly its ``area``) into ``outline_dir`` (default: a
    temporary folder removed when Python exits), names them in
    ``images.geometry_ref`` and makes that folder the object's ``source_dir``,
    so ``cs.write`` copies them into the directory. The same seed gives the same
    object. One million cells x 200 features take a few seconds.

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
    image_of_cell = np.sort(np.arange(n_cells) % n_images) if n_images else np.zeros(0, dtype=int)
    tissue = simulate_tissue(rng, image_of_cell)
    images = _images(n_images, n_samples, pixel_size, tissue)
    cells = _cells(image_of_cell, images, tissue, region_layers)
    measurements = _measurements(seed, rng, dictionary, markers, tissue.classes, tissue.area, lazy)
    parameters = {"seed": seed, "n_cells": n_cells, "n_images": n_images, "n_samples": n_samples,
                  "n_features": len(dictionary), "pixel_size": pixel_size, "adjacency": adjacency,
                  "region_layers": list(region_layers), "outlines": outlines}
    provenance = new_provenance(
        producer={"tool": "simulate", "version": SIMULATOR_VERSION},
        adapter="simulator", adapter_version=SIMULATOR_VERSION,
        counts={"rows_read": n_cells, "rows_kept": n_cells, "na_converted": 0, "nonfinite_converted": 0},
        parameters=parameters,
    )
    provenance["created_utc"] = _CREATED_UTC
    source_dir = None
    if outlines:
        source_dir = _outline_folder(outline_dir)
        images = _write_outlines(seed, cells, images, tissue, source_dir)
    return CellSpec(
        spec_version=SPEC_VERSION,
        cells=cells,
        measurements=sealed(measurements),
        dictionary=dictionary,
        images=images,
        channels=_channels(images, markers),
        provenance=provenance,
        adjacency=_contacts(cells, tissue) if adjacency else None,
        source_dir=source_dir,
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


def _images(n_images: int, n_samples: int, pixel_size: float, tissue: Tissue) -> pd.DataFrame:
    ids = [f"img{i + 1}" for i in range(n_images)]
    frame = pd.DataFrame({
        "image_id": ids,
        "sample_id": [f"s{i % max(n_samples, 1) + 1}" for i in range(n_images)],
        "pixel_size": [float(pixel_size)] * n_images,
        "width_px": [int(np.ceil(tissue.width_um / pixel_size))] * n_images,
        "height_px": [int(np.ceil(tissue.height_um / pixel_size))] * n_images,
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


def _cells(image_of_cell: np.ndarray, images: pd.DataFrame, tissue: Tissue,
           region_layers: Sequence[str]) -> pd.DataFrame:
    n = image_of_cell.size
    ids = images["image_id"].to_numpy(dtype=object)
    samples = images["sample_id"].to_numpy(dtype=object)
    first_of_image = np.searchsorted(image_of_cell, np.arange(len(images)))
    local_index = np.arange(n) - first_of_image[image_of_cell] + 1 if n else np.zeros(0, dtype=int)
    frame = {
        "cell_id": local_index.astype(str).astype(object),
        "image_id": ids[image_of_cell],
        "sample_id": samples[image_of_cell],
        "x": tissue.x,
        "y": tissue.y,
        "area": tissue.area,
        "classification": np.asarray(CLASSES, dtype=object)[tissue.classes],
    }
    for depth, layer in enumerate(region_layers):
        distance = tissue.boundary_distance + depth * _LAYER_INSET_UM
        frame[f"region__{layer}"] = np.where(distance < 0, "tumor", "stroma").astype(object)
        frame[f"boundary_distance__{layer}"] = distance
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


def _contacts(cells: pd.DataFrame, tissue: Tissue) -> pd.DataFrame:
    """The adjacency table of :func:`cellspec_sc.model.tissue.contacts`, each pair in byte order of ids
    (compared by Arrow, which orders UTF-8 strings by their bytes)."""
    i, j, shared = contacts(tissue)
    ids = pa.array(cells["cell_id"])
    a, b = ids.take(pa.array(i)), ids.take(pa.array(j))
    swap = pc.greater(a, b)
    target = PANDAS_DTYPES["character"]
    frame = pd.DataFrame({
        "image_id": pd.Series(pa.array(cells["image_id"]).take(pa.array(i)), dtype=target),
        "cell_id_a": pd.Series(pc.if_else(swap, b, a), dtype=target),
        "cell_id_b": pd.Series(pc.if_else(swap, a, b), dtype=target),
        "shared_boundary": np.round(shared, 6),
        "method": pd.Series(["polygon_intersection"] * len(i), dtype=target),
    })
    return canonical_frame(frame, "adjacency")


# -- outlines -------------------------------------------------------------------------------------
def _outline_folder(outline_dir: str | os.PathLike | None) -> Path:
    if outline_dir is not None:
        folder = Path(outline_dir)
        folder.mkdir(parents=True, exist_ok=True)
        return folder.resolve()
    return scratch_folder("example-outlines")


def outline_features(cell_ids: np.ndarray, x_px: np.ndarray, y_px: np.ndarray, radius_px: np.ndarray,
                     turn: np.ndarray) -> list[dict]:
    """GeoJSON features: a regular polygon per cell (closed ring, pixels rounded to 1/1000).

    >>> f = outline_features(np.array(["1"]), np.array([10.0]), np.array([5.0]), np.array([2.0]), np.array([0.0]))
    >>> f[0]["id"], f[0]["geometry"]["coordinates"][0][0], len(f[0]["geometry"]["coordinates"][0])
    ('1', [12.0, 5.0], 17)
    """
    angles = turn[:, None] + np.linspace(0.0, 2 * np.pi, OUTLINE_VERTICES + 1)[None, :]
    angles[:, -1] = angles[:, 0]  # close each ring exactly
    ring = np.stack([x_px[:, None] + radius_px[:, None] * np.cos(angles),
                     y_px[:, None] + radius_px[:, None] * np.sin(angles)], axis=-1).round(3)
    return [{"type": "Feature", "id": cid, "properties": {"cell_id": cid},
             "geometry": {"type": "Polygon", "coordinates": [points]}}
            for cid, points in zip(cell_ids.tolist(), ring.tolist(), strict=True)]


def _write_outlines(seed: int, cells: pd.DataFrame, images: pd.DataFrame, tissue: Tissue,
                    folder: Path) -> pd.DataFrame:
    """Write ``outlines/<image_id>.geojson`` for every image under ``folder``; returns ``images`` with
    ``geometry_ref`` naming them."""
    turn = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_OUTLINE_SEED,))).uniform(
        0.0, 2 * np.pi / OUTLINE_VERTICES, len(cells))
    image_of_cell = cells["image_id"].to_numpy(dtype=object)
    refs = []
    for image_id, pixel_size in zip(images["image_id"], images["pixel_size"], strict=True):
        rows = image_of_cell == image_id
        features = outline_features(cells["cell_id"].to_numpy(dtype=str)[rows], tissue.x[rows] / pixel_size,
                                    tissue.y[rows] / pixel_size, tissue.radius[rows] / pixel_size, turn[rows])
        ref = f"outlines/{image_id}.geojson"
        (folder / "outlines").mkdir(parents=True, exist_ok=True)
        (folder / ref).write_text(json.dumps({"type": "FeatureCollection", "features": features}), encoding="utf-8")
        refs.append(ref)
    return canonical_frame(images.assign(geometry_ref=refs), "images")
