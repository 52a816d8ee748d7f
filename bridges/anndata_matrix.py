"""X as the measurement matrix (a dense view, dask or not), and the fingerprints ``to_anndata`` records of every
table column, so that ``from_anndata`` can tell what changed since (X's own: :mod:`.anndata_fingerprint`).

>>> dense(np.eye(2)).sum()
np.float64(2.0)
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from cellspec_sc.model import column_digest


def dense(matrix: Any) -> np.ndarray:
    """A sparse or array-like matrix as a numpy array (no copy when it is one already)."""
    if hasattr(matrix, "toarray"):
        return matrix.toarray()
    return np.asarray(matrix)


def is_dask(matrix: Any) -> bool:
    """Whether ``matrix`` is a dask array (``cellspec_sc.read(path, lazy=True)``)."""
    return type(matrix).__module__.startswith("dask.")


def column_fingerprints(frame: pd.DataFrame, like: Mapping[str, str] | None = None) -> dict[str, str]:
    """A digest of each column's values (``"xxh3:<hex>"``, :func:`cellspec_sc.model.digest.column_digest`:
    NA-aware, doubles by their bits), to detect edited columns.

    ``like``: fingerprints recorded earlier; a column recorded in the older form (SHA-256 of pandas'
    row hashes, without the ``xxh3:`` prefix) is fingerprinted that way, so records written before
    still compare.

    >>> column_fingerprints(pd.DataFrame({"a": [1.0]}))["a"][:5]
    'xxh3:'
    """
    like = like or {}
    out = {}
    for name in frame.columns:
        column = frame[name]
        if str(like.get(str(name), "xxh3:")).startswith("xxh3:"):
            out[str(name)] = "xxh3:" + column_digest(column)
        else:
            hashes = pd.util.hash_pandas_object(column, index=False).to_numpy(dtype=np.uint64)
            out[str(name)] = hashlib.sha256(hashes.tobytes()).hexdigest()[:32]
    return out