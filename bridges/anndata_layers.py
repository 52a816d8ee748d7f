"""Which matrix of a foreign AnnData holds the raw measurements: ``X``, ``adata.raw`` or a layer.

cellspec measurements are values as the source tool exported them (spec section 3). Tools
often keep them elsewhere than ``X``: scimap's ``mcmicro_to_scimap`` puts ``log1p`` values in
``X`` and the CSV values in ``adata.raw``. So without an explicit ``layer=``, ``X`` is taken only
when nothing suggests it was transformed: ``adata.raw`` (if any) holds the same values, and ``X``
has no negative value and is not ``log1p`` or ``arcsinh(v / c)`` of ``raw`` or of a layer.

>>> import anndata as ad, numpy as np
>>> a = ad.AnnData(X=np.array([[1.0, 30.0], [2.0, 400.0]]))
>>> a.raw = a.copy()
>>> a.X = np.log1p(a.X)
>>> measurement_layer(a, None)
Traceback (most recent call last):
...
cellspec_sc.errors.InputError: X looks transformed: it equals log1p(adata.raw.X)...
>>> measurement_layer(a, "raw")[0][1, 1], measurement_layer(a, "raw")[2]
(np.float64(400.0), 'raw')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cellspec_sc.errors import InputError

from cellspec_sc.bridges.anndata_matrix import dense

if TYPE_CHECKING:
    import anndata

_RTOL = 1e-5  # float32 X (steinbock, many tools) holds transforms to about 6 digits


def measurement_layer(adata: anndata.AnnData, layer: str | None) -> tuple[Any, list[str], str]:
    """(matrix, feature names, layer used) of the raw measurements; refuses a guess (see module doc)."""
    if layer == "raw":
        if adata.raw is None:
            raise InputError("layer='raw' but the AnnData has no adata.raw; pass layer='X' or a layer name "
                             f"(layers: {list(adata.layers.keys())})")
        return adata.raw.X, [str(v) for v in adata.raw.var_names], "raw"
    names = [str(v) for v in adata.var_names]
    if layer is not None and layer != "X":
        if layer not in adata.layers:
            raise InputError(f"layer={layer!r} is not in adata.layers {list(adata.layers.keys())}; pass 'X', 'raw' "
                             "or one of them")
        return adata.layers[layer], names, layer
    if layer is None and adata.X is not None:
        problem = transformed_x(adata)
        if problem is not None:
            raise InputError(f"{problem}. cellspec measurements are raw values as the tool exported them (spec "
                             "section 3), so from_anndata does not guess which matrix holds them: pass "
                             f"layer='raw' (adata.raw.X; scimap's mcmicro_to_scimap keeps the CSV values there), "
                             f"layer='<name>' (layers: {list(adata.layers.keys())}), or layer='X' to store X as "
                             "it is")
    return adata.X, names, "X"


def transformed_x(adata: anndata.AnnData) -> str | None:
    """Why ``X`` does not look like raw measurements, or None."""
    x = dense(adata.X).astype(np.float64, copy=False)
    raw = _raw_matrix(adata)
    if raw is not None:
        if np.array_equal(x, raw, equal_nan=True):
            return None
        how = transform_between(raw, x)
        return (f"X looks transformed: it equals {how.format('adata.raw.X')}" if how else
                "adata.raw holds other values than X (X may be normalised, scaled or subset)")
    for key, values in adata.layers.items():
        if values is not None and tuple(values.shape) == x.shape:
            how = transform_between(dense(values).astype(np.float64, copy=False), x)
            if how:
                return f"X looks transformed: it equals {how.format(f'layers[{key!r}]')}"
    if (x[np.isfinite(x)] < 0).any():
        return "X looks transformed: it has negative values (scaled, centred or background-subtracted)"
    return None


def transform_between(source: np.ndarray, x: np.ndarray) -> str | None:
    """``"log1p({})"`` or ``"arcsinh({} / c)"`` when ``x`` is that transform of ``source``, else None.

    >>> v = np.array([[0.0, 10.0], [100.0, 5000.0]])
    >>> transform_between(v, np.arcsinh(v / 150.0))
    'arcsinh({} / 150)'
    """
    finite = np.isfinite(source) & np.isfinite(x)
    s, t = source[finite], x[finite]
    if s.size == 0 or np.array_equal(s, t):
        return None
    if np.allclose(np.log1p(s), t, rtol=_RTOL, atol=1e-8):
        return "log1p({})"
    useful = np.abs(t) > 1e-3
    if useful.any():
        cofactor = float(np.median(s[useful] / np.sinh(t[useful])))
        if np.isfinite(cofactor) and cofactor > 0 and np.allclose(np.arcsinh(s / cofactor), t, rtol=_RTOL, atol=1e-8):
            return f"arcsinh({{}} / {cofactor:.6g})"
    return None


def _raw_matrix(adata: anndata.AnnData) -> np.ndarray | None:
    """``adata.raw.X`` in ``var`` order when raw has every var name; raw of other features counts as differing."""
    raw = adata.raw
    if raw is None or raw.X is None:
        return None
    positions = raw.var_names.get_indexer(adata.var_names)
    values = dense(raw.X).astype(np.float64, copy=False)
    if (positions < 0).any():
        return np.full((adata.n_obs, adata.n_vars), np.nan)
    return values[:, positions]
