"""The :class:`Cohort`: many cellspec directories as one dataset, computed on dask workers.

The object holds metadata only (see :mod:`cellspec_sc.cohort.members`); every
operation sends directory paths and row groups to the workers of the current
``distributed.Client`` (or the one given, or local threads when there is
none) and brings back small results.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> from cellspec_sc.cohort.example import write_example_cohort
>>> c = cs.open_cohort(write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20))
>>> c
Cohort: 2 directories, 40 cells, 4 images, 19 features (features='strict')
>>> len(c.select(images=["slide02_img1"])), c.select(samples=["slide01_s1"]).images["image_id"].tolist()
(1, ['slide01_img1'])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from cellspec_sc.cohort.anndata import cohort_anndata
from cellspec_sc.cohort.dataset import write_dataset
from cellspec_sc.cohort.features import FeaturePlan
from cellspec_sc.cohort.map import map_cohort
from cellspec_sc.cohort.members import Member
from cellspec_sc.cohort.selection import find_member, selected_members
from cellspec_sc.cohort.summary import summarize
from cellspec_sc.cohort.validate import CohortReport, validate_cohort

if TYPE_CHECKING:
    import anndata


class Cohort:
    """Cellspec directories opened with :func:`cellspec_sc.open_cohort` (metadata only)."""

    def __init__(self, members: Sequence[Member], plan: FeaturePlan, *, partition_by: tuple[str, ...] = ()):
        self.members = list(members)
        self.plan = plan
        self.partition_by = tuple(partition_by)  # set when opened from a written dataset

    # -- what it holds -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.members)

    def __repr__(self) -> str:
        return (f"Cohort: {len(self)} directories, {self.n_cells:,} cells, {len(self.images):,} images, "
                f"{len(self.feature_ids):,} features (features={self.plan.mode!r})")

    @property
    def directories(self) -> list[str]:
        """The directories, as given to :func:`open_cohort`, in cohort order."""
        return [m.label for m in self.members]

    @property
    def n_cells(self) -> int:
        return sum(m.n_cells for m in self.members)

    @property
    def dictionary(self) -> pd.DataFrame:
        return self.plan.dictionary

    @property
    def feature_ids(self) -> list[str]:
        return self.plan.feature_ids

    @property
    def images(self) -> pd.DataFrame:
        """Every image of every directory, with a ``directory`` column."""
        return _stacked(self.members, "images")

    @property
    def channels(self) -> pd.DataFrame:
        """Every channel of every image, with a ``directory`` column."""
        return _stacked(self.members, "channels")

    @property
    def provenance(self) -> dict[str, Any]:
        """How the cohort was assembled: features mode, features each directory lacks (NA in its rows),
        and every directory's own provenance."""
        return {"features": self.plan.mode, "missing_features": self.plan.missing,
                "sources": [{"directory": m.label, "spec_version": m.spec_version, "n_cells": m.n_cells,
                             "done": m.done, "provenance": m.provenance} for m in self.members]}

    def member(self, directory: str | Path) -> Member:
        """The member for ``directory`` (as given, or any path to the same folder)."""
        return find_member(self.members, directory)

    # -- operations ----------------------------------------------------------------------------
    def select(self, *, images: Iterable[str] | None = None, samples: Iterable[str] | None = None) -> Cohort:
        """The sub-cohort of the given images and/or samples (directories left without one are dropped)."""
        return Cohort(selected_members(self, images=images, samples=samples), self.plan,
                      partition_by=self.partition_by)

    def validate(self, client: Any = None, *, progress: bool | None = None) -> CohortReport:
        """Validate every directory on the workers, plus the cohort checks; see :mod:`.validate`."""
        return validate_cohort(self, client=client, progress=progress)

    def summary(self, client: Any = None, *, progress: bool | None = None) -> pd.DataFrame:
        """One row per (image_id, feature_id): n, na, mean, sd, min, quantiles, max; see :mod:`.summary`."""
        return summarize(self, client=client, progress=progress)

    def to_anndata(self) -> anndata.AnnData:
        """An AnnData whose X is a dask array with one chunk per row group; see :mod:`.anndata`."""
        return cohort_anndata(self)

    def write_dataset(self, path: str | Path, partition_by: Sequence[str] = ("sample_id",), client: Any = None, *,
                      progress: bool | None = None, overwrite: bool = False) -> Path:
        """Write one hive-partitioned Parquet dataset with cohort.json, manifest and DONE; see :mod:`.dataset`."""
        return write_dataset(self, path, partition_by=partition_by, client=client, progress=progress,
                             overwrite=overwrite)

    def map(self, fn: Callable[[Any], Any], client: Any = None, *, progress: bool | None = None) -> list[Any]:
        """``fn(CellSpec)`` of every directory on the workers, results in order; see :mod:`.map`."""
        return map_cohort(self, fn, client=client, progress=progress)

    def preview(self, summary: pd.DataFrame | None = None, client: Any = None) -> Any:
        """The cohort widget: image x marker heatmap of medians and NA fraction, outlier images."""
        from cellspec_sc.widgets.cohort import CohortPreview  # ipywidgets and matplotlib: for the widget only

        return CohortPreview(self, summary=summary, client=client)


def _stacked(members: list[Member], table: str) -> pd.DataFrame:
    frames = [getattr(m, table).assign(directory=m.label) for m in members]
    if not frames:
        return pd.DataFrame({"directory": pd.Series([], dtype="string")})
    frame = pd.concat(frames, ignore_index=True)
    frame["directory"] = frame["directory"].astype("string")
    return frame
