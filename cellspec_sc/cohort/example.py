"""A small simulated cohort on disk: ``write_example_cohort(root, 3)`` writes three cellspec directories.

Each directory is :func:`cellspec_sc.example` with its own seed, its image and
sample ids prefixed by the directory name (image ids are unique across a
cohort), for docs, notebooks, tests and benchmarks.

>>> import tempfile, pathlib
>>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
>>> [p.name for p in paths]
['slide01', 'slide02']
>>> import cellspec_sc as cs
>>> sorted(cs.read(paths[1]).images["image_id"])
['slide02_img1', 'slide02_img2']

``samples`` names each directory's samples instead, one per image (ids such as
``"001"`` that an engine might read as a number):

>>> samples = [["001", "002"], ["010", "Zürich"]]
>>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20, samples=samples)
>>> cs.read(paths[1]).images[["image_id", "sample_id"]].values.tolist()
[['slide02_img1', '010'], ['slide02_img2', 'Zürich']]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cellspec_sc.io import write
from cellspec_sc.model import CellSpec, example

__all__ = ["prefixed", "with_samples", "write_example_cohort"]


def prefixed(x: CellSpec, prefix: str) -> CellSpec:
    """``x`` with ``prefix`` put before every image_id and sample_id (cells, images, channels)."""
    tables = {}
    for name in ("cells", "images", "channels"):
        frame = getattr(x, name).copy()
        for column in ("image_id", "sample_id"):
            if column in frame.columns:
                frame[column] = prefix + frame[column]
        tables[name] = frame
    return x.replace(**tables)


def with_samples(x: CellSpec, sample_ids: Sequence[str]) -> CellSpec:
    """Set the sample id of each image of ``x``, in the images and cells tables (and channels, where it has the column).

    Parameters
    ----------
    x
        The object to relabel.
    sample_ids
        The sample id of each image, in the order of ``x.images``.

    Returns
    -------
    CellSpec
        ``x`` with those sample ids.

    Raises
    ------
    ValueError
        If ``sample_ids`` does not have one id per image.
    """
    if len(sample_ids) != len(x.images):
        raise ValueError(f"{len(sample_ids)} sample ids for {len(x.images)} images")
    of_image = dict(zip(x.images["image_id"], sample_ids, strict=True))
    tables = {}
    for name in ("cells", "images", "channels"):
        frame = getattr(x, name).copy()
        if "sample_id" in frame.columns:
            frame["sample_id"] = frame["image_id"].map(of_image).astype(frame["sample_id"].dtype)
        tables[name] = frame
    return x.replace(**tables)


def write_example_cohort(root: str | Path, n_directories: int = 3, *, n_cells: int = 200, n_images: int = 2,
                         n_features: int | None = None, seed: int = 0,
                         samples: Sequence[Sequence[str]] | None = None, **options: Any) -> list[Path]:
    """Write ``n_directories`` simulated slides under ``root`` (``slide01``, ``slide02``, ...).

    Parameters
    ----------
    root
        The folder to write them in.
    n_directories
        How many slides.
    n_cells, n_images, n_features, seed
        Passed to :func:`cellspec_sc.example` (slide ``i`` uses seed ``seed + i``).
    samples
        Per directory, the sample id of each image (default: the simulator's, prefixed like the image ids).
    **options
        Passed to :func:`cellspec_sc.example`.

    Returns
    -------
    list of Path
        The paths of the cellspec directories written.

    Raises
    ------
    ValueError
        If ``samples`` does not give one entry per directory.
    """
    root = Path(root)
    if samples is not None and len(samples) != n_directories:
        raise ValueError(f"samples gives {len(samples)} directories' sample ids for {n_directories} directories")
    paths = []
    for i in range(1, n_directories + 1):
        name = f"slide{i:02d}"
        x = prefixed(example(seed + i, n_cells=n_cells, n_images=n_images, n_features=n_features, **options),
                     f"{name}_")
        if samples is not None:
            x = with_samples(x, samples[i - 1])
        paths.append(write(x, root / name))
    return paths
