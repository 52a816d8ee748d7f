"""A member as a :class:`CellSpec` on a worker, built from its parts with the read path's pieces.

``member_object(m)`` reads the cells table (every part), and walks the parts
once to gather the :class:`~cellspec_sc.validation.matrix_stats.MatrixStats`
validation needs. With ``eager=False`` (one ~8 MB column batch of a row group
in memory at a time, its stats taken while it is in the cache) the measurements
stay a dask array of one block per part (what validation needs: shape and
dtype; values only through the stats); with ``eager=True`` they are filled into
one matrix, as ``cs.read`` does.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> from cellspec_sc.cohort.members import open_directory
>>> x = cs.example()
>>> m = open_directory(cs.write(x, pathlib.Path(tempfile.mkdtemp()) / "s"), 0)
>>> y, stats, stored = member_object(m, eager=True)
>>> y.equals(x.replace(provenance=y.provenance)), stored
(True, {})
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cellspec_sc.cohort.members import Member
from cellspec_sc.cohort.parts import add_part_stats, cells_frame, feature_block
from cellspec_sc.io.parquet import stats_for
from cellspec_sc.model.cellspec import CellSpec
from cellspec_sc.model.ownership import sealed
from cellspec_sc.model.memory import empty_matrix
from cellspec_sc.validation.matrix_stats import MatrixStats


def member_object(member: Member, *, eager: bool) -> tuple[CellSpec, MatrixStats, dict[str, int]]:
    """(the member as a CellSpec, the stats of its matrix, NaN stored as numbers per feature)."""
    cells = cells_frame(member)
    features = member.feature_ids
    stats = stats_for(cells, len(features))
    nulls = np.zeros(len(features), dtype=np.int64)
    matrix = empty_matrix(member.n_cells, len(features)) if eager else None
    for part, start in zip(member.parts, member.offsets, strict=True):
        if matrix is None:  # validation: the stats alone, no block of the part's values
            add_part_stats(member, part, features, nulls, stats, start)
            continue
        block = feature_block(member, part, features, nulls)
        stats.add(start, block)
        matrix[start:start + len(block)] = block
    stored = stats.nan - nulls
    stored_nan = {features[j]: int(stored[j]) for j in np.flatnonzero(stored)}
    measurements = sealed(matrix) if matrix is not None else lazy_measurements(member, features)
    x = CellSpec(spec_version=member.spec_version, cells=cells, measurements=measurements,
                 dictionary=member.dictionary, images=member.images, channels=member.channels,
                 provenance=member.provenance, source_dir=member.root, extensions=member.extensions)
    return x, stats, stored_nan


def lazy_measurements(member: Member, features: list[str]) -> Any:
    """The member's rows x ``features`` as a dask array, one block per part (NaN where it lacks a feature)."""
    import dask
    import dask.array as da

    blocks = [da.from_delayed(dask.delayed(feature_block, pure=True)(member, part, features),
                              shape=(part.kept, len(features)), dtype=np.float64) for part in member.parts]
    if not blocks:
        return da.zeros((0, len(features)), dtype=np.float64)
    return da.concatenate(blocks, axis=0) if len(blocks) > 1 else blocks[0]
