"""cells and their contacts as scverse ``obs`` and ``obsp``, and back: row names, categoricals for grouping,
analysis columns (``leiden``, ...) turned into cells columns with snake_case names, the contacts as squidpy's graph.

>>> snake_case("Leiden Cluster")
'leiden_cluster'
>>> import cellspec_sc as cs
>>> x = cs.example(adjacency=True)
>>> ones, shared = adjacency_matrices(x.cells, x.adjacency)
>>> ones.shape == (x.n_cells, x.n_cells) and (ones != ones.T).nnz == 0
True
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc.bridges.anndata._categories import colours_key, scverse_categorical
from cellspec_sc.bridges.anndata._keys import CONNECTIVITIES_KEY, warn
from cellspec_sc.model import contact_positions, first_free_name
from cellspec_sc.spec import as_spec_type, vocabulary

if TYPE_CHECKING:
    import anndata

CATEGORICAL_COLUMNS = ("image_id", "sample_id", "classification")


def scverse_obs(cells: pd.DataFrame, provenance: Any = None) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """``cells`` with the text columns squidpy, scimap and spatialdata-plot group by as categoricals:
    ``image_id``, ``sample_id``, ``classification``, ``region__*`` and any other text column (but
    ``cell_id``) with at most half as many distinct values as rows; and scanpy's ``uns["<column>_colors"]`` of
    each. Categories follow the column's stored order and colours (``provenance``, see
    :mod:`cellspec_sc.display`), else their natural order and the default palette. ``from_anndata`` restores
    them to text from the stored spec types, so the round trip stays exact.

    >>> cells = pd.DataFrame({"cell_id": ["1", "2", "3"], "image_id": ["a", "a", "b"], "note": ["x", "y", "z"]},
    ...                      dtype="string")
    >>> obs, colours = scverse_obs(cells)
    >>> obs.dtypes.astype(str).tolist(), colours
    (['string', 'category', 'string'], {'image_id_colors': ['#1f77b4', '#ff7f0e']})
    """
    out, colours = {}, {}
    for name in cells.columns:
        column = cells[name]
        if name != "cell_id" and isinstance(column.dtype, pd.StringDtype):
            encoded = text_array(column).dictionary_encode()
            if name in CATEGORICAL_COLUMNS or str(name).startswith("region__") or \
                    len(encoded.dictionary) <= len(column) // 2:
                column, colours[colours_key(name)] = scverse_categorical(column, str(name), provenance,
                                                                         sorted_categorical(encoded))
        out[name] = column
    return pd.DataFrame(out, index=cells.index, columns=cells.columns), colours


def sorted_categorical(encoded: pa.DictionaryArray) -> pd.Categorical:
    """A dictionary-encoded Arrow text array as the categorical pandas makes of the same values
    (``pd.Categorical`` of an object Series: categories sorted, object dtype, NA as code -1), without
    passing a million values through Python objects. Arrow orders text by its UTF-8 bytes, which is
    the order of code points that Python sorts by.

    >>> sorted_categorical(pa.array(["b", None, "a", "b"]).dictionary_encode())
    ['b', NaN, 'a', 'b']
    Categories (2, object): ['a', 'b']
    """
    order = pc.sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(order.size + 1, dtype=np.int64)
    rank[order], rank[-1] = np.arange(order.size), -1
    positions = encoded.indices.fill_null(order.size).to_numpy(zero_copy_only=False)
    categories = pd.Index(encoded.dictionary.take(order).to_numpy(zero_copy_only=False), dtype=object)
    return pd.Categorical.from_codes(rank[positions], categories=categories)


def text_array(column: pd.Series | pd.Index) -> pa.Array:
    """A text column as one Arrow string array (NA as null), shared with pandas where it is Arrow already.

    >>> text_array(pd.Series(["a", None], dtype="string")).to_pylist()
    ['a', None]
    """
    return _one_chunk(pa.array(column.array, type=pa.string(), from_pandas=True))


def obs_names(cells: pd.DataFrame) -> np.ndarray:
    """Unique row names ``<image_id>:<cell_id>``; ``\\`` and ``:`` in image_id are escaped so
    that different keys never give the same name.

    >>> obs_names(pd.DataFrame({"image_id": ["img1", "a:b"], "cell_id": ["001", "c"]})).tolist()
    ['img1:001', 'a\\\\:b:c']
    """
    if all(isinstance(cells[c].dtype, pd.StringDtype) for c in ("image_id", "cell_id")):
        return _joined_in_arrow(cells["image_id"], cells["cell_id"])
    codes, images = pd.factorize(cells["image_id"].astype(object).to_numpy())
    prefixes = np.array([_escape(i) for i in images] + ["<NA>"], dtype=object)[codes]
    return np.array([f"{i}:{c}" for i, c in zip(prefixes.tolist(), cells["cell_id"].astype(object).tolist(),
                                                 strict=True)], dtype=object)


def _joined_in_arrow(image_id: pd.Series, cell_id: pd.Series) -> np.ndarray:
    """:func:`obs_names` of text columns, joined by Arrow (half the time of Python for a million cells)."""

    images = text_array(image_id).dictionary_encode()
    escaped = pa.array([_escape(i) for i in images.dictionary.to_pylist()] + ["<NA>"], type=pa.string())
    prefixes = escaped.take(images.indices.fill_null(len(images.dictionary)))
    ids = text_array(cell_id).fill_null("<NA>")  # f"{pd.NA}" is "<NA>" too
    return pc.binary_join_element_wise(prefixes, ids, ":").to_numpy(zero_copy_only=False)


def _one_chunk(array: Any) -> Any:
    """An Arrow-backed pandas column (e.g. after pd.concat) converts to a ChunkedArray: make it one array."""
    return array.combine_chunks() if hasattr(array, "combine_chunks") else array


def _escape(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace(":", "\\:")


def double_column(frame: pd.DataFrame, column: str) -> np.ndarray:
    """``frame[column]`` as float64 with NaN for NA (all NaN when there is no such column)."""
    if column not in frame:
        return np.full(len(frame), np.nan)
    return as_spec_type(frame[column], "double").to_numpy(dtype=np.float64, na_value=np.nan)


def carry_obs_columns(obs: pd.DataFrame, names: list[Any], taken: set[str]
                      ) -> tuple[dict[Any, tuple[str, pd.Series]], dict[str, str], list[str]]:
    """Convert analysis columns ``names`` of ``obs`` to cells columns: ``{name: (snake_case name,
    column)}``, the renamed ones and those of no cellspec type (dropped), with one warning each."""
    out: dict[Any, tuple[str, pd.Series]] = {}
    renamed, dropped = {}, []
    for name in names:
        column = analysis_column(obs[name].reset_index(drop=True))
        if column is None:
            dropped.append(str(name))
            continue
        used = {new for new, _ in out.values()}
        new_name = unique_snake_case(str(name), (taken | used | spec_cells_columns()) - {str(name)})
        if new_name != name:
            renamed[str(name)] = new_name
        out[name] = (new_name, column)
    if renamed:
        warn("obs columns renamed to snake_case for the cellspec: " +
             ", ".join(f"{old!r} -> {new!r}" for old, new in renamed.items()))
    if dropped:
        warn(f"obs columns {dropped} hold values of no cellspec type and are not carried into the cellspec")
    return out, renamed, dropped


_SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
_RESERVED = ("region__", "boundary_distance__")


def snake_case(name: str) -> str:
    """``name`` in snake_case (lower case, runs of other characters as one ``_``).

    >>> snake_case("Leiden Cluster"), snake_case("CD3+ cells"), snake_case("1st")
    ('leiden_cluster', 'cd3_cells', 'x1st')
    """
    if _SNAKE.match(name) or name.startswith(_RESERVED):
        return name
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)  # camelCase -> camel_Case
    out = re.sub(r"[^a-z0-9]+", "_", spaced.lower()).strip("_") or "column"
    return out if out[0].isalpha() else f"x{out}"


def spec_cells_columns() -> set[str]:
    """Names the spec defines for cells: a new column is never renamed onto one of them."""
    return {column.name for column in vocabulary().columns("cells")}


def unique_snake_case(name: str, taken: set[str]) -> str:
    """:func:`snake_case` of ``name``, with ``_2``, ``_3``, ... appended if that name is taken."""
    return first_free_name(snake_case(name), taken)


def analysis_column(column: pd.Series) -> pd.Series | None:
    """A column added by analysis in its cellspec type, or None if it has none.

    Categoricals (``leiden``) become character, any float double, small integers integer,
    integers beyond int32 double, booleans logical.

    >>> analysis_column(pd.Series(pd.Categorical(["0", "1"]))).dtype
    <StringDtype(na_value=<NA>)>
    """
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        values = column.astype(object).where(column.notna(), None)
        return as_spec_type(values.map(lambda v: v if v is None else str(v)), "character")
    if pd.api.types.is_bool_dtype(dtype):
        return as_spec_type(column, "logical")
    if pd.api.types.is_integer_dtype(dtype):
        info = np.iinfo(np.int32)
        values = column.dropna()
        fits = values.empty or (int(values.min()) >= info.min and int(values.max()) <= info.max)
        return as_spec_type(column, "integer" if fits else "double")
    if pd.api.types.is_float_dtype(dtype):
        return as_spec_type(column, "double")
    if isinstance(dtype, pd.StringDtype) or (dtype == np.dtype(object) and column.dropna().map(type).eq(str).all()):
        return as_spec_type(column, "character")
    return None


# -- the contacts as obsp graphs ---------------------------------------------------------------------------------
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
