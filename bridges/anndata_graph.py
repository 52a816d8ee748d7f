"""Adjacency as scverse graphs: the contacts as ``obsp`` matrices, and a warning when analysis replaced them.

>>> import cellspec_sc as cs
>>> x = cs.example(adjacency=True)
>>> ones, shared = adjacency_matrices(x.cells, x.adjacency)
>>> ones.shape == (x.n_cells, x.n_cells) and (ones != ones.T).nnz == 0
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cellspec_sc.bridges.anndata_keys import CONNECTIVITIES_KEY, warn
from cellspec_sc.bridges.anndata_obs import double_column
from cellspec_sc.model import contact_positions

if TYPE_CHECKING:
    import anndata

def adjacency_matrices(cells: pd.DataFrame, adjacency: pd.DataFrame) -> tuple[Any, Any]:
    """Symmetric cells x cells CSR matrices: 1.0 for every contact, and its shared boundary (um).

    Contacts whose cells are not in ``cells`` are left out (the uns table keeps them).
    """
    from scipy import sparse

    a, b = contact_positions(cells, adjacency)
    found = (a >= 0) & (b >= 0)
    a, b = a[found], b[found]
    boundary = double_column(adjacency, "shared_boundary")[found]
    rows, cols = np.concatenate([a, b]), np.concatenate([b, a])
    n = len(cells)
    ones = sparse.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    shared = sparse.csr_matrix((np.concatenate([boundary, boundary]), (rows, cols)), shape=(n, n))
    return ones, shared


def warn_replaced_graph(adata: anndata.AnnData, cells: pd.DataFrame, adjacency: pd.DataFrame | None) -> None:
    """Warn when ``obsp["spatial_connectivities"]`` is no longer the graph of the cellspec's contacts
    (``sq.gr.spatial_neighbors`` writes its own graph under that key): it is not carried."""
    from scipy import sparse

    if CONNECTIVITIES_KEY not in adata.obsp:
        return
    graph = sparse.csr_matrix(adata.obsp[CONNECTIVITIES_KEY])
    if adjacency is not None:
        expected, _ = adjacency_matrices(cells, adjacency)
        if graph.shape == expected.shape and (graph != expected).nnz == 0:
            return
    stored = "no adjacency" if adjacency is None else f"its {len(adjacency)} stored contacts"
    warn(f"obsp[{CONNECTIVITIES_KEY!r}] is not the cellspec adjacency any more ({graph.nnz} non-zero entries; "
         "replaced, e.g. by squidpy's spatial_neighbors) and is not carried into the cellspec, which keeps "
         f"{stored}. To keep both, build squidpy's graph with key_added='<name>' (the bridge's graph stays); keep "
         "what you computed from it as obs columns (they become cells columns); or replace the contacts with "
         "x.replace(adjacency=<table with method 'mask_touching', 'polygon_intersection' or 'delaunay'>), as "
         "docs/anndata.md shows")


