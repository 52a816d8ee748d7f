"""Checks of the optional adjacency table (section 10, "adjacency")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cellspec_sc.spec import arrow_text, is_arrow_text
from cellspec_sc.validation._context import (
    Context,
    Problem,
    Skip,
    bad_rows,
    check,
    column_types,
    merge,
    repeated,
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
    missing = endpoints_missing(cells, adj, _shared_codes(ctx, adj))
    return bad_rows("adjacency", None, missing, "contact with a cell not in cells")


def _shared_codes(ctx: Context, adj: pd.DataFrame) -> ContactCodes | None:
    """The :class:`ContactCodes` of the object, made once for both contact checks (None: some id is not Arrow text
    or is missing, or the cells' ids are unusable)."""
    def make() -> ContactCodes | None:
        try:
            cells = [ctx.strings("cells", "image_id"), ctx.strings("cells", "cell_id")]
        except Skip:
            return None
        return ContactCodes.of(cells, adj)
    return ctx.shared("contact codes", make)


class ContactCodes:
    """The ids of the cells and of both ends of every contact as integers: each cell id and contact end its code in
    one dictionary of them all, each image id (the cells', then the contacts') its code in another (Arrow encodes
    the columns as the chunks of one column: one hash table, nothing copied). Both contact checks answer from them:
    no text is joined or hashed per contact.

    >>> text = lambda *v: pd.Series(v, dtype="string[pyarrow]")
    >>> adj = pd.DataFrame({"image_id": text("i", "j", "k", "i"), "cell_id_a": text("1", "1", "1", "1"),
    ...                     "cell_id_b": text("2", "2", "1", "2")})
    >>> codes = ContactCodes.of([text("i", "i", "j"), text("1", "2", "1")], adj)
    >>> codes.endpoints_found().tolist(), repeated(codes.pair_keys()).tolist()
    ([True, False, False, True], [True, False, False, True])
    """

    def __init__(self, texts: list[pa.Array]) -> None:
        image, cell, contact_image, self.cell_a, self.cell_b = texts
        self.n, self.m = len(cell), len(self.cell_a)
        self.ids, self.width = joint_codes(cell, self.cell_a, self.cell_b)
        self.images, self.n_images = joint_codes(image, contact_image)

    @classmethod
    def of(cls, cells: list[pd.Series] | None, adj: pd.DataFrame) -> ContactCodes | None:
        """The codes of ``cells`` ([image_id, cell_id]; None: no cells, for the pair check alone) and ``adj``; None
        unless every value is Arrow text and none is missing."""
        columns = cells if cells is not None else [pd.Series([], dtype="string[pyarrow]")] * 2
        texts = [_present_text(s) for s in (*columns, adj["image_id"], adj["cell_id_a"], adj["cell_id_b"])]
        return cls(texts) if all(text is not None for text in texts) else None

    def endpoints_found(self) -> np.ndarray:
        """Whether both ends of each contact are cells: (image, cell_id_a) and (image, cell_id_b) among the cells'
        (image, cell_id) pairs, each pair one integer."""
        n, m, ids = self.n, self.m, self.ids
        known = self.images[:n] * self.width + ids[:n]
        where = self.images[n:] * self.width
        return np.isin(where + ids[n:n + m], known) & np.isin(where + ids[n + m:], known)

    def pair_keys(self) -> np.ndarray:
        """One integer per contact, equal for two contacts exactly when their (image_id, cell_id_a, cell_id_b)
        are."""
        n, m, ids = self.n, self.m, self.ids
        return folded((self.images[n:], self.n_images), (ids[n:n + m], self.width), (ids[n + m:], self.width))


def endpoints_missing(cells: list[pd.Series], adj: pd.DataFrame, codes: ContactCodes | None = None) -> np.ndarray:
    """Rows of ``adj`` whose (image_id, cell_id_a) or (image_id, cell_id_b) is not a (image_id, cell_id) of
    ``cells``: by integer codes of the ids (:class:`ContactCodes`, ``codes`` when the caller made them) when every
    value is Arrow text and none is missing, else by pandas' MultiIndex (same answer, a hundred times the fixed
    cost)."""
    if codes is None:
        codes = ContactCodes.of(cells, adj)
    if codes is not None:
        return ~codes.endpoints_found()
    image = adj["image_id"]
    index = pd.MultiIndex.from_arrays([_objects(s) for s in cells])
    missing = np.zeros(len(adj), dtype=bool)
    for column in ("cell_id_a", "cell_id_b"):
        pair = pd.MultiIndex.from_arrays([image.astype(object), adj[column].astype(object)])
        missing |= ~pair.isin(index)
    return missing


def joint_codes(*columns: pa.Array) -> tuple[np.ndarray, int]:
    """The code of every value of ``columns`` (text without missing values), in order, in one dictionary of them all
    (Arrow encodes the columns as the chunks of one column: one hash table, nothing copied), and its size.

    >>> codes, size = joint_codes(pa.array(["a", "b"]), pa.array(["b", "c"]))
    >>> codes.tolist(), size
    ([0, 1, 1, 2], 3)
    """
    encoded = pc.dictionary_encode(pa.chunked_array(columns, type=columns[0].type))
    codes = [chunk.indices.to_numpy().astype(np.int64) for chunk in encoded.chunks]
    joined = np.concatenate(codes) if codes else np.zeros(0, dtype=np.int64)
    return joined, int(joined.max()) + 1 if joined.size else 0  # codes number the values from 0 as first seen


def folded(*parts: tuple[np.ndarray, int]) -> np.ndarray:
    """One integer per row from ``parts`` of (codes, how many codes there are): equal for two rows exactly when their
    codes are, the parts folded in one by one (the key renumbered densely first when a fold could pass 2**62).

    >>> folded((np.array([0, 0, 1]), 2), (np.array([2, 2, 2]), 3)).tolist()
    [2, 2, 5]
    """
    key, bound = np.zeros(len(parts[0][0]), dtype=np.int64), 1
    for codes, size in parts:
        size = max(size, 1)
        if bound * size >= 1 << 62:
            key = np.unique(key, return_inverse=True)[1].astype(np.int64).reshape(-1)
            bound = int(key.max()) + 1 if len(key) else 1
        key = key * size + codes
        bound *= size
    return key


def _present_text(values: pd.Series) -> pa.Array | None:
    """Arrow-backed text without a missing value as one Arrow array of large strings (:func:`arrow_text`: one type
    for every column, as Arrow's lookups take no mix of string views and strings), else None."""
    text = arrow_text(values) if is_arrow_text(values) else None
    if text is None or text.null_count:
        return None
    return text.combine_chunks() if text.num_chunks else pa.array([], type=pa.large_string())


def _objects(values: pd.Series) -> pd.Series:
    """Text as str objects with None for NA, as :meth:`Context.text` gives it."""
    return values.astype(object).where(values.notna(), None)


@check("adjacency_pairs")
def _adjacency_pairs(ctx: Context) -> Problem | None:
    adj = _adjacency(ctx)
    unordered, dup = pair_problems(adj, _shared_codes(ctx, adj))
    return merge([p for p in (bad_rows("adjacency", "cell_id_a", unordered,
                                        "cell_id_a not before cell_id_b in byte order"),
                               bad_rows("adjacency", None, dup, "pair listed more than once")) if p])


def pair_problems(adj: pd.DataFrame, codes: ContactCodes | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(rows whose cell_id_a is not before cell_id_b in byte order, NA read as ""; rows whose pair is listed more
    than once): by Arrow and integer codes (``codes``: the endpoint check's, when made) when every value is Arrow
    text and none is missing, else by pandas and numpy (the same answer)."""
    if codes is None:
        codes = ContactCodes.of(None, adj)
    if codes is not None:  # Arrow compares text by its UTF-8 bytes: byte order, as the spec says
        return ~pc.less(codes.cell_a, codes.cell_b).to_numpy(zero_copy_only=False), repeated(codes.pair_keys())
    a = adj["cell_id_a"].astype(object).where(adj["cell_id_a"].notna(), "")
    b = adj["cell_id_b"].astype(object).where(adj["cell_id_b"].notna(), "")
    # UTF-8 byte order equals the code point order Python compares str by (numpy's str arrays would drop trailing
    # NUL characters: "a" and "a\0" would compare equal)
    unordered = ~np.fromiter((x < y for x, y in zip(a, b, strict=True)), dtype=bool, count=len(adj))
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
