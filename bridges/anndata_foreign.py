"""A cellspec from an AnnData made elsewhere (scimap's MCMICRO import, spatialdata-io, ...).

Such an AnnData has no ``uns["cellspec"]``, so the facts a cellspec needs and
AnnData does not hold must be given: which image and sample each cell belongs
to, the pixel size, where the centroids are and in which unit, and optionally a
rule that turns each var name into a dictionary row (default: kind ``other``).

>>> import anndata as ad, numpy as np, pandas as pd
>>> adata = ad.AnnData(X=np.ones((3, 2)), obs=pd.DataFrame(index=["1", "2", "3"]),
...                    var=pd.DataFrame(index=["CD3", "CD8"]), obsm={"spatial": np.arange(6.0).reshape(3, 2)})
>>> x = from_foreign_anndata(adata, image_id="img1", sample_id="s1", pixel_size=0.5, coordinate_unit="px",
...                          features=intensity_features())
>>> x.feature_ids, x.cells["x"].tolist()
(['cell:CD3:mean', 'cell:CD8:mean'], [0.0, 1.0, 2.0])
>>> x.validate().ok
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cellspec_sc.model.cellspec import CellSpec
from cellspec_sc.errors import InputError
from cellspec_sc.model.provenance import new_provenance, with_history_step
from cellspec_sc.spec.types import as_spec_type, canonical_frame
from cellspec_sc.spec.vocabulary import SPEC_VERSION, vocabulary

from cellspec_sc.bridges.anndata import BRIDGE_VERSION, FUNCTION, carry_obs_columns, dense, warn_not_carried

if TYPE_CHECKING:
    import anndata

FeatureRule = Callable[[str], Mapping[str, Any]]
_DICTIONARY_FIELDS = ("kind", "marker", "compartment", "statistic", "unit")


def other_feature(name: str) -> dict[str, Any]:
    """The default rule: a var name becomes an ``other`` feature ``other:<name>`` in a.u.

    >>> other_feature("Area")["statistic"]
    'Area'
    """
    return {"kind": "other", "marker": None, "compartment": None, "statistic": name, "unit": "a.u."}


def intensity_features(compartment: str = "cell", statistic: str = "mean", unit: str = "a.u.",
                       others: Sequence[str] = ()) -> FeatureRule:
    """A rule for var names that are marker names (scimap/MCMICRO): each becomes the intensity
    feature ``<compartment>:<marker>:<statistic>``; names in ``others`` become ``other`` features.

    >>> intensity_features("nucleus")(" CD3 ")["marker"]
    'CD3'
    """
    def rule(name: str) -> dict[str, Any]:
        if name in others:
            return other_feature(name)
        return {"kind": "intensity", "marker": name.strip(), "compartment": compartment, "statistic": statistic,
                "unit": unit}
    return rule


def from_foreign_anndata(
    adata: anndata.AnnData,
    *,
    image_id: str | None = None,
    image_key: str | None = None,
    sample_id: str | None = None,
    sample_key: str | None = None,
    pixel_size: float | Mapping[str, float] | None = None,
    coordinates: str | tuple[str, str] = "spatial",
    coordinate_unit: str | None = None,
    cell_key: str | None = None,
    features: FeatureRule | None = None,
    producer: Mapping[str, Any] | None = None,
    allow_modified: bool = False,
) -> CellSpec:
    """Build a cellspec from an AnnData without ``uns["cellspec"]``.

    ``image_id``/``image_key``: one image id for all cells, or the obs column holding it (same
    for ``sample_id``/``sample_key``). ``pixel_size``: micrometres per pixel (one value or one
    per image). ``coordinates``: an ``obsm`` key (default ``"spatial"``) or two obs columns;
    ``coordinate_unit``: ``"um"`` or ``"px"`` (pixel centroids are also kept as ``x_px``/``y_px``).
    ``cell_key``: obs column of cell ids (default ``obs_names``). ``features``: var name ->
    dictionary fields (``kind``, ``marker``, ``compartment``, ``statistic``, ``unit``); default
    :func:`other_feature`. Other obs columns are kept (snake_case). ``X`` is taken as the raw
    measurements. Raises :class:`~cellspec_sc.InputError` naming every missing argument.
    """
    del allow_modified  # nothing to compare X against: there is no stored fingerprint
    _check_given(adata, image_id, image_key, sample_id, sample_key, pixel_size, coordinates, coordinate_unit,
                 cell_key)
    obs = adata.obs.reset_index(drop=True)
    n = len(obs)
    cell_ids = _text(obs[cell_key] if cell_key else pd.Series(list(map(str, adata.obs_names))))
    images_of = _text(obs[image_key]) if image_key else _text(pd.Series([image_id] * n, dtype=object))
    samples_of = _text(obs[sample_key]) if sample_key else _text(pd.Series([sample_id] * n, dtype=object))
    images = _images(images_of, samples_of, pixel_size)
    scale = images_of.map(dict(zip(images["image_id"], images["pixel_size"], strict=True))).to_numpy(np.float64)
    xy = _coordinates(adata, obs, coordinates)
    cells = {"cell_id": cell_ids, "image_id": images_of, "sample_id": samples_of}
    if coordinate_unit == "px":
        cells |= {"x": pd.Series(xy[:, 0] * scale), "y": pd.Series(xy[:, 1] * scale),
                  "x_px": pd.Series(xy[:, 0]), "y_px": pd.Series(xy[:, 1])}
    else:
        cells |= {"x": pd.Series(xy[:, 0]), "y": pd.Series(xy[:, 1])}
    used = {cell_key, image_key, sample_key, *(coordinates if isinstance(coordinates, tuple) else ())}
    cells |= _extra_columns(obs, used, set(cells))
    dictionary = _dictionary([str(v) for v in adata.var_names], features or other_feature)
    matrix, counts = _raw_matrix(adata.X, n, len(dictionary))
    parameters = {"image_id": image_id, "image_key": image_key, "sample_id": sample_id, "sample_key": sample_key,
                  "pixel_size": dict(pixel_size) if isinstance(pixel_size, Mapping) else pixel_size,
                  "coordinates": list(coordinates) if isinstance(coordinates, tuple) else coordinates,
                  "coordinate_unit": coordinate_unit, "cell_key": cell_key}
    provenance = new_provenance(producer=dict(producer or {"tool": "unknown", "version": "unknown"}),
                                adapter="anndata", adapter_version=BRIDGE_VERSION, parameters=parameters,
                                counts={"rows_read": n, "rows_kept": n, **counts})
    cells_frame = canonical_frame(pd.DataFrame(cells), "cells")
    warn_not_carried(adata, obsm={coordinates} if isinstance(coordinates, str) else set())
    return CellSpec(
        spec_version=SPEC_VERSION, cells=cells_frame, measurements=matrix, dictionary=dictionary, images=images,
        channels=_channels(images, dictionary), adjacency=None,
        provenance=with_history_step(provenance, "from_anndata", FUNCTION,
                                     {"source": "AnnData without uns['cellspec']", "cells": n,
                                      "features": len(dictionary)}),
    )


def _check_given(adata: anndata.AnnData, image_id: Any, image_key: Any, sample_id: Any, sample_key: Any,
                 pixel_size: Any, coordinates: Any, coordinate_unit: Any, cell_key: Any) -> None:
    missing = []
    if image_id is None and image_key is None:
        missing.append("image_id='<id>' or image_key='<obs column>' (the image of each cell)")
    if sample_id is None and sample_key is None:
        missing.append("sample_id='<id>' or sample_key='<obs column>' (the biological sample of each cell)")
    if pixel_size is None:
        missing.append("pixel_size=<micrometres per pixel> (one value, or a dict image_id -> value)")
    if coordinate_unit not in ("um", "px"):
        missing.append("coordinate_unit='um' or 'px' (the unit of the centroids)")
    if isinstance(coordinates, str) and coordinates not in adata.obsm:
        missing.append(f"coordinates=<obsm key> or ('x column', 'y column') (obsm has no {coordinates!r}; "
                       f"obsm keys: {list(adata.obsm.keys())})")
    absent = [f"{arg}={col!r}" for arg, col in (("image_key", image_key), ("sample_key", sample_key),
                                               ("cell_key", cell_key)) if col is not None and col not in adata.obs]
    if isinstance(coordinates, tuple):
        absent += [f"coordinates column {col!r}" for col in coordinates if col not in adata.obs]
    if absent:
        missing.append(f"obs columns that exist ({', '.join(absent)} not in obs; obs has {list(adata.obs.columns)})")
    if missing:
        raise InputError("AnnData has no uns['cellspec'] (it was not written by cellspec_sc.to_anndata); to build "
                         "a cellspec from it, from_anndata also needs: " + "; ".join(missing))


def _text(series: pd.Series) -> pd.Series:
    values = series.astype(object).where(series.notna(), None)
    return as_spec_type(values.map(lambda v: v if v is None else str(v)), "character").reset_index(drop=True)


def _images(images_of: pd.Series, samples_of: pd.Series, pixel_size: float | Mapping[str, float]) -> pd.DataFrame:
    pairs = pd.DataFrame({"image_id": images_of, "sample_id": samples_of}).drop_duplicates("image_id")
    ids = [str(i) for i in pairs["image_id"]]
    if isinstance(pixel_size, Mapping):
        unknown = [i for i in ids if i not in pixel_size]
        if unknown:
            raise InputError(f"pixel_size has no value for image(s) {unknown}")
        sizes = [float(pixel_size[i]) for i in ids]
    else:
        sizes = [float(pixel_size)] * len(ids)
    frame = pd.DataFrame({"image_id": ids, "sample_id": pairs["sample_id"].to_numpy(object), "pixel_size": sizes})
    return canonical_frame(frame, "images")


def _coordinates(adata: anndata.AnnData, obs: pd.DataFrame, coordinates: str | tuple[str, str]) -> np.ndarray:
    if isinstance(coordinates, tuple):
        return np.column_stack([as_spec_type(obs[c], "double").to_numpy(np.float64, na_value=np.nan)
                                for c in coordinates])
    xy = np.asarray(dense(adata.obsm[coordinates]), dtype=np.float64)
    if xy.ndim != 2 or xy.shape[1] < 2:
        raise InputError(f"obsm[{coordinates!r}] has shape {xy.shape}; expected (n_cells, 2) centroids")
    return xy[:, :2]


def _extra_columns(obs: pd.DataFrame, used: set[Any], taken: set[str]) -> dict[str, pd.Series]:
    names = [name for name in obs.columns if name not in used]
    converted, _, _ = carry_obs_columns(obs, names, taken | set(map(str, obs.columns)))
    return dict(converted.values())


def _dictionary(names: list[str], rule: FeatureRule) -> pd.DataFrame:
    voc = vocabulary()
    rows = []
    for name in names:
        fields = {**other_feature(name), **dict(rule(name))}
        kind = fields["kind"]
        if kind not in voc.kinds:
            raise InputError(f"features rule gave kind {kind!r} for var {name!r}; expected one of {voc.kinds}")
        name_part = fields["statistic"]
        feature_id = voc.feature_id_rule(kind).format(compartment=fields["compartment"], marker=fields["marker"],
                                                      statistic=name_part)
        rows.append({"feature_id": feature_id, **{k: fields[k] for k in _DICTIONARY_FIELDS}, "source_name": name})
    frame = pd.DataFrame(rows, columns=["feature_id", *_DICTIONARY_FIELDS, "source_name"])
    duplicated = frame["feature_id"][frame["feature_id"].duplicated()].tolist()
    if duplicated:
        raise InputError(f"features rule gives the same feature_id to several var names: {duplicated}")
    return canonical_frame(frame, "dictionary")


def _raw_matrix(x: Any, n_obs: int, n_vars: int) -> tuple[np.ndarray, dict[str, int]]:
    matrix = np.zeros((n_obs, n_vars)) if x is None else np.array(dense(x), dtype=np.float64, order="C")
    nonfinite = ~np.isfinite(matrix)
    matrix[nonfinite] = np.nan  # spec section 3: NaN and infinite source values become NA and are counted
    return matrix, {"na_converted": 0, "nonfinite_converted": int(nonfinite.sum())}


def _channels(images: pd.DataFrame, dictionary: pd.DataFrame) -> pd.DataFrame:
    markers = list(dict.fromkeys(m for m, k in zip(dictionary["marker"], dictionary["kind"], strict=True)
                                 if k == "intensity" and isinstance(m, str)))
    ids = images["image_id"].astype(object).tolist()
    frame = pd.DataFrame({"image_id": [i for i in ids for _ in markers],
                          "channel_index": [j + 1 for _ in ids for j in range(len(markers))],
                          "channel_name": markers * len(ids), "marker": markers * len(ids)})
    return canonical_frame(frame, "channels")

