"""Sub-cohorts: ``c.select(images=..., samples=...)``, and finding a member by its path.

A directory keeps only the rows of the selected images: whole directories are
kept as they are; for a partly selected one the image_id column is read once
(on the client, one column) to count the rows of each row group it keeps.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> from cellspec_sc.cohort.example import write_example_cohort
>>> c = cs.open_cohort(write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20))
>>> part = c.select(images=["slide01_img2", "slide02_img1"])
>>> len(part), part.images["image_id"].tolist(), 0 < part.n_cells < c.n_cells
(2, ['slide01_img2', 'slide02_img1'], True)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from cellspec_sc.cohort.failures import CohortError
from cellspec_sc.cohort.members import Member
from cellspec_sc.cohort.parts import count_kept

if TYPE_CHECKING:
    from cellspec_sc.cohort.cohort import Cohort


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


def find_member(members: list[Member], directory: str | Path) -> Member:
    """The member opened from ``directory`` (the same text, or the same folder)."""
    for member in members:
        if member.label == str(directory):
            return member
    resolved = Path(directory).resolve()
    for member in members:
        if Path(member.label).resolve() == resolved:
            return member
    raise CohortError(f"{directory} is not a directory of this cohort; directories: "
                      f"{', '.join(m.label for m in members[:10])}")
