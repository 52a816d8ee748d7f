"""``Cohort.map``: a user function on every directory's CellSpec, on the workers, results in order.

Each task loads its directory as ``cs.read`` would (every file hashed once
against the manifest seen at open, the object validated; a directory opened
whole is read with ``cs.read`` itself, adjacency included) and calls
``fn(x)``. The function travels to the workers (pickled by cloudpickle), so it
may be a lambda or a closure; its result comes back to the client, so return
small things (a number, a path you wrote, a frame of statistics), not the
object. A directory whose loading or ``fn`` failed is named in a
:class:`~cellspec_sc.cohort.failures.CohortError` raised after every directory
finished; ``err.result`` holds the results, None where it failed.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> from cellspec_sc.cohort.example import write_example_cohort
>>> c = cs.open_cohort(write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20))
>>> c.map(lambda x: x.n_cells)
[20, 20]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import dask

from cellspec_sc.cohort.failures import CohortError, Failure, guarded
from cellspec_sc.cohort.load import member_object
from cellspec_sc.cohort.members import Member, check_stamp, verify_member
from cellspec_sc.cohort.run import run
from cellspec_sc.io import read
from cellspec_sc.model import CellSpec
from cellspec_sc.validation import validate

if TYPE_CHECKING:
    from cellspec_sc.cohort.cohort import Cohort


def load_member(member: Member) -> CellSpec:
    """The member as a validated CellSpec (refuses a directory that changed since the cohort was opened)."""
    if member.image_filter is None and member.root.joinpath("cellspec.json").is_file() and member.done:
        x = read(member.root)
        for file in member.stamps:  # read() checked the files against the manifest it found: the one opened?
            check_stamp(member, file)
        return x
    verify_member(member)
    x, stats, stored_nan = member_object(member, eager=True)
    validate(x, stats=stats, source_nonfinite=stored_nan).raise_if_failed(member.label)
    return x


def apply(member: Member, fn: Callable[[CellSpec], Any]) -> Any:
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
