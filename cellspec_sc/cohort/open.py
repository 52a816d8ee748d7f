"""``open_cohort``: many cellspec directories (or one written cohort dataset) as one :class:`Cohort`.

``paths`` is a list of directories, a folder holding them (its sub-folders
that look like cellspec directories, by name), a glob, or a dataset written by
:meth:`Cohort.write_dataset`. Only metadata is read: DONE, the manifest,
cellspec.json (hashed, it is small) and the Parquet footers.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> from cellspec_sc.cohort.example import write_example_cohort
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> _ = write_example_cohort(root, 2, n_cells=30)
>>> c = cs.open_cohort(root)
>>> len(c), c.n_cells, sorted(c.images["directory"].str[-7:].unique())
(2, 60, ['slide01', 'slide02'])
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from pathlib import Path

from cellspec_sc.cohort.cohort import Cohort
from cellspec_sc.cohort.dataset_read import COHORT_FILE, read_dataset
from cellspec_sc.cohort.failures import CohortError, Failure, failure_of
from cellspec_sc.cohort.features import combine
from cellspec_sc.cohort.members import open_directory
from cellspec_sc.errors import CellspecError
from cellspec_sc.io import DEFAULT_MAX_INFLATION

_MARKERS = ("DONE", "MANIFEST.sha256", "cellspec.json", COHORT_FILE)


def open_cohort(paths: str | os.PathLike | Iterable[str | os.PathLike], *, features: str = "strict",
                max_inflation: float = DEFAULT_MAX_INFLATION) -> Cohort:
    """Open cellspec directories as one cohort; see the module docstring and docs/cohorts.md.

    ``features``: ``"strict"`` (same dictionary everywhere), ``"intersection"`` or ``"union"``.
    ``max_inflation``: how many values a cells.parquet footer may claim, as in ``cs.read``.
    Raises :class:`~cellspec_sc.cohort.failures.CohortError` listing every directory that
    ``cs.read`` would refuse, or how the dictionaries differ.
    """
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
