"""Images beside the cells: opening a slide-size OME-TIFF, the preview, a Luxar image layer and the SpatialData
image element, each beside the same work without the image (``python -m benchmarks.run --only image:``).

The input is its own slide: ``example(n_cells=n, n_images=1, image_dir=..., image_compression=None)``, all cells
in one image with its four channels (DAPI, CD3e, Pan-Cytokeratin, FOXP3) as an uncompressed, tiled, pyramidal
16-bit OME-TIFF (levels halving down to 256 pixels, in SubIFDs): at a million cells 31,402 x 23,520 pixels, 7.9 GB.
It is written once under the data root (``image-slide-<n>/``: the cellspec directory and the image) and reused.

Each side runs its operation once in its setup (untimed), so that neither times the import of the libraries it
uses (tifffile, zarr and dask for the image; matplotlib, luxar, spatialdata) or a first read of the file's
structure from disk. Every case but the hash hands the image over with ``verify=False``: checking the file's
SHA-256 reads all of it (its own row, beside ``hashlib`` over the same file), which a user pays once per file, not
per view.
"""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from .cases import Case, Env, Op, describe_object, sha256_bytes
from .data import scratch

REQUIRES = ("cellspec_sc.images", "tifffile")
IMAGE_ID = "img1"
FEATURE = "cell:CD3e:mean"
COMPOSITE = ["DAPI", "CD3e", "Pan-Cytokeratin"]
MB = 2**20
SLIDE = {"columns": 19}  # the example's default features: 4 markers x cell/nucleus x mean/median, 2 areas, 1 other


def warmed(op: Op) -> Op:
    """``op`` after one untimed run (its imports and first reads done)."""
    op.run(-1)
    if op.cleanup is not None:
        op.cleanup(-1)
    return op


def image_slide(env: Env) -> tuple[Path, Path]:
    """(cellspec directory, OME-TIFF) of ``env.n`` cells in one image, written once under the data root."""
    import cellspec_sc as cs

    root = Path(env.data) / f"image-slide-{env.n}"
    directory, image = root / "cells.cellspec", root / "images" / f"{IMAGE_ID}.ome.tiff"
    if not ((directory / "DONE").exists() and image.exists()):
        x = cs.example(seed=0, n_cells=env.n, n_images=1, image_dir=root / "images", image_compression=None)
        cs.write(x, directory, overwrite=True)
    return directory, image


def _loaded(env: Env) -> tuple[Any, Path]:
    import cellspec_sc as cs

    directory, image = image_slide(env)
    return cs.read(directory), image


def _facts(x: Any, image: Path) -> dict[str, Any]:
    return {**describe_object(x), "image_bytes": image.stat().st_size}


# -- open_image ----------------------------------------------------------------------------------
def open_ours(env: Env) -> Op:
    import cellspec_sc as cs

    _, image = image_slide(env)
    return warmed(Op(lambda i: cs.open_image(image), inspect=lambda _: {"image_bytes": image.stat().st_size}))


def open_baseline(env: Env) -> Op:
    import tifffile

    _, image = image_slide(env)

    def run(i: int) -> Any:
        with tifffile.TiffFile(image) as tif:
            return ET.fromstring(tif.ome_metadata)

    return warmed(Op(run))


# -- preview -------------------------------------------------------------------------------------
def _preview_op(env: Env, with_image: bool) -> Op:
    from cellspec_sc.widgets import preview

    x, image = _loaded(env)
    images = {IMAGE_ID: image} if with_image else None

    def run(i: int) -> Any:
        widget = preview(x, feature=FEATURE, images=images, verify=False)
        widget.select(panel="Channels")
        return widget.draw()

    return warmed(Op(run, inspect=lambda _: _facts(x, image)))


def preview_ours(env: Env) -> Op:
    return _preview_op(env, True)


def preview_baseline(env: Env) -> Op:
    return _preview_op(env, False)


def preview_goal(row: dict[str, Any]) -> bool:
    return row["ours_min_s"] < 5.0 and row["ours_peak_growth_bytes"] < 500 * MB


# -- Luxar ---------------------------------------------------------------------------------------
def _luxar_op(env: Env, with_image: bool) -> Op:
    import cellspec_sc as cs

    x, image = _loaded(env)
    layers = [f"feature:{FEATURE}"] + ([f"image:{','.join(COMPOSITE)}"] if with_image else [])
    images = {IMAGE_ID: image} if with_image else None
    out = scratch(env.work, f"luxar-image-{with_image}")

    def run(i: int) -> Path:
        return cs.to_luxar(x, out / f"out{i}.luxar.zarr", layers=layers, images=images, verify=False)

    return warmed(Op(run, cleanup=lambda i: shutil.rmtree(out / f"out{i}.luxar.zarr", ignore_errors=True),
                     inspect=lambda _: _facts(x, image)))


def luxar_ours(env: Env) -> Op:
    return _luxar_op(env, True)


def luxar_baseline(env: Env) -> Op:
    return _luxar_op(env, False)


def luxar_goal(row: dict[str, Any]) -> bool:
    return row["ours_peak_growth_bytes"] < 2048 * MB


# -- SpatialData ---------------------------------------------------------------------------------
def spatialdata_ours(env: Env) -> Op:
    import cellspec_sc as cs

    x, image = _loaded(env)
    return warmed(Op(lambda i: cs.to_spatialdata(x, images={IMAGE_ID: image}, verify=False),
                     inspect=lambda _: _facts(x, image)))


def spatialdata_baseline(env: Env) -> Op:
    import cellspec_sc as cs

    x, _ = _loaded(env)
    return warmed(Op(lambda i: cs.to_spatialdata(x)))


def image_adds_under(seconds: float):
    """The image's own share: ours minus the same call without the image, in seconds."""
    return lambda row: row["ours_min_s"] - row["baseline_min_s"] < seconds


# -- the SHA-256 check ---------------------------------------------------------------------------
def verify_ours(env: Env) -> Op:
    from cellspec_sc.images import checked_images

    x, image = _loaded(env)
    return warmed(Op(lambda i: checked_images(x, {IMAGE_ID: image}, verify=True),
                     inspect=lambda _: _facts(x, image)))


def verify_baseline(env: Env) -> Op:
    _, image = image_slide(env)
    return warmed(Op(lambda i: sha256_bytes(image)))


CASES = [
    Case("image: open_image (pyramidal OME-TIFF)", "tifffile.TiffFile + OME-XML parsed", open_ours, open_baseline,
         "< 0.5 s", lambda row: row["ours_min_s"] < 0.5, requires=REQUIRES, needs_slide=False,
         extra=SLIDE),
    Case("image: preview with it (Channels tab drawn)", "the same preview without the image", preview_ours,
         preview_baseline, "< 5 s, peak growth < 500 MB", preview_goal,
         requires=(*REQUIRES, "cellspec_sc.widgets"), needs_slide=False, extra=SLIDE),
    Case("image: to_luxar with an image layer", "the same scene without the image layer", luxar_ours, luxar_baseline,
         "peak growth < 2 GB", luxar_goal, requires=(*REQUIRES, "cellspec_sc.bridges.luxar"), needs_slide=False,
         extra=SLIDE),
    Case("image: to_spatialdata with it (lazy)", "to_spatialdata without the image", spatialdata_ours,
         spatialdata_baseline, "the image adds < 1 s", image_adds_under(1.0),
         requires=(*REQUIRES, "cellspec_sc.bridges.spatialdata"), needs_slide=False, extra=SLIDE),
    Case("image: SHA-256 check (verify=True)", "hashlib SHA-256 of the file", verify_ours, verify_baseline,
         "information", requires=REQUIRES, needs_slide=False,
         extra=SLIDE),
]
