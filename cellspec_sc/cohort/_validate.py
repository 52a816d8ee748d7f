"""``Cohort.validate``: every directory validated on the workers, plus the cohort checks.

One task per directory: its listed files are hashed once against the manifest
seen at open (a file that changed is a ``ChecksumMismatch`` or
``ChangedSinceRead`` failure), its cells table is read, and its row groups are
walked once to gather the matrix statistics the four matrix checks use; then
every check of spec section 10 runs (``cellspec_sc.validate`` with those
statistics, taken from each ~8 MB column batch while it is in the cache: no
block of the row group is built). Memory per task: the directory's cells
columns plus one column batch of one row group. Cohort checks run on the client
from metadata:

- ``cohort_image_id_unique``: an image_id appears in one directory only;
- ``cohort_sample_consistent``: an image_id has one sample_id across the cohort;
- ``cohort_dictionaries_compatible``: a feature_id means the same in every directory (checked at open);
- ``cohort_spec_versions``: every directory's spec_version is read by this package, same major version.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> from cellspec_sc.cohort.example import write_example_cohort
>>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
>>> report = cs.open_cohort(paths).validate()
>>> report.ok, report.directory(paths[1]).ok, report.failures
(True, True, [])
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dask
import pandas as pd

from cellspec_sc.cohort._members import Member, find_member, member_object, verified
from cellspec_sc.cohort._run import CohortError, Failure, guarded, run
from cellspec_sc.validation import ValidationReport, validate

if TYPE_CHECKING:
    from cellspec_sc.cohort._cohort import Cohort

COHORT = "(cohort)"


@dataclass(frozen=True)
class CohortCheck:
    """One cohort-level check: ``status`` is "pass" or "fail"; ``directories`` involved in a failure."""

    name: str
    status: str
    message: str
    directories: tuple[str, ...] = ()


@dataclass
class CohortReport:
    """Per-directory :class:`ValidationReport` (or the refusal that stopped it) and the cohort checks."""

    reports: dict[str, ValidationReport | Failure]
    checks: list[CohortCheck] = field(default_factory=list)
    members: list[Member] = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        """True when every directory passed structure validation and every cohort check passed.

        Returns
        -------
        bool
            False when :attr:`failures` holds anything.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)
        >>> _ = (paths[1] / "cells.parquet").write_bytes(b"changed")  # refused: changed after opening
        >>> report = cohort.validate(progress=False)

        >>> report.ok
        False
        """
        return not self.failures

    @property
    def failures(self) -> list[Failure]:
        """(directory, check, message) of every failure: refusals, failed checks, failed cohort checks.

        Returns
        -------
        list of Failure
            Refusals of directories first (in cohort order), then failed cohort checks.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)
        >>> _ = (paths[1] / "cells.parquet").write_bytes(b"changed")  # refused: changed after opening
        >>> report = cohort.validate(progress=False)

        >>> [(pathlib.Path(f.directory).name, f.check) for f in report.failures]
        [('slide02', 'ChangedSinceRead')]
        """
        out = []
        for label, report in self.reports.items():
            if isinstance(report, Failure):
                out.append(report)
            else:
                out += [Failure(label, r.name, r.message) for r in report.failures]
        for check in self.checks:
            if check.status == "fail":
                out.append(Failure(", ".join(check.directories) or COHORT, check.name, check.message))
        return out

    def directory(self, path: str | Path) -> ValidationReport:
        """The ValidationReport of one directory; a directory refused before validation raises its refusal
        as a :class:`CohortError`.

        Parameters
        ----------
        path
            A directory of the cohort: the path as given or any path to the same folder.

        Returns
        -------
        ValidationReport
            The checks of section 10 on that directory.

        Raises
        ------
        CohortError
            The directory was refused before it could be validated, or is not one of the cohort.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)
        >>> _ = (paths[1] / "cells.parquet").write_bytes(b"changed")  # refused: changed after opening
        >>> report = cohort.validate(progress=False)

        >>> report.directory(paths[0]).ok
        True
        >>> report.directory(paths[1])
        Traceback (most recent call last):
        ...
        cellspec_sc.cohort._run.CohortError: ...slide02 was not validated
        ...
        """
        label = find_member(self.members, path).label if self.members else str(path)
        report = self.reports[label]
        if isinstance(report, Failure):
            raise CohortError(f"{label} was not validated", [report])
        return report

    def to_frame(self) -> pd.DataFrame:
        """One row per failure: directory, check, message.

        Returns
        -------
        pandas.DataFrame
            The columns ``directory``, ``check`` and ``message`` (no row when :attr:`ok`).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)
        >>> _ = (paths[1] / "cells.parquet").write_bytes(b"changed")  # refused: changed after opening
        >>> report = cohort.validate(progress=False)

        >>> report.to_frame()["check"].tolist()
        ['ChangedSinceRead']
        """
        return pd.DataFrame([{"directory": f.directory, "check": f.check, "message": f.message}
                             for f in self.failures], columns=["directory", "check", "message"])

    def format(self) -> str:
        """Plain-text report: a heading with the counts, the failures, then the cohort checks that passed.

        Returns
        -------
        str
            One line per failure and per passed cohort check.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import cellspec_sc as cs
        >>> from cellspec_sc.cohort.example import write_example_cohort
        >>> paths = write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20)
        >>> cohort = cs.open_cohort(paths)
        >>> _ = (paths[1] / "cells.parquet").write_bytes(b"changed")  # refused: changed after opening
        >>> report = cohort.validate(progress=False)
        >>> print(report.format())
        cohort validation: FAILED (2 directories, 1 failures)
          FAIL  ...slide02: ChangedSinceRead: ...
          PASS  cohort_image_id_unique: 4 image ids, each in one directory
        ...
        """
        failures = self.failures
        head = (f"cohort validation: {'OK' if not failures else 'FAILED'} ({len(self.reports)} directories, "
                f"{len(failures)} failures)")
        return "\n".join([head] + [f"  FAIL  {f}" for f in failures] +
                         [f"  {c.status.upper():<4}  {c.name}: {c.message}" for c in self.checks
                          if c.status != "fail"])

    def __str__(self) -> str:
        return self.format()

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{html.escape(f.directory)}</td><td><code>{html.escape(f.check)}</code></td>"
                       f"<td style='text-align:left'>{html.escape(f.message)}</td></tr>" for f in self.failures)
        return (f"<div><strong>{html.escape(self.format().splitlines()[0])}</strong>"
                f"<table><tr><th>directory</th><th>check</th><th>message</th></tr>{rows}</table></div>")


def validate_member(member: Member) -> ValidationReport:
    """Hash the member's files once, then validate it with stats gathered one row group at a time."""
    with verified(member):
        x, stats, stored_nan = member_object(member, eager=False)
        return validate(x, stats=stats, source_nonfinite=stored_nan)


def validate_cohort(cohort: Cohort, *, client: Any = None, progress: bool | None = None) -> CohortReport:
    """See the module docstring."""
    tasks = [dask.delayed(guarded(validate_member), pure=False)(m) for m in cohort.members]
    results = run(tasks, cohort.directories, "validating", client=client, progress_bar=progress)
    return CohortReport(dict(zip(cohort.directories, results, strict=True)), cohort_checks(cohort), cohort.members)


def cohort_checks(cohort: Cohort) -> list[CohortCheck]:
    """The cohort-level checks, from the images tables and versions (no data read)."""
    images = cohort.images
    return [_unique_images(images), _consistent_samples(images), _dictionaries(cohort), _versions(cohort)]


def _unique_images(images: pd.DataFrame) -> CohortCheck:
    name = "cohort_image_id_unique"
    if "image_id" not in images:
        return CohortCheck(name, "pass", "no image_id column")
    where = images.groupby(images["image_id"].astype(object), sort=False)["directory"].agg(
        lambda d: tuple(dict.fromkeys(d)))
    shared = where[where.map(len) > 1]
    if shared.empty:
        return CohortCheck(name, "pass", f"{len(where)} image ids, each in one directory")
    shown = "; ".join(f"{i!r} in {', '.join(d)}" for i, d in list(shared.items())[:5])
    return CohortCheck(name, "fail", f"{len(shared)} image id(s) in more than one directory: {shown}",
                       tuple(dict.fromkeys(d for ds in shared for d in ds)))


def _consistent_samples(images: pd.DataFrame) -> CohortCheck:
    name = "cohort_sample_consistent"
    if "image_id" not in images or "sample_id" not in images:
        return CohortCheck(name, "pass", "no sample_id column")
    samples = images.groupby(images["image_id"].astype(object), sort=False)["sample_id"].agg(
        lambda s: tuple(dict.fromkeys(s.dropna().astype(str))))
    bad = samples[samples.map(len) > 1]
    if bad.empty:
        return CohortCheck(name, "pass", "every image has one sample_id")
    shown = "; ".join(f"{i!r}: {', '.join(s)}" for i, s in list(bad.items())[:5])
    directories = images.loc[images["image_id"].isin(bad.index).to_numpy(), "directory"]
    return CohortCheck(name, "fail", f"{len(bad)} image id(s) with several sample ids: {shown}",
                       tuple(dict.fromkeys(directories)))


def _dictionaries(cohort: Cohort) -> CohortCheck:
    missing = cohort.plan.missing
    detail = f"; {len(missing)} directories lack some features (NA in their rows)" if missing else ""
    return CohortCheck("cohort_dictionaries_compatible", "pass",
                       f"features={cohort.plan.mode!r}: {len(cohort.feature_ids)} features{detail}")


def _versions(cohort: Cohort) -> CohortCheck:
    versions = sorted({m.spec_version for m in cohort.members})
    majors = {v.split(".")[0] for v in versions}
    status = "pass" if len(majors) <= 1 else "fail"
    return CohortCheck("cohort_spec_versions", status, f"spec versions {', '.join(versions)}")
