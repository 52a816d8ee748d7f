"""``Cohort.summary``: per (image_id, feature_id) statistics computed on the workers.

Columns: ``directory, image_id, feature_id, n, na, mean, sd, min, q01, q25,
median, q75, q99, max``. ``n`` counts values, ``na`` missing ones; ``sd`` is
the sample standard deviation (``ddof=1``); quantiles use numpy's default
(linear interpolation, ``method="linear"``). **Every statistic is exact**: a
directory's features are read in batches (all its cells, about
:data:`BATCH_BYTES` of values; at least one feature), so each image's values
of a feature are all in one batch, and nothing is estimated: each statistic
equals numpy's on that image's values of the feature (NaN dropped, cells in
file order), bit for bit (:func:`column_statistics`).

A batch is held column-major, so each feature's values are contiguous; when
the cells of an image are not one run in the cells table, each column is
reordered by image in a buffer of its own. Every statistic of an (image,
feature) column is then taken from that column while it is in the cache, into
reused buffers. Memory per task: one batch at a time, plus 8 bytes per cell
for the image codes, three columns of the largest image (:class:`Scratch`)
and, for interleaved images, 16 bytes per cell (the order and the reordered
column): about 25 MB for 250,000 cells, whatever the cohort's size.

A directory is one task: its files hashed (each once), then its batches in
turn (:func:`member_task`); only when there are fewer than two directories per
worker thread is a directory split into tasks of batches. A directory that
fails (or changed) is named in a
:class:`~cellspec_sc.cohort.CohortError` whose ``result`` holds the
summary of the others.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> from cellspec_sc.cohort.example import write_example_cohort
>>> c = cs.open_cohort(write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20))
>>> s = c.summary()
>>> len(s) == len(c.images) * len(c.feature_ids), list(s.columns[:5])
(True, ['directory', 'image_id', 'feature_id', 'n', 'na'])
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import dask
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc.cohort._members import Member, cells_table, feature_block, verified, verify_member
from cellspec_sc.cohort._run import CohortError, Failure, guarded, run, worker_threads
from cellspec_sc.model import empty_matrix

if TYPE_CHECKING:
    from cellspec_sc.cohort._cohort import Cohort

# 16 MB of values per feature batch: two workers' batches stay in the shared cache between decoding and the
# statistics; with 64 MB batches each round trip went through memory, and two workers slowed each other
# (worker CPU 8-17 % higher with 2 workers than with 1, against 1-5 % with 16 MB; 8 directories x 250,000 cells)
BATCH_BYTES = 1 << 24
QUANTILES = {"q01": 0.01, "q25": 0.25, "median": 0.5, "q75": 0.75, "q99": 0.99}
STATISTICS = ("n", "na", "mean", "sd", "min", *QUANTILES, "max")
_LEVELS = np.array(list(QUANTILES.values()))
COLUMNS = ("directory", "image_id", "feature_id", *STATISTICS)


def feature_batches(features: list[str], n_cells: int, budget: int | None = None) -> list[list[str]]:
    """Features in groups of about ``budget`` (default :data:`BATCH_BYTES`) bytes of values for ``n_cells``
    cells (at least one each).

    >>> feature_batches(["a", "b", "c"], 1_000_000, 16_000_000)
    [['a', 'b'], ['c']]
    """
    step = max(1, (BATCH_BYTES if budget is None else budget) // max(8 * n_cells, 1))
    return [features[i:i + step] for i in range(0, len(features), step)]


def image_codes(member: Member) -> np.ndarray:
    """Position of each kept cell's image in ``member.images`` (-1: NA or not in the images table), found by
    Arrow's hashing (no Python string per cell)."""
    known = pa.array(member.images["image_id"].astype(object), pa.string())
    codes = [pc.index_in(cells_table(member, p, ["image_id"]).column("image_id").cast(pa.string()), value_set=known,
                         skip_nulls=True).fill_null(-1).to_numpy() for p in member.parts]
    return np.concatenate(codes).astype(np.int64, copy=False) if codes else np.zeros(0, dtype=np.int64)


def image_spans(codes: np.ndarray, n_images: int) -> tuple[np.ndarray | None, np.ndarray]:
    """(order, spans): the rows of image ``i`` are ``order[spans[i, 0]:spans[i, 1]]``. When each image's
    cells are one run (cells grouped by image, the usual layout) ``order`` is None and the spans index the
    rows themselves, so the values need no reordering.

    >>> image_spans(np.array([1, 1, 0, 0, 0]), 3)[0] is None, image_spans(np.array([1, 1, 0, 0, 0]), 3)[1].tolist()
    (True, [[2, 5], [0, 2], [0, 0]])
    >>> order, spans = image_spans(np.array([0, 1, -1, 0]), 2)
    >>> order.tolist(), spans.tolist()
    ([2, 0, 3, 1], [[1, 3], [3, 4]])
    """
    spans = np.zeros((n_images, 2), dtype=np.int64)
    if not codes.size:
        return None, spans
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    stops = np.r_[starts[1:], codes.size]
    run_codes = codes[starts]
    imaged = run_codes >= 0
    if np.unique(run_codes[imaged]).size == np.count_nonzero(imaged):
        spans[run_codes[imaged]] = np.column_stack([starts[imaged], stops[imaged]])
        return None, spans
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(n_images + 1))
    return order, np.column_stack([bounds[:-1], bounds[1:]])


def batch_columns(member: Member, features: list[str], out: np.ndarray | None = None) -> np.ndarray:
    """The member's cells x ``features`` as float64, each feature's values contiguous (column-major), in the
    first columns of ``out`` (column-major, cells x at least len(features)) when given."""
    values = empty_matrix(member.n_cells, len(features), order="F") if out is None else out[:, :len(features)]
    for part, start in zip(member.parts, member.offsets, strict=True):
        feature_block(member, part, features, out=values[start:start + part.kept])
    return values


class Scratch:
    """Buffers :func:`column_statistics` reuses for columns of up to ``n`` values: no new memory per column
    (on a dask worker, where the nanny sets ``MALLOC_TRIM_THRESHOLD_``, every large temporary array is new
    pages from the kernel, faulted and zeroed: that cost more than the statistics themselves)."""

    def __init__(self, n: int):
        self.missing = np.empty(n, dtype=bool)
        self.present = np.empty(n)
        self.work = np.empty(n)


def column_statistics(values: np.ndarray, scratch: Scratch | None = None) -> np.ndarray:
    """The :data:`STATISTICS` of one contiguous 1-D column, NaN as missing: equal, bit for bit, to numpy's
    ``mean``, ``std(ddof=1)``, ``min``, ``quantile`` and ``max`` of the values that are not NaN, in their
    order (a single value has sd NaN; no value, every statistic but n and na NaN).

    >>> column_statistics(np.array([4.0, np.nan, 1.0, 2.0, 3.0])).round(4).tolist()
    [4.0, 1.0, 2.5, 1.291, 1.0, 1.03, 1.75, 2.5, 3.25, 3.97, 4.0]
    """
    scratch = scratch or Scratch(values.size)
    out = np.full(len(STATISTICS), np.nan)
    missing = np.isnan(values, out=scratch.missing[:values.size])
    na = int(np.count_nonzero(missing))
    n = values.size - na
    if na:
        values = np.compress(np.logical_not(missing, out=missing), values, out=scratch.present[:n])
    out[0], out[1] = n, na
    if not n:
        return out
    work = scratch.work[:n]
    # numpy's own steps for mean and var (numpy/_core/_methods.py), with the deviations in reused memory
    with np.errstate(all="ignore"):  # overflow to inf, inf - inf, one value's 0 / 0: NaN or inf, as in numpy
        mean = np.add.reduce(values) / n
        np.square(np.subtract(values, mean, out=work), out=work)
        out[2], out[3] = mean, np.sqrt(np.add.reduce(work) / (n - 1))
        out[4], out[-1] = values.min(), values.max()
        np.copyto(work, values)
        work.sort()  # numpy's quantile partitions; sorted values take one cheap pass, and the sort is SIMD-fast
        out[5:-1] = np.quantile(work, _LEVELS, overwrite_input=True)
    return out


class Workspace:
    """What the feature batches of one member share in a task: where each image's cells are
    (:func:`image_spans`, read once) and the memory the batches and their statistics reuse (on a dask
    worker new memory is new pages from the kernel, faulted and zeroed)."""

    def __init__(self, member: Member, width: int):
        self.n_images = len(member.images)
        self.order, self.spans = image_spans(image_codes(member), self.n_images)
        self.values = empty_matrix(member.n_cells, width, order="F")
        self.scratch = Scratch(int((self.spans[:, 1] - self.spans[:, 0]).max(initial=0)))
        self.gathered = None if self.order is None else np.empty(self.order.size)

    def columns(self, values: np.ndarray) -> Iterator[np.ndarray]:
        """Each column of ``values`` (column-major), its cells in image order."""
        for j in range(values.shape[1]):  # mode="clip": with "raise", take would copy through a buffer of its own
            yield values[:, j] if self.order is None else np.take(values[:, j], self.order, out=self.gathered,
                                                                   mode="clip")


def batch_statistics(member: Member, features: list[str], workspace: Workspace | None = None) -> dict[str, np.ndarray]:
    """{statistic: images x features array} for one feature batch of one member."""
    workspace = workspace or Workspace(member, len(features))
    stats = np.full((len(STATISTICS), workspace.n_images, len(features)), np.nan)
    for j, column in enumerate(workspace.columns(batch_columns(member, features, workspace.values))):
        for i, (a, b) in enumerate(workspace.spans):
            stats[:, i, j] = column_statistics(column[a:b], workspace.scratch)
    return dict(zip(STATISTICS, stats, strict=True))


def batches_statistics(member: Member, batches: list[list[str]]) -> list[dict[str, np.ndarray]]:
    """:func:`batch_statistics` of feature batches one after another (one batch in memory at a time, the
    image layout read once)."""
    workspace = Workspace(member, max((len(b) for b in batches), default=0))
    return [batch_statistics(member, features, workspace) for features in batches]


def member_summary(member: Member, features: list[str]) -> pd.DataFrame:
    """The member's summary rows in one task: its files verified, then its feature batches in turn (from the
    bytes that were hashed, where a store's file was kept: :func:`~cellspec_sc.cohort._members.verified`)."""
    with verified(member):
        batches = batches_statistics(member, feature_batches(features, member.n_cells))
    return member_frame(member, None, [batches], features)


def member_frame(member: Member, checked: None, groups: list[list[dict[str, np.ndarray]]],
                 features: list[str]) -> pd.DataFrame:
    """The member's summary rows (images x features, image-major) from its batch results, in groups."""
    batches = [b for group in groups for b in group]
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


def member_task(member: Member, features: list[str], tasks: int = 1) -> Any:
    """The member's summary as dask work: one task (files verified, then every feature batch) or, with
    ``tasks`` > 1 and several batches, that many tasks of consecutive batches beside a task verifying the
    files, joined by a last one. A dask task costs the scheduler and the workers milliseconds of CPU
    (the member pickled, sent, rebuilt; the result sent back), on the cores the tasks need, so a
    directory is split only when there are too few directories to keep every worker busy."""
    batches = feature_batches(features, member.n_cells)
    k = min(tasks, len(batches))
    if k <= 1:
        return dask.delayed(guarded(member_summary), pure=False)(member, features)
    checked = dask.delayed(guarded(verify_member), pure=False)(member)
    groups = [dask.delayed(guarded(batches_statistics), pure=False)(
        member, batches[len(batches) * g // k:len(batches) * (g + 1) // k]) for g in range(k)]
    return dask.delayed(guarded(member_frame), pure=False)(member, checked, groups, features)


def summarize(cohort: Cohort, *, client: Any = None, progress: bool | None = None) -> pd.DataFrame:
    """See the module docstring."""
    features = cohort.feature_ids
    per_member = -(-2 * worker_threads(client) // max(len(cohort.members), 1))  # ceil: two tasks per thread
    tasks = [member_task(m, features, per_member) for m in cohort.members]
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
