"""What a CellSpec owns: its measurement matrix read-only, its tables apart from the caller's.

A CellSpec keeps values as the source tool measured them, so nothing outside the object may change them: not
the user through ``x.measurements[...] = ...``, and not another object the user holds (an AnnData from
``to_anndata``, the AnnData ``from_anndata`` read, the caller's own arrays and frames). The constructor takes
its own copy of a matrix that anyone could still write (:func:`owned_matrix`); code that builds a fresh matrix
for the object hands it over with :func:`sealed` so that no copy is made. Tables are taken as pandas'
copy-on-write copies, which cost nothing until one side changes.

>>> import numpy as np
>>> m = np.zeros((2, 2))
>>> kept = owned_matrix(m)
>>> np.shares_memory(kept, m), kept.flags.writeable
(False, False)
>>> fresh = sealed(np.ones((2, 2)))
>>> owned_matrix(fresh) is fresh
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def _bases(array: np.ndarray) -> list[np.ndarray]:
    """``array`` and the numpy arrays under it (a view's base, its base, ...)."""
    out = [array]
    while isinstance(out[-1].base, np.ndarray):
        out.append(out[-1].base)
    return out


def sealed(matrix: Any) -> Any:
    """Hand a freshly built matrix to a CellSpec without a copy: it and every array under it become read-only.

    Only for a matrix that nothing else will write (one a reader or a conversion has just made).
    """
    if isinstance(matrix, np.ndarray):
        for array in _bases(matrix):
            array.setflags(write=False)
    return matrix


class HandedOver:
    """A part given to a CellSpec that nothing else holds, stored as it is: a matrix another thread still fills
    (neither copied nor sealed; the code that made it calls :func:`sealed` once the filling is done), or a table
    just built for the object (not copied: a reader's or a decoder's own frame).

    >>> import pandas as pd
    >>> frame = pd.DataFrame({"a": [1.0]})
    >>> owned_frame(HandedOver(frame)) is frame, owned_frame(frame) is frame
    (True, False)
    """

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


def owned_matrix(matrix: Any) -> Any:
    """The matrix a CellSpec stores: read-only, copied when anything could still write it.

    A numpy array that is writable, or a read-only view of a writable array, is copied (its memory order kept);
    a sealed or otherwise read-only array is kept as it is. Dask arrays are immutable and kept; anything else
    (an invalid object being built to be reported) is stored as given.
    """
    if isinstance(matrix, HandedOver):
        return matrix.value
    if not isinstance(matrix, np.ndarray):
        return matrix
    if type(matrix) is not np.ndarray:  # a subclass (np.memmap, ...): kept as a plain array
        matrix = matrix.view(np.ndarray)
    if any(array.flags.writeable for array in _bases(matrix)):
        matrix = matrix.copy(order="K")
    matrix.setflags(write=False)
    return matrix


def copied_matrix(matrix: Any) -> Any:
    """An independent read-only copy of a stored matrix (a dask array is immutable and kept as it is).

    >>> kept = owned_matrix(np.zeros((2, 2)))
    >>> again = copied_matrix(kept)
    >>> np.shares_memory(again, kept), again.flags.writeable
    (False, False)
    """
    if isinstance(matrix, np.ndarray):
        return sealed(matrix.copy(order="K"))
    return matrix


def guarded_view(matrix: Any) -> Any:
    """What ``x.measurements`` gives: a read-only view of a numpy matrix (a plain ``ndarray``, so that libraries
    that dispatch on the exact type, like anndata's writers, take it; its flag cannot be turned back on, its base
    being read-only), a fresh handle on a dask array (dask's ``__setitem__`` rewrites the handle's graph, which
    must not be the object's)."""
    if isinstance(matrix, np.ndarray):
        return matrix.view()
    if type(matrix).__module__.startswith("dask."):
        return matrix.copy()
    return matrix


def owned_frame(frame: Any) -> Any:
    """A table as the object keeps it: pandas' copy-on-write copy (no data copied until either side changes), or a
    frame :class:`HandedOver` as it is."""
    if isinstance(frame, HandedOver):
        return frame.value
    return frame.copy(deep=False) if isinstance(frame, pd.DataFrame) else frame
