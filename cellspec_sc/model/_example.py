"""Simulated example objects: the spec's example, and larger ones for tests and benchmarks.

The cells sit in a simulated tissue (below): tumour nests
in stroma, T cells and Tregs at the nest margins, markers that follow the cell
types, contacts and outlines from the cells' geometry.

>>> from cellspec_sc import example
>>> x = example()
>>> x.summary()["kinds"]
{'intensity': 16, 'shape': 2, 'other': 1}
>>> big = example(n_cells=10_000, n_features=200, adjacency=True, region_layers=("tissue",))
>>> big.measurements.shape
(10000, 200)

The simulated tissue section: where the example's cells sit, what they are and which ones touch.

Each image is a hexagonal grid of sites :data:`SITE_UM` apart (rows shifted by half
a step in turn); cells take most sites (in raster order, so cell ids follow the rows
of the image), each moved by a small jitter. A smooth random field, thresholded so that :data:`TUMOUR_FRACTION` of the
sites lie inside, draws irregular **tumour nests** in **stroma**; a second field
marks a few **lymphoid aggregates** in the stroma. A cell's class follows its
signed distance to the nest boundary (negative inside): tumour cells inside,
T cells and Tregs packed in a band just outside the nests (the invasive margin)
and in the aggregates, stromal cells elsewhere, a few lymphocytes everywhere.

Every cell is a regular polygon (:data:`OUTLINE_VERTICES` corners) of the cell's
area, never overlapping another: the circles around two neighbours' polygons
never overlap (r_i + r_j <= their distance). Two cells are in contact when those
circles, each grown by :data:`CONTACT_GAP_UM` / 2, overlap; the shared boundary
is the chord of that overlap. Everything is vectorised over cells (neighbours
are found as slices of the grid), so a million cells take about a second.

>>> import numpy as np
>>> t = simulate_tissue(np.random.default_rng(0), np.repeat([0, 1], 500))
>>> t.x.size, sorted(np.unique(t.classes).tolist())
(1000, [0, 1, 2, 3])
>>> bool(np.all(t.boundary_distance[t.classes == 0] < 15.0))  # tumour cells sit in (or at) the nests
True
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from scipy import fft, ndimage

from cellspec_sc._files import scratch_folder
from cellspec_sc.errors import argument_error, is_count, is_positive_number, needs_extra
from cellspec_sc.model._cellspec import CellSpec
from cellspec_sc.model._example_images import COMPRESSIONS as IMAGE_COMPRESSIONS
from cellspec_sc.model._example_images import write_example_images
from cellspec_sc.model._memory import empty_matrix
from cellspec_sc.model._ownership import sealed
from cellspec_sc.model._provenance import new_provenance
from cellspec_sc.spec import PANDAS_DTYPES, SPEC_VERSION, canonical_frame

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
    image_dir: str | os.PathLike | None = None,
    image_compression: str | None = "zlib",
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
    :mod:`cellspec_sc.model._example`); each name in ``region_layers`` adds
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

    ``image_dir`` also writes ``<image_id>.ome.tiff`` per image into that folder: each cell a disc of its area
    whose pixels in each channel hold its ``cell:<marker>:mean`` (16 bits, background 0), tiled, with a pyramid
    (:mod:`cellspec_sc.model._example_images`); ``images`` records each file's name and SHA-256. Open them with
    ``cs.open_image`` or hand them over as ``images={image_id: path}``. The files are drawn a strip at a time
    (memory stays at a few hundred MB whatever their size, with a progress bar on big ones);
    ``image_compression=None`` stores the pixels uncompressed, as many scanners do: a million cells in one
    image, ``example(n_cells=1_000_000, n_images=1, image_dir=..., image_compression=None)``, is an 8 GB slide.

    Parameters
    ----------
    seed
        The random seed: the same seed gives the same object.
    n_cells
        Cells in total, spread over the images.
    n_images
        Images (``img1``, ``img2``, ...).
    n_samples
        Samples (default: one per image).
    markers
        The markers measured (each in cell and nucleus, mean and median).
    n_features
        Features in total: markers ``M005``, ``M006``, ... are added until there are that many.
    pixel_size
        Micrometres per pixel of every image.
    adjacency
        Add the contacts of the cells' outlines.
    region_layers
        A ``region__<layer>`` and a ``boundary_distance__<layer>`` column for each name.
    lazy
        The measurements as a dask array simulated block by block (needs the ``[lazy]`` extra).
    outlines
        Write each image's cell outlines as GeoJSON and name them in ``images.geometry_ref``.
    outline_dir
        Where the outlines go (default: a temporary folder removed when Python exits).
    image_dir
        Also write an OME-TIFF per image into this folder (needs the ``[images]`` extra).
    image_compression
        ``"zlib"`` (the default) or None: how the image files store their tiles.

    Returns
    -------
    CellSpec
        A valid object.

    Raises
    ------
    MissingExtraError
        ``lazy=True`` without the ``[lazy]`` extra.

    Examples
    --------
    >>> x = example(n_cells=500, n_images=3, adjacency=True, seed=1)
    >>> x.n_cells, sorted(x.images["image_id"])
    (500, ['img1', 'img2', 'img3'])
    """
    _check_arguments(seed=seed, n_cells=n_cells, n_images=n_images, n_samples=n_samples, markers=markers,
                     n_features=n_features, pixel_size=pixel_size, region_layers=region_layers,
                     flags={"adjacency": adjacency, "lazy": lazy, "outlines": outlines},
                     image_compression=image_compression)
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
    if image_dir is not None:
        channels = _channels(images, markers)
        identity = "cellspec_sc-example/" + json.dumps(parameters, sort_keys=True)
        with needs_extra("images", "cellspec_sc.example(image_dir=...)"):
            images = _write_images(Path(image_dir), cells, images, channels, dictionary, measurements, identity,
                                   image_compression)
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


def _check_arguments(*, seed: Any, n_cells: Any, n_images: Any, n_samples: Any, markers: Any, n_features: Any,
                     pixel_size: Any, region_layers: Any, flags: dict[str, Any], image_compression: Any) -> None:
    """Refuse an argument :func:`example` cannot simulate, naming it (an InputError, so also a ValueError)."""
    bad = [(name, value, expected) for name, value, expected, ok in (
        ("seed", seed, "an integer >= 0", is_count(seed)),
        ("n_cells", n_cells, "an integer >= 0", is_count(n_cells)),
        ("n_images", n_images, "an integer >= 1 (0 only with n_cells=0)",
         is_count(n_images, 1) or (n_images == 0 and n_cells == 0 and is_count(n_images))),
        ("n_samples", n_samples, "None or an integer from 1 to n_images",
         n_samples is None or (is_count(n_samples, 1) and is_count(n_images) and n_samples <= n_images)),
        ("markers", markers, "a list of distinct non-empty marker names without ':'",
         _are_names(markers) and len(set(markers)) == len(markers) and not any(":" in m for m in markers)),
        ("n_features", n_features, "None or an integer >= 3 (the two areas and the detection probability)",
         n_features is None or is_count(n_features, 3)),
        ("pixel_size", pixel_size, "a finite number of micrometres per pixel above 0", is_positive_number(pixel_size)),
        ("region_layers", region_layers, "a list of distinct non-empty layer names",
         _are_names(region_layers) and len(set(region_layers)) == len(region_layers)),
        *((name, value, "True or False", isinstance(value, (bool, np.bool_))) for name, value in flags.items()),
        ("image_compression", image_compression, "'zlib' or None", image_compression in IMAGE_COMPRESSIONS),
    ) if not ok]
    if bad:
        raise argument_error("example", *bad[0])


def _are_names(values: Any) -> bool:
    return not isinstance(values, (str, bytes)) and isinstance(values, Sequence) and \
        all(isinstance(v, str) and v.strip() for v in values)


def _write_images(folder: Path, cells: pd.DataFrame, images: pd.DataFrame, channels: pd.DataFrame,
                  dictionary: pd.DataFrame, measurements: np.ndarray, identity: str,
                  image_compression: str | None) -> pd.DataFrame:
    features = dictionary["feature_id"].tolist()
    markers = channels.drop_duplicates("channel_index").sort_values("channel_index")["marker"].astype(str)
    values = np.zeros((len(cells), len(markers)))
    for k, marker in enumerate(markers):
        if (feature := f"cell:{marker}:mean") in features:
            values[:, k] = np.asarray(measurements[:, features.index(feature)])
    radius = np.sqrt(cells["area"].to_numpy(np.float64) / np.pi)
    images = write_example_images(folder, cells, images, channels, radius, values, identity, image_compression)
    return canonical_frame(images, "images")


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
        with needs_extra("lazy", "cellspec_sc.example(lazy=True)"):
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
               for m, c, s in zip(dictionary["marker"], dictionary["compartment"], dictionary["statistic"],
                                  strict=True)]
    return np.column_stack(columns) if columns else np.zeros((len(CLASSES), 0))


def _contacts(cells: pd.DataFrame, tissue: Tissue) -> pd.DataFrame:
    """The adjacency table of :func:`cellspec_sc.model._example.contacts`, each pair in byte order of ids
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


CLASSES = ("Tumor", "T cell", "Treg", "Stroma")
SITE_UM = 14.0  # distance between neighbouring sites: one cell per ~170 um2, a packed tissue
ROW_UM = SITE_UM * np.sqrt(3) / 2
JITTER = 0.15  # largest move of a cell from its site along x and y, in steps
FIELD_STEP_UM = 10.0  # resolution of the fields that draw nests and aggregates
OCCUPANCY = 0.92  # fraction of sites holding a cell; the rest are small gaps
TUMOUR_FRACTION = 0.42  # fraction of the sites inside nests
NEST_LENGTH_UM = 40.0  # correlation length of the nest field: nests some 100-250 um across
AGGREGATE_LENGTH_UM = 30.0
AGGREGATE_FRACTION = 0.04  # top of the aggregate field, kept where it lies in stroma
MARGIN_UM = (8.0, 10.0)  # centre and width of the immune band outside the nests
CONTACT_GAP_UM = 4.0
OUTLINE_VERTICES = 16
# Mean whole-cell area per class (um2), before the room around each cell caps it.
CLASS_AREA_UM2 = (170.0, 60.0, 65.0, 120.0)
_FRAME_ASPECT = 4 / 3
# Two cells whose sites are not neighbours in the 3 x 3 block of (column, row) are at least
# (1.5 - 2 * JITTER) steps apart (1.5: two columns less the half-step shift of a row).
_FAR_STEPS = 1.5 - 2 * JITTER


@dataclass
class Tissue:
    """Per cell (in image order): centroid (um), class index into :data:`CLASSES`, area (um2),
    outline circumradius (um), signed distance to the nest boundary (um, negative inside);
    per image: the frame (um); and the grid sites the cells occupy (for contacts)."""

    x: np.ndarray
    y: np.ndarray
    classes: np.ndarray
    area: np.ndarray
    radius: np.ndarray
    boundary_distance: np.ndarray
    width_um: float
    height_um: float
    site: np.ndarray  # global site number: image * nx * ny + row * nx + column
    grid: tuple[int, int]  # (nx, ny) sites per image


def frame_sites(cells_per_image: int) -> tuple[int, int]:
    """(columns, rows) of the grid of one image: enough sites for its cells at :data:`OCCUPANCY`, about 4:3.

    >>> frame_sites(40)
    (8, 6)
    """
    sites = max(1, int(np.ceil(cells_per_image / OCCUPANCY)))
    nx = max(1, int(np.ceil(np.sqrt(sites * _FRAME_ASPECT * ROW_UM / SITE_UM))))
    return nx, max(1, int(np.ceil(sites / nx)))


def simulate_tissue(rng: np.random.Generator, image_of_cell: np.ndarray) -> Tissue:
    """Lay out the cells of every image (``image_of_cell``: sorted image index per cell)."""
    n_images = int(image_of_cell.max()) + 1 if image_of_cell.size else 0
    counts = np.bincount(image_of_cell, minlength=n_images)
    nx, ny = frame_sites(int(counts.max()) if counts.size else 0)
    parts = [_image_cells(rng, int(count), nx, ny) for count in counts]
    site = np.concatenate([p[0] + i * nx * ny for i, p in enumerate(parts)]) if parts else np.zeros(0, np.int64)
    x, y, distance, classes = (np.concatenate([p[k] for p in parts]) if parts else np.zeros(0)
                               for k in range(1, 5))
    classes = classes.astype(np.int64)
    radius = _outline_radius(rng, classes, site, x, y, (nx, ny))
    return Tissue(x=x, y=y, classes=classes, area=polygon_area(radius), radius=radius,
                  boundary_distance=distance, width_um=(nx + 0.5) * SITE_UM, height_um=ny * ROW_UM,
                  site=site, grid=(nx, ny))


def _image_cells(rng: np.random.Generator, count: int, nx: int, ny: int) -> tuple[np.ndarray, ...]:
    """(site, x, y, signed nest distance, class) of the ``count`` cells of one image."""
    site = np.sort(rng.choice(nx * ny, size=count, replace=False))
    column, row = site % nx, site // nx
    x = (column + 0.5 + 0.5 * (row % 2) + rng.uniform(-JITTER, JITTER, count)) * SITE_UM
    y = (row + 0.5) * ROW_UM + rng.uniform(-JITTER, JITTER, count) * SITE_UM
    shape = (int(np.ceil(ny * ROW_UM / FIELD_STEP_UM)) + 1, int(np.ceil((nx + 0.5) * SITE_UM / FIELD_STEP_UM)) + 1)
    fx, fy = x / FIELD_STEP_UM, y / FIELD_STEP_UM
    nests = smooth_field(rng, shape, NEST_LENGTH_UM / FIELD_STEP_UM)
    inside = nests > np.quantile(nests, 1.0 - TUMOUR_FRACTION)
    distance = bilinear(signed_distance(inside) * FIELD_STEP_UM, fx, fy)
    aggregates = smooth_field(rng, shape, AGGREGATE_LENGTH_UM / FIELD_STEP_UM)
    in_aggregate = bilinear(aggregates, fx, fy) > np.quantile(aggregates, 1.0 - AGGREGATE_FRACTION)
    in_aggregate &= distance > 3 * SITE_UM
    classes = draw_classes(rng, distance, in_aggregate)
    return site, x, y, distance, classes


def smooth_field(rng: np.random.Generator, shape: tuple[int, int], length: float) -> np.ndarray:
    """A Gaussian random field on a grid of ``shape`` (rows, columns) with correlation length ``length``
    (grid steps).

    White noise filtered in Fourier space on a grid padded by 4 lengths (and to at least 64
    sites), so the periodic result does not wrap around inside the frame.
    """
    ny, nx = shape
    pad = int(np.ceil(4 * length))
    py, px = fft.next_fast_len(max(ny + pad, 64), real=True), fft.next_fast_len(max(nx + pad, 64), real=True)
    spectrum = fft.rfft2(rng.standard_normal((py, px)))
    ky, kx = fft.fftfreq(py), fft.rfftfreq(px)
    spectrum *= np.exp(-2.0 * (np.pi * length) ** 2 * (ky[:, None] ** 2 + kx[None, :] ** 2))
    return fft.irfft2(spectrum, s=(py, px))[:ny, :nx]


def signed_distance(inside: np.ndarray) -> np.ndarray:
    """Distance (sites) from each site to the boundary between inside and outside sites, negative
    inside; the boundary lies half a step from the sites on either side.

    >>> signed_distance(np.array([[True, True, False, False]])).tolist()
    [[-1.5, -0.5, 0.5, 1.5]]
    """
    if inside.all() or not inside.any():  # no boundary in the frame: as far as the frame is wide
        far = float(np.hypot(*inside.shape))
        return np.full(inside.shape, -far if inside.all() else far)
    return np.where(inside, 0.5 - ndimage.distance_transform_edt(inside),
                    ndimage.distance_transform_edt(~inside) - 0.5)


def bilinear(values: np.ndarray, gx: np.ndarray, gy: np.ndarray) -> np.ndarray:
    """``values`` (rows x columns, one per site) interpolated at grid positions (gx, gy).

    >>> bilinear(np.array([[0.0, 2.0], [4.0, 6.0]]), np.array([0.5, 1.0]), np.array([0.5, 0.0])).tolist()
    [3.0, 2.0]
    """
    ny, nx = values.shape
    gx, gy = np.clip(gx, 0, nx - 1), np.clip(gy, 0, ny - 1)
    x0, y0 = np.minimum(gx.astype(np.int64), max(nx - 2, 0)), np.minimum(gy.astype(np.int64), max(ny - 2, 0))
    x1, y1 = np.minimum(x0 + 1, nx - 1), np.minimum(y0 + 1, ny - 1)
    fx, fy = gx - x0, gy - y0
    top = values[y0, x0] * (1 - fx) + values[y0, x1] * fx
    bottom = values[y1, x0] * (1 - fx) + values[y1, x1] * fx
    return top * (1 - fy) + bottom * fy


def class_weights(distance: np.ndarray, in_aggregate: np.ndarray) -> np.ndarray:
    """Relative chance of each class (columns follow :data:`CLASSES`) at a signed nest distance (um).

    >>> w = class_weights(np.array([-50.0, 8.0, 200.0]), np.array([False, False, False]))
    >>> [CLASSES[i] for i in w.argmax(axis=1)]
    ['Tumor', 'T cell', 'Stroma']
    """
    nest = 1.0 / (1.0 + np.exp(np.clip(distance / 3.0, -50, 50)))
    outside = 1.0 - nest
    margin = np.exp(-0.5 * ((distance - MARGIN_UM[0]) / MARGIN_UM[1]) ** 2) * outside
    aggregate = in_aggregate.astype(np.float64)
    return np.column_stack([
        0.93 * nest,
        0.05 * nest + 0.06 * outside + 2.0 * margin + 3.0 * aggregate,
        0.02 * nest + 0.01 * outside + 0.35 * margin + 0.4 * aggregate,
        0.90 * outside * (1.0 - aggregate),
    ])


def draw_classes(rng: np.random.Generator, distance: np.ndarray, in_aggregate: np.ndarray) -> np.ndarray:
    """One class per cell, drawn with :func:`class_weights`."""
    cumulative = np.cumsum(class_weights(distance, in_aggregate), axis=1)
    u = rng.random(distance.size) * cumulative[:, -1]
    return (u[:, None] >= cumulative[:, :-1]).sum(axis=1)


# -- outlines and contacts ----------------------------------------------------------------------
def polygon_area(radius: np.ndarray) -> np.ndarray:
    """Area of the regular :data:`OUTLINE_VERTICES`-gon of this circumradius."""
    n = OUTLINE_VERTICES
    return 0.5 * n * np.sin(2 * np.pi / n) * np.asarray(radius) ** 2


def _outline_radius(rng: np.random.Generator, classes: np.ndarray, site: np.ndarray, x: np.ndarray,
                    y: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """Circumradius of each outline: the class's lognormal area, capped so that no two outlines overlap.

    For each neighbour j at distance d, cell i may reach ``max(d / 2, d - wanted_j)``: two big cells
    share the space, a small cell leaves the rest to its neighbour, and either way r_i + r_j <= d.
    The cap ``_FAR_STEPS * SITE_UM / 2 - CONTACT_GAP_UM / 2`` keeps cells outside each other's 3 x 3
    block of sites from touching, so contacts are found among the 8 neighbouring sites.
    """
    area = np.asarray(CLASS_AREA_UM2)[classes] * rng.lognormal(0.0, 0.25, classes.size)
    wanted = np.minimum(np.sqrt(area / polygon_area(1.0)), _FAR_STEPS * SITE_UM / 2 - CONTACT_GAP_UM / 2)
    on_sites = SiteGrid(site, grid)
    gx, gy, gw = on_sites.spread(x), on_sites.spread(y), on_sites.spread(wanted)
    radius = gw.copy()
    for here, there in on_sites.neighbour_slices(_NEIGHBOURS):
        d = np.hypot(gx[here] - gx[there], gy[here] - gy[there])  # NaN where either site is empty
        radius[here] = np.fmin(radius[here], np.fmax(d / 2, d - gw[there]))
    return on_sites.gather(radius)


# Offsets (columns, rows) to the 8 neighbouring sites; the first 4 reach each neighbouring pair once.
_FORWARD = ((1, 0), (-1, 1), (0, 1), (1, 1))
_NEIGHBOURS = _FORWARD + tuple((-dx, -dy) for dx, dy in _FORWARD)


class SiteGrid:
    """Per-cell values laid out on the (image, row, column) sites, so neighbours are array slices.

    >>> g = SiteGrid(np.array([0, 1, 3]), (2, 2))
    >>> g.spread(np.array([1.0, 2.0, 3.0])).tolist()
    [[[1.0, 2.0], [nan, 3.0]]]
    """

    def __init__(self, site: np.ndarray, grid: tuple[int, int]):
        nx, ny = grid
        self.site, self.shape = site, (int(site.max()) // (nx * ny) + 1 if site.size else 0, ny, nx)

    def spread(self, values: np.ndarray) -> np.ndarray:
        out = np.full(int(np.prod(self.shape)), np.nan)
        out[self.site] = values
        return out.reshape(self.shape)

    def gather(self, on_sites: np.ndarray) -> np.ndarray:
        return on_sites.reshape(-1)[self.site]

    def neighbour_slices(self, offsets: tuple[tuple[int, int], ...]) -> Iterator[tuple[tuple, tuple]]:
        """(here, there): index tuples of the sites and of their neighbours at each offset."""
        _, ny, nx = self.shape
        for dx, dy in offsets:
            rows, columns = slice(max(0, -dy), ny - max(0, dy)), slice(max(0, -dx), nx - max(0, dx))
            moved = slice(rows.start + dy, rows.stop + dy), slice(columns.start + dx, columns.stop + dx)
            yield (slice(None), rows, columns), (slice(None), *moved)

    def cell_of_sites(self) -> np.ndarray:
        owner = np.full(int(np.prod(self.shape)), -1, dtype=np.int64)
        owner[self.site] = np.arange(self.site.size)
        return owner.reshape(self.shape)


def contacts(t: Tissue) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, shared boundary um) of every pair of cells whose outlines, each grown by half the contact
    gap, overlap; the shared boundary is the chord of the two grown circles."""
    on_sites = SiteGrid(t.site, t.grid)
    gx, gy, gr = on_sites.spread(t.x), on_sites.spread(t.y), on_sites.spread(t.radius + CONTACT_GAP_UM / 2)
    owner = on_sites.cell_of_sites()
    firsts, seconds = [], []
    for here, there in on_sites.neighbour_slices(_FORWARD):
        d = np.hypot(gx[here] - gx[there], gy[here] - gy[there])
        touching = d < gr[here] + gr[there]  # False where a site is empty (NaN)
        firsts.append(owner[here][touching])
        seconds.append(owner[there][touching])
    i, j = np.concatenate(firsts), np.concatenate(seconds)
    d = np.hypot(t.x[i] - t.x[j], t.y[i] - t.y[j])
    a, b = t.radius[i] + CONTACT_GAP_UM / 2, t.radius[j] + CONTACT_GAP_UM / 2
    product = (-d + a - b) * (-d - a + b) * (-d + a + b) * (d + a + b)
    return i, j, np.sqrt(np.clip(product, 0.0, None)) / d
