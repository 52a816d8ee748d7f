"""The :class:`Cohort`: many cellspec directories as one dataset, computed on dask workers; opening it, and its
sub-cohorts.

The object holds metadata only (see :mod:`cellspec_sc.cohort._members`); every
operation sends directory paths and row groups to the workers of the current
``distributed.Client`` (or the one given, or local threads when there is
none) and brings back small results.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> from cellspec_sc.cohort.example import write_example_cohort
>>> c = cs.open_cohort(write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20))
>>> c
Cohort: 2 directories, 40 cells, 4 images, 19 features (features='strict')

``open_cohort(paths)`` opens many cellspec directories (or one written cohort dataset) as one :class:`Cohort`.
``paths`` is a list of directories, a folder holding them (its sub-folders
that look like cellspec directories, by name), a glob, or a dataset written by
:meth:`Cohort.write_dataset`. Only metadata is read: DONE, the manifest,
cellspec.json (hashed, it is small) and the Parquet footers.

>>> root = pathlib.Path(tempfile.mkdtemp())
>>> _ = write_example_cohort(root, 2, n_cells=30)
>>> whole = cs.open_cohort(root)
>>> len(whole), whole.n_cells, sorted(whole.images["directory"].str[-7:].unique())
(2, 60, ['slide01', 'slide02'])

``c.select(images=..., samples=...)`` is a sub-cohort: a directory keeps only the rows of the selected
images: whole directories are kept as they are; for a partly selected one the image_id column is read once
(on the client, one column) to count the rows of each row group it keeps.

>>> len(c.select(images=["slide02_img1"])), c.select(samples=["slide01_s1"]).images["image_id"].tolist()
(1, ['slide01_img1'])
>>> part = c.select(images=["slide01_img2", "slide02_img1"])
>>> len(part), part.images["image_id"].tolist(), 0 < part.n_cells < c.n_cells
(2, ['slide01_img2', 'slide02_img1'], True)

``c.map(fn)`` runs a user function on every directory's CellSpec, on the workers, results in order.
Each task loads its directory as ``cs.read`` would (every file hashed once
against the manifest seen at open, the object validated; a directory opened
whole is read with ``cs.read`` itself, adjacency included) and calls
``fn(x)``. The function travels to the workers (pickled by cloudpickle), so it
may be a lambda or a closure; its result comes back to the client, so return
small things (a number, a path you wrote, a frame of statistics), not the
object. A directory whose loading or ``fn`` failed is named in a
:class:`CohortError` raised after every directory finished; ``err.result`` holds the results, None where
it failed.

>>> c.map(lambda x: x.n_cells)
[20, 20]

``c.preview()`` is the notebook widget, which lives in a layer above the cohort: the composition root
(``cellspec_sc/__init__.py``) provides it (the registry of :mod:`cellspec_sc.model`).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dask
import pandas as pd

from cellspec_sc.cohort._anndata import cohort_anndata
from cellspec_sc.cohort._dataset import read_dataset, write_dataset
from cellspec_sc.cohort._features import FeaturePlan, combine
from cellspec_sc.cohort._members import (
    Member,
    count_kept,
    find_member,
    load_member,
    open_directory,
    open_remote_directory,
)
from cellspec_sc.cohort._record import COHORT_FILE
from cellspec_sc.cohort._run import CohortError, Failure, failure_of, guarded, run
from cellspec_sc.cohort._summary import summarize
from cellspec_sc.cohort._validate import CohortReport, validate_cohort
from cellspec_sc.errors import CellspecError
from cellspec_sc.io import DEFAULT_MAX_INFLATION, DONE, Location, is_url, object_stamp, object_stamps, storage_call
from cellspec_sc.model import CellSpec, provided

if TYPE_CHECKING:
    import anndata


_MARKERS = ("DONE", "MANIFEST.sha256", "cellspec.json", COHORT_FILE)

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
        """The directories, as given to :func:`open_cohort`, in cohort order.

        Returns
        -------
        list of str
            One label per directory (the path as given).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)

        >>> [pathlib.Path(d).name for d in cohort.directories]
        ['slide01', 'slide02']
        """
        return [m.label for m in self.members]

    @property
    def n_cells(self) -> int:
        """Cells of every directory.

        Returns
        -------
        int
            The number of cells of the whole cohort.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)

        >>> cohort.n_cells
        40
        """
        return sum(m.n_cells for m in self.members)

    @property
    def dictionary(self) -> pd.DataFrame:
        """The cohort's dictionary (see ``features`` of :func:`open_cohort`).

        Returns
        -------
        pandas.DataFrame
            One row per feature of the cohort, as the dictionary of a cellspec directory.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)

        >>> cohort.dictionary.loc[16, ["feature_id", "kind"]].tolist()
        ['cell:area', 'shape']
        """
        return self.plan.dictionary

    @property
    def feature_ids(self) -> list[str]:
        """The cohort's features, in dictionary order.

        Returns
        -------
        list of str
            The feature ids, one per row of :attr:`dictionary`.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)

        >>> len(cohort.feature_ids), cohort.feature_ids[0]
        (19, 'cell:DAPI:mean')
        """
        return self.plan.feature_ids

    @property
    def images(self) -> pd.DataFrame:
        """Every image of every directory, with a ``directory`` column.

        Returns
        -------
        pandas.DataFrame
            The images tables of the directories, stacked in cohort order.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)

        >>> cohort.images["image_id"].tolist()
        ['slide01_img1', 'slide01_img2', 'slide02_img1', 'slide02_img2']
        """
        return _stacked(self.members, "images")

    @property
    def channels(self) -> pd.DataFrame:
        """Every channel of every image, with a ``directory`` column.

        Returns
        -------
        pandas.DataFrame
            The channels tables of the directories, stacked in cohort order.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)

        >>> len(cohort.channels), cohort.channels.loc[0, ["image_id", "marker"]].tolist()
        (16, ['slide01_img1', 'DAPI'])
        """
        return _stacked(self.members, "channels")

    @property
    def provenance(self) -> dict[str, Any]:
        """How the cohort was assembled: features mode, features each directory lacks (NA in its rows),
        and every directory's own provenance.

        Returns
        -------
        dict
            ``features`` (the mode), ``missing_features`` and ``sources`` (one record per directory).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)
        >>> cohort.provenance["features"], len(cohort.provenance["sources"])
        ('strict', 2)
        """
        return {"features": self.plan.mode, "missing_features": self.plan.missing,
                "sources": [{"directory": m.label, "spec_version": m.spec_version, "n_cells": m.n_cells,
                             "done": m.done, "provenance": m.provenance} for m in self.members]}

    def member(self, directory: str | Path) -> Member:
        """The member for ``directory`` (as given, or any path to the same folder).

        Parameters
        ----------
        directory
            A directory of the cohort: the path as given or any path to the same folder.

        Returns
        -------
        Member
            What the cohort knows of that directory (its tables of metadata, files and cell count).

        Raises
        ------
        CohortError
            ``directory`` is not one of the cohort.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)

        >>> cohort.member(paths[1]).n_cells
        20
        """
        return find_member(self.members, directory)

    # -- operations ----------------------------------------------------------------------------
    def select(self, *, images: Iterable[str] | None = None, samples: Iterable[str] | None = None) -> Cohort:
        """The sub-cohort of the given images and/or samples (directories left without one are dropped).

        Parameters
        ----------
        images
            Image ids to keep (default: all).
        samples
            Sample ids to keep (default: all); with ``images`` too, the images of those samples.

        Returns
        -------
        Cohort
            The cohort of the selected images; the files are not read.

        Raises
        ------
        CohortError
            An image or sample id is not in the cohort.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)

        >>> cohort.select(images=["slide02_img1"])
        Cohort: 1 directories, 10 cells, 1 images, 19 features (features='strict')
        """
        return Cohort(selected_members(self, images=images, samples=samples), self.plan,
                      partition_by=self.partition_by)

    def validate(self, client: Any = None, *, progress: bool | None = None) -> CohortReport:
        """Validate every directory on the workers, plus the cohort checks; see :mod:`._validate`.

        A directory refused while it is read is a failure in the report, not an exception.

        Parameters
        ----------
        client
            A ``dask.distributed`` client (default: the current one, else dask's threads).
        progress
            Show a progress bar (default: the package setting).

        Returns
        -------
        CohortReport
            The report of each directory and the cohort checks.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)

        >>> report = cohort.validate(progress=False)
        >>> report.ok, [c.name for c in report.checks][:2]
        (True, ['cohort_image_id_unique', 'cohort_sample_consistent'])
        """
        return validate_cohort(self, client=client, progress=progress)

    def summary(self, client: Any = None, *, progress: bool | None = None) -> pd.DataFrame:
        """One row per (image_id, feature_id): n, na, mean, sd, min, quantiles, max; see :mod:`._summary`.

        Parameters
        ----------
        client
            A ``dask.distributed`` client (default: the current one, else dask's threads).
        progress
            Show a progress bar (default: the package setting).

        Returns
        -------
        pandas.DataFrame
            ``directory``, ``image_id``, ``feature_id``, ``n``, ``na``, ``mean``, ``sd``, ``min``, ``q01``,
            ``q25``, ``median``, ``q75``, ``q99``, ``max``.

        Raises
        ------
        CohortError
            Some directories failed; the error names them and holds the others' summary.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)

        >>> table = cohort.summary(progress=False)
        >>> table.shape, table.loc[0, ["image_id", "feature_id"]].tolist(), int(table.loc[0, "n"])
        ((76, 14), ['slide01_img1', 'cell:DAPI:mean'], 10)
        """
        return summarize(self, client=client, progress=progress)

    def to_anndata(self) -> anndata.AnnData:
        """An AnnData whose X is a dask array with one chunk per row group; see :mod:`.anndata`.

        Returns
        -------
        anndata.AnnData
            One observation per cell of the cohort, one variable per feature; nothing is read until computed.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)

        >>> adata = cohort.to_anndata()
        >>> adata.shape, type(adata.X).__module__.split(".")[0]
        ((40, 19), 'dask')
        """
        return cohort_anndata(self)

    def write_dataset(self, path: str | Path, partition_by: Sequence[str] = ("sample_id",), client: Any = None, *,
                      progress: bool | None = None, overwrite: bool = False,
                      storage_options: dict[str, Any] | None = None) -> Path | str:
        """Write one hive-partitioned Parquet dataset with cohort.json, manifest and DONE; see :mod:`._dataset`.

        ``path`` may be a URL on object storage (``storage_options`` for the store): the workers upload the parts.

        Parameters
        ----------
        path
            The dataset directory to make (or a URL on object storage).
        partition_by
            The cells columns whose values name the partition folders.
        client
            A ``dask.distributed`` client (default: the current one, else dask's threads).
        progress
            Show a progress bar (default: the package setting).
        overwrite
            Replace an existing cohort dataset at ``path`` (never another kind of folder) once the new one is
            complete.
        storage_options
            For a URL on object storage: fsspec options of the store.

        Returns
        -------
        pathlib.Path or str
            ``path``, holding the complete dataset (the URL, for object storage).

        Raises
        ------
        CohortError
            A directory failed, or a partition column is missing or differs between directories; nothing is
            published.
        TargetExists
            ``path`` exists and ``overwrite`` is false, or it is not a cohort dataset.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)
        >>> out = cohort.write_dataset(pathlib.Path(tempfile.mkdtemp()) / "dataset", progress=False)
        >>> sorted(f.name for f in out.iterdir())
        ['DONE', 'MANIFEST.sha256', 'cells', 'cohort.json']
        """
        return write_dataset(self, path, partition_by=partition_by, client=client, progress=progress,
                             overwrite=overwrite, storage_options=storage_options)

    def map(self, fn: Callable[[Any], Any], client: Any = None, *, progress: bool | None = None) -> list[Any]:
        """``fn(CellSpec)`` of every directory on the workers, results in order (see above).

        Parameters
        ----------
        fn
            A function of one :class:`~cellspec_sc.CellSpec` (it must pickle, for a distributed client).
        client
            A ``dask.distributed`` client (default: the current one, else dask's threads).
        progress
            Show a progress bar (default: the package setting).

        Returns
        -------
        list
            ``fn`` of each directory's object, in cohort order.

        Raises
        ------
        CohortError
            ``fn`` failed for some directories; the error names them and its ``result`` holds the others'
            values (``None`` for the failed).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)

        >>> cohort.map(lambda x: x.n_cells, progress=False)
        [20, 20]
        """
        return map_cohort(self, fn, client=client, progress=progress)

    def preview(self, summary: pd.DataFrame | None = None, client: Any = None) -> Any:
        """The cohort widget: image x marker heatmap of medians and NA fraction, outlier images.

        The widget is provided by the layer above (``cellspec_sc.widgets``), through the registry of
        :mod:`cellspec_sc.model`.

        Parameters
        ----------
        summary
            The table of :meth:`summary`, when already made (else it is computed).
        client
            A ``dask.distributed`` client for computing the summary.

        Returns
        -------
        ipywidgets.VBox
            The widget (it displays itself as the last value of a notebook cell).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)
        >>> widget = cohort.preview(cohort.summary(progress=False))
        >>> widget.medians().shape
        (4, 4)
        """
        return provided("cohort_preview")(self, summary=summary, client=client)


def _stacked(members: list[Member], table: str) -> pd.DataFrame:
    frames = [getattr(m, table).assign(directory=m.label) for m in members]
    if not frames:
        return pd.DataFrame({"directory": pd.Series([], dtype="string")})
    frame = pd.concat(frames, ignore_index=True)
    frame["directory"] = frame["directory"].astype("string")
    return frame


# -- opening ----------------------------------------------------------------------------------------------------------


def open_cohort(paths: str | os.PathLike | Iterable[str | os.PathLike], *, features: str = "strict",
                max_inflation: float = DEFAULT_MAX_INFLATION, storage_options: dict[str, Any] | None = None) -> Cohort:
    """Open cellspec directories (or one written cohort dataset) as one cohort, reading metadata only.

    Parameters
    ----------
    paths
        Directories, a folder holding them (its sub-folders that look like cellspec directories), a glob, or a
        dataset written by :meth:`Cohort.write_dataset`.
    features
        ``"strict"`` (the same dictionary everywhere), ``"intersection"`` or ``"union"`` (see docs/cohorts.md).
    max_inflation
        How many values a cells.parquet footer may claim, as in ``cs.read``.
    storage_options
        For URLs on object storage (``s3://bucket/cohort/*``, a prefix holding directories, or a list of
        URLs): the store's options (endpoint, credentials), sent to the workers with each task; without
        them the workers use the store's usual credential chain.

    Returns
    -------
    Cohort

    Raises
    ------
    CohortError
        Listing every directory that ``cs.read`` would refuse, or how the dictionaries differ.

    Examples
    --------
    >>> import cellspec_sc as cs, tempfile, pathlib
    >>> from cellspec_sc.cohort.example import write_example_cohort
    >>> cs.open_cohort(write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=10)).n_cells
    20
    """
    if _names_urls(paths):
        return _open_remote(paths, features, max_inflation, storage_options)
    found = resolve_paths(paths)
    datasets = [p for p in found if (p / COHORT_FILE).exists()]
    if datasets:
        if len(found) > 1:
            raise CohortError(f"{datasets[0]} is a cohort dataset; open it alone, not with other paths")
        members, plan, partition_by = read_dataset(datasets[0], max_inflation)
        return Cohort(members, plan, partition_by=partition_by)
    members, refused = [], []
    for index, path in enumerate(found):
        try:
            members.append(open_directory(path, index, str(path), max_inflation))
        except CellspecError as err:
            refused.append(failure_of(str(path), err))
    if refused:
        raise CohortError(f"{len(refused)} of {len(found)} directories cannot be opened", refused)
    plan = combine({m.label: m.dictionary for m in members}, features)
    return Cohort(members, plan)


def _names_urls(paths: Any) -> bool:
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    urls = [is_url(str(p)) for p in items]
    if any(urls) and not all(urls):
        raise CohortError("a cohort is either local paths or URLs on object storage, not both")
    return bool(urls) and all(urls)


def _open_remote(paths: Any, features: str, max_inflation: float, options: dict[str, Any] | None) -> Cohort:
    found = resolve_urls(paths, options)
    if len(found) == 1 and object_stamp(Location.of(found[0], options), COHORT_FILE) is not None:
        raise CohortError(f"{found[0]} is a cohort dataset: on object storage open_cohort reads directories; read "
                          "the dataset with pyarrow.dataset, DuckDB or Polars (docs/cohorts.md)")
    members, refused = [], []
    for index, url in enumerate(found):
        try:
            members.append(open_remote_directory(url, index, url, options, max_inflation))
        except CellspecError as err:
            refused.append(failure_of(url, err))
    if refused:
        raise CohortError(f"{len(refused)} of {len(found)} directories cannot be opened", refused)
    return Cohort(members, combine({m.label: m.dictionary for m in members}, features))


def resolve_urls(paths: Any, options: dict[str, Any] | None = None) -> list[str]:
    """The directories on object storage that ``paths`` names: URLs as given; a glob (``s3://b/c/*``) or a
    prefix (its sub-prefixes holding DONE, or itself when it holds DONE) sorted by name."""
    if not isinstance(paths, (str, os.PathLike)):
        found = [str(p).rstrip("/") for p in paths]
    else:
        location = Location.of(str(paths), options)
        names = object_stamps(location) if not any(c in location.url for c in "*?[") else None
        if names is None:
            found = _globbed(location)
        elif DONE in names:
            found = [location.url]
        else:
            found = sorted({location.child(n.rsplit("/", 1)[0]) for n in names if n.endswith("/" + DONE)
                            and n.count("/") == 1})
    if not found:
        raise CohortError(f"no cellspec directories found in {paths!r}")
    duplicates = [Failure(u, "duplicate", "named twice") for k, u in enumerate(found) if u in found[:k]]
    if duplicates:
        raise CohortError("a directory is named twice", duplicates)
    return found


def _globbed(location: Location) -> list[str]:
    fs = location.fs
    protocol = location.protocol
    pattern = fs._strip_protocol(location.url)
    matches = storage_call(location.url, "listing the glob", lambda: fs.glob(pattern + "/" + DONE))
    return sorted(f"{protocol}://{m.rsplit('/', 1)[0]}" for m in matches)


def resolve_paths(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    """The directories ``paths`` names, in order (folders and globs sorted by name), each once."""
    if isinstance(paths, (str, os.PathLike)):
        found = _expand(str(paths))
    else:
        found = [Path(p) for p in paths]
    if not found:
        raise CohortError(f"no cellspec directories found in {paths!r}")
    seen: dict[Path, Path] = {}
    duplicates = []
    for path in found:
        key = path.resolve()
        if key in seen:
            duplicates.append(Failure(str(path), "duplicate", f"the same directory as {seen[key]}"))
        seen.setdefault(key, path)
    if duplicates:
        raise CohortError("a directory is named twice", duplicates)
    return found


def _expand(text: str) -> list[Path]:
    if any(c in text for c in "*?["):
        return [Path(p) for p in sorted(glob.glob(text)) if Path(p).is_dir()]
    path = Path(text)
    if not path.is_dir() or _looks_like_cellspec(path):
        return [path]
    children = [c for c in sorted(path.iterdir()) if c.is_dir() and not c.name.startswith(".")]
    return [c for c in children if _looks_like_cellspec(c)]


def _looks_like_cellspec(path: Path) -> bool:
    return any((path / marker).exists() for marker in _MARKERS)


# -- sub-cohorts -----------------------------------------------------------------------------------------------------


def wanted_images(cohort: Cohort, images: Iterable[str] | None, samples: Iterable[str] | None) -> set[str]:
    """Image ids selected by ``images`` and ``samples`` (both given: images of those samples)."""
    table = cohort.images
    known = set(table["image_id"].dropna().astype(str)) if "image_id" in table else set()
    wanted = set(known)
    if images is not None:
        asked = {str(i) for i in images}
        unknown = sorted(asked - known)
        if unknown:
            raise CohortError(f"unknown image_id(s) {unknown[:10]}; see cohort.images")
        wanted &= asked
    if samples is not None:
        asked = {str(s) for s in samples}
        column = table["sample_id"].astype(object) if "sample_id" in table else None
        found = set() if column is None else set(column.dropna().astype(str))
        unknown = sorted(asked - found)
        if unknown:
            raise CohortError(f"unknown sample_id(s) {unknown[:10]}; see cohort.images")
        wanted &= set(table.loc[column.isin(asked).to_numpy(), "image_id"].astype(str))
    return wanted


def selected_members(cohort: Cohort, *, images: Iterable[str] | None = None,
                     samples: Iterable[str] | None = None) -> list[Member]:
    """The members of the sub-cohort of ``cohort`` holding the given images and/or samples (narrowed to them)."""
    wanted = wanted_images(cohort, images, samples)
    members = []
    for member in cohort.members:
        own = set(member.images["image_id"].dropna().astype(str)) if "image_id" in member.images else set()
        keep = own & wanted
        if not keep:
            continue
        if keep != own or member.image_filter is not None:
            member = _restricted(member, frozenset(keep))
        members.append(replace(member, index=len(members)))
    return members


def _restricted(member: Member, images: frozenset[str]) -> Member:
    narrowed = member.with_images(images, member.parts)
    parts = tuple(replace(p, kept=count_kept(narrowed, replace(p, kept=-1))) for p in member.parts)
    return narrowed.with_images(images, tuple(p for p in parts if p.kept))


# -- map -------------------------------------------------------------------------------------------------------------


def apply(member: Member, fn: Callable[[CellSpec], Any]) -> Any:
    """``fn`` of the member's CellSpec (the task of :func:`map_cohort`)."""
    return fn(load_member(member))


def map_cohort(cohort: Cohort, fn: Callable[[CellSpec], Any], *, client: Any = None,
               progress: bool | None = None) -> list[Any]:
    """See the module docstring."""
    tasks = [dask.delayed(guarded(apply), pure=False)(m, fn) for m in cohort.members]
    results = run(tasks, cohort.directories, "mapping", client=client, progress_bar=progress)
    failures = [r for r in results if isinstance(r, Failure)]
    if failures:
        kept = [None if isinstance(r, Failure) else r for r in results]
        raise CohortError(f"map: {len(failures)} of {len(results)} directories failed", failures, kept)
    return results
