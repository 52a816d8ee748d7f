"""``Cohort.summary``: per (image_id, feature_id) statistics computed on the workers.

Columns: ``directory, image_id, feature_id, n, na, mean, sd, min, q01, q25,
median, q75, q99, max``. ``n`` counts values, ``na`` missing ones; ``sd`` is
the sample standard deviation (``ddof=1``); quantiles use numpy's default
(linear interpolation, ``method="linear"``). **Every statistic is exact**: a
task holds one feature batch of one directory (all its cells, about
:data:`BATCH_BYTES` of values; at least one feature), so each image's values
of a feature are all in one task, and nothing is estimated. Memory per task is
at most about three batches (the values, the copy sorted by image, numpy's
partition workspace): ~200 MB, whatever the cohort's size. Every file is hashed
once on the workers; a directory that fails (or changed) is named in a
:class:`~cellspec_sc.cohort.failures.CohortError` whose ``result`` holds the
summary of the others.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> from cellspec_sc.cohort.example import write_example_cohort
>>> c = cs.open_cohort(write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20))
>>> s = c.summary()
>>> len(s) == len(c.images) * len(c.feature_ids), list(s.columns[:5])
(True, ['directory', 'image_id', 'feature_id', 'n', 'na'])
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import dask
import numpy as np
import pandas as pd

from cellspec_sc.cohort.failures import CohortError, Failure, guarded
from cellspec_sc.cohort.members import Member, verify_member
from cellspec_sc.cohort.parts import cells_table, feature_block
from cellspec_sc.cohort.run import run
from cellspec_sc.model.memory import empty_matrix

if TYPE_CHECKING:
    from cellspec_sc.cohort.cohort import Cohort

BATCH_BYTES = 1 << 26  # 64 MB of values per task
QUANTILES = {"q01": 0.01, "q25": 0.25, "median": 0.5, "q75": 0.75, "q99": 0.99}
STATISTICS = ("n", "na", "mean", "sd", "min", *QUANTILES, "max")
COLUMNS = ("directory", "image_id", "feature_id", *STATISTICS)


def feature_batches(features: list[str], n_cells: int, budget: int = BATCH_BYTES) -> list[list[str]]:
    """Features in groups of about ``budget`` bytes of values for ``n_cells`` cells (at least one each).

    >>> feature_batches(["a", "b", "c"], 1_000_000, 16_000_000)
    [['a', 'b'], ['c']]
    """
    step = max(1, budget // max(8 * n_cells, 1))
    return [features[i:i + step] for i in range(0, len(features), step)]


def image_codes(member: Member) -> np.ndarray:
    """Position of each kept cell's image in ``member.images`` (-1: NA or not in the images table)."""
    ids = [cells_table(member, p, ["image_id"]).column("image_id").to_numpy(zero_copy_only=False)
           for p in member.parts]
    values = np.concatenate(ids) if ids else np.array([], dtype=object)
    known = pd.Index(member.images["image_id"].astype(object))
    return known.get_indexer(values)


def batch_statistics(member: Member, features: list[str]) -> dict[str, np.ndarray]:
    """{statistic: images x features array} for one feature batch of one member."""
    codes = image_codes(member)
    values = empty_matrix(member.n_cells, len(features))
    for part, start in zip(member.parts, member.offsets, strict=True):
        values[start:start + part.kept] = feature_block(member, part, features)
    order = np.argsort(codes, kind="stable")
    ordered = values[order]
    del values
    bounds = np.searchsorted(codes[order], np.arange(len(member.images) + 1))
    stats = {s: np.full((len(member.images), len(features)), np.nan) for s in STATISTICS}
    for i in range(len(member.images)):
        _image_statistics(ordered[bounds[i]:bounds[i + 1]], stats, i)
    return stats


def _image_statistics(block: np.ndarray, stats: dict[str, np.ndarray], i: int) -> None:
    present = np.count_nonzero(~np.isnan(block), axis=0)
    stats["n"][i], stats["na"][i] = present, block.shape[0] - present
    if not present.any():
        return
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NA columns give NaN, as they should
        stats["mean"][i] = np.nanmean(block, axis=0)
        stats["sd"][i] = np.nanstd(block, axis=0, ddof=1)
        stats["min"][i], stats["max"][i] = np.nanmin(block, axis=0), np.nanmax(block, axis=0)
        quantiles = np.nanquantile(block, list(QUANTILES.values()), axis=0)
    for name, row in zip(QUANTILES, quantiles, strict=True):
        stats[name][i] = row


def member_frame(member: Member, checked: None, batches: list[dict[str, np.ndarray]],
                 features: list[str]) -> pd.DataFrame:
    """The member's summary rows (images x features, image-major) from its batch results."""
    n_images = len(member.images)
    columns: dict[str, Any] = {
        "directory": np.full(n_images * len(features), member.label, dtype=object),
        "image_id": np.repeat(member.images["image_id"].astype(object).to_numpy(), len(features)),
        "feature_id": np.tile(np.array(features, dtype=object), n_images)}
    for s in STATISTICS:
        joined = np.concatenate([b[s] for b in batches], axis=1) if batches else np.empty((n_images, 0))
        columns[s] = joined.reshape(-1)
    frame = pd.DataFrame(columns)
    frame[["n", "na"]] = frame[["n", "na"]].astype(np.int64)
    return frame


def summarize(cohort: Cohort, *, client: Any = None, progress: bool | None = None) -> pd.DataFrame:
    """See the module docstring."""
    features = cohort.feature_ids
    tasks = []
    for m in cohort.members:
        checked = dask.delayed(guarded(verify_member), pure=False)(m)
        batches = [dask.delayed(guarded(batch_statistics), pure=False)(m, b)
                   for b in feature_batches(features, m.n_cells)]
        tasks.append(dask.delayed(guarded(member_frame), pure=False)(m, checked, batches, features))
    results = run(tasks, cohort.directories, "summarizing", client=client, progress_bar=progress)
    frames = [r for r in results if not isinstance(r, Failure)]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(COLUMNS))
    for column in ("directory", "image_id", "feature_id"):
        frame[column] = frame[column].astype("string")
    failures = [r for r in results if isinstance(r, Failure)]
    if failures:
        raise CohortError(f"summary: {len(failures)} of {len(results)} directories failed (the others' summary "
                          "is in .result)", failures, frame)
    return frame
