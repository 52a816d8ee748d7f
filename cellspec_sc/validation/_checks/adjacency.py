"""Checks of the optional adjacency table (section 10, "adjacency")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc.spec import is_arrow_text
from cellspec_sc.validation._context import (
    Context,
    Problem,
    Skip,
    bad_rows,
    check,
    column_types,
    merge,
    required_columns,
)


def _adjacency(ctx: Context) -> pd.DataFrame:
    adj = ctx.part("adjacency")
    if adj is None:
        raise Skip("no adjacency")
    if "adjacency_columns" in ctx.broken:
        raise Skip("adjacency columns are missing or mistyped")
    return adj


@check("adjacency_columns")
def _adjacency_columns(ctx: Context) -> Problem | None:
    adj = ctx.part("adjacency")
    if adj is None:
        raise Skip("no adjacency")
    problem = merge([p for p in (required_columns(ctx, "adjacency"), column_types(ctx, "adjacency")) if p])
    if problem:
        ctx.broken.add("adjacency_columns")
    return problem


@check("adjacency_endpoints")
def _adjacency_endpoints(ctx: Context) -> Problem | None:
    adj = _adjacency(ctx)
    cells = [ctx.strings("cells", "image_id"), ctx.strings("cells", "cell_id")]
    missing = endpoints_missing(cells, adj)
    return bad_rows("adjacency", None, missing, "contact with a cell not in cells")


def endpoints_missing(cells: list[pd.Series], adj: pd.DataFrame) -> np.ndarray:
    """Rows of ``adj`` whose (image_id, cell_id_a) or (image_id, cell_id_b) is not a (image_id, cell_id) of
    ``cells``: by Arrow on one text key per pair when no value is missing or holds a NUL (which could join two
    different pairs into one key), else by pandas' MultiIndex (same answer, a hundred times the fixed cost)."""
    image = adj["image_id"]
    keys = joined_keys(cells)
    if keys is not None:
        pairs = [joined_keys([image, adj[column]]) for column in ("cell_id_a", "cell_id_b")]
        if all(pair is not None for pair in pairs):  # both ends looked up at once: one hash table of the keys
            found = pc.is_in(pa.concat_arrays(pairs), value_set=keys).to_numpy(zero_copy_only=False)
            return ~(found[:len(adj)] & found[len(adj):])
    index = pd.MultiIndex.from_arrays([_objects(s) for s in cells])
    missing = np.zeros(len(adj), dtype=bool)
    for column in ("cell_id_a", "cell_id_b"):
        pair = pd.MultiIndex.from_arrays([image.astype(object), adj[column].astype(object)])
        missing |= ~pair.isin(index)
    return missing


def _objects(values: pd.Series) -> pd.Series:
    """Text as str objects with None for NA, as :meth:`Context.text` gives it."""
    return values.astype(object).where(values.notna(), None)


def joined_keys(columns: list[pd.Series]) -> pa.Array | None:
    """One text key per row joining ``columns`` (Arrow-backed text) with NUL, or None when a column is not Arrow text,
    has a missing value or holds a NUL itself (then two different rows could give the same key).

    >>> text = pd.Series(["a", "b"], dtype="string[pyarrow]")
    >>> joined_keys([text, text.str.upper()]).to_pylist(), joined_keys([text, text.where(text == "a")])
    (['a\\x00A', 'b\\x00B'], None)
    """
    arrays = []
    for values in columns:
        if not is_arrow_text(values):
            return None
        array = pa.array(values.array)
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks() if array.num_chunks else pa.array([], type=array.type)
        if array.null_count or (len(array) and pc.any(pc.match_substring(array, "\x00")).as_py()):
            return None
        arrays.append(array.cast(pa.large_string()))
    return pc.binary_join_element_wise(*arrays, pa.scalar("\x00", type=pa.large_string()))


@check("adjacency_pairs")
def _adjacency_pairs(ctx: Context) -> Problem | None:
    adj = _adjacency(ctx)
    unordered, dup = pair_problems(adj)
    return merge([p for p in (bad_rows("adjacency", "cell_id_a", unordered,
                                        "cell_id_a not before cell_id_b in byte order"),
                               bad_rows("adjacency", None, dup, "pair listed more than once")) if p])


def pair_problems(adj: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(rows whose cell_id_a is not before cell_id_b in byte order, NA read as ""; rows whose pair is listed more
    than once): by Arrow when no value is missing or holds a NUL, else by pandas and numpy (the same answer)."""
    keys = joined_keys([adj["image_id"], adj["cell_id_a"], adj["cell_id_b"]])
    if keys is not None:
        a, b = (pa.array(adj[c].array) for c in ("cell_id_a", "cell_id_b"))
        # Arrow compares text by its UTF-8 bytes: byte order, as the spec says
        unordered = ~pc.less(a, b).to_numpy(zero_copy_only=False)
        codes = pc.dictionary_encode(keys).indices.to_numpy(zero_copy_only=False)
        dup = np.bincount(codes, minlength=1)[codes] > 1 if len(codes) else np.zeros(0, dtype=bool)
        return unordered, dup
    a = adj["cell_id_a"].astype(object).where(adj["cell_id_a"].notna(), "")
    b = adj["cell_id_b"].astype(object).where(adj["cell_id_b"].notna(), "")
    # UTF-8 byte order equals Unicode code point order, which is how numpy compares str arrays
    unordered = ~(np.asarray(a, dtype=str) < np.asarray(b, dtype=str)) if len(adj) else np.zeros(0, dtype=bool)
    dup = adj[["image_id", "cell_id_a", "cell_id_b"]].duplicated(keep=False).to_numpy()
    return unordered, dup


@check("adjacency_values")
def _adjacency_values(ctx: Context) -> Problem | None:
    adj = _adjacency(ctx)
    boundary = adj["shared_boundary"].to_numpy(dtype=np.float64, na_value=np.nan)
    return merge([p for p in (
        bad_rows("adjacency", "shared_boundary", ~(np.isfinite(boundary) & (boundary >= 0)),
                  "shared_boundary not finite and non-negative"),
        bad_rows("adjacency", "method", ~known_text(adj["method"], ctx.voc.adjacency_methods),
                  f"method not one of {', '.join(ctx.voc.adjacency_methods)}"),
    ) if p])


def known_text(values: pd.Series, allowed: tuple[str, ...]) -> np.ndarray:
    """``values.isin(allowed)`` as a numpy bool array; Arrow text is looked up by Arrow itself (what pandas does
    for it, without its overhead).

    >>> known_text(pd.Series(["a", None, "c"], dtype="string[pyarrow]"), ("a", "b")).tolist()
    [True, False, False]
    """
    if is_arrow_text(values) and allowed:
        arrow = pa.array(values.array)
        found = pc.is_in(arrow, value_set=pa.array(list(allowed), type=arrow.type))
        return np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)
    return values.isin(allowed).to_numpy(dtype=bool)
