"""A cellspec from an AnnData made elsewhere (scimap's MCMICRO import, spatialdata-io, ...): the options that say
what AnnData does not hold, rules that turn var names into dictionary rows, presets for tables of known tools, and
which matrix holds the raw measurements.

Such an AnnData has no ``uns["cellspec"]``, so the facts a cellspec needs and
AnnData does not hold must be given: which image and sample each cell belongs
to, the pixel size, where the centroids are, in which unit and (for pixels)
which pixel convention, which matrix holds the raw measurements, and optionally
a rule that turns each var name into a dictionary row (default: kind ``other``).
Presets for tables of known tools (:data:`PRESETS`) give all of it but
the pixel size.

Presets set keys, coordinate order, pixel convention, layer, shape columns and feature kinds, so that
``cs.from_anndata(a, preset="scimap", pixel_size=0.65)`` gives the same cells, centroids and measurements as
reading the tool's table directly (no table of these tools holds the pixel size):

| preset | made by | what it sets |
| --- | --- | --- |
| ``scimap`` | ``sm.pp.mcmicro_to_scimap`` | image and sample from ``imageid``, cell ids from ``CellID``, centroids \
from ``X_centroid``/``Y_centroid`` (pixel centres, regionprops), measurements from ``adata.raw`` (``X`` holds \
``log1p``), ``Area`` ... as shape features |
| ``spatialdata-io:mcmicro`` | ``spatialdata_io.mcmicro`` | image and sample from ``region``, ``CellID``, \
``obsm["spatial"]`` (x, y pixel centres), ``X`` |
| ``spatialdata-io:steinbock`` | ``spatialdata_io.steinbock`` | image and sample from ``image``, ``cell_id``, \
``obsm["spatial"]`` in (y, x) order (``centroid-0``, ``centroid-1``), ``X`` (mean intensities), ``area`` ... as \
shape features |

Feature ids follow :func:`cellspec_sc.readers.mcmicro.classify_columns` (the MCMICRO reader's own
rule) for mcquant tables, so ``cell:CD3D:mean`` and ``cell:area`` (px2) name the same columns as
``cs.read_mcmicro``; a whole-cell ``area`` in px2 also gives ``cells.area`` in um2.

cellspec measurements are values as the source tool exported them (spec section 3). Tools
often keep them elsewhere than ``X``: scimap's ``mcmicro_to_scimap`` puts ``log1p`` values in
``X`` and the CSV values in ``adata.raw``. So without an explicit ``layer=``, ``X`` is taken only
when nothing suggests it was transformed: ``adata.raw`` (if any) holds the same values, and ``X``
has no negative value and is not ``log1p`` or ``arcsinh(v / c)`` of ``raw`` or of a layer
(:func:`measurement_layer`).

>>> import anndata as ad, numpy as np, pandas as pd
>>> adata = ad.AnnData(X=np.ones((3, 2)), obs=pd.DataFrame(index=["1", "2", "3"]),
...                    var=pd.DataFrame(index=["CD3", "CD8"]), obsm={"spatial": np.arange(6.0).reshape(3, 2)})
>>> x = from_foreign_anndata(adata, image_id="img1", sample_id="s1", pixel_size=0.5, coordinate_unit="px",
...                          pixel_origin="center", features=intensity_features())
>>> x.feature_ids, x.cells["x"].tolist()
(['cell:CD3:mean', 'cell:CD8:mean'], [0.25, 1.25, 2.25])
>>> x.validate().ok
True
>>> sorted(PRESETS)
['scimap', 'spatialdata-io:mcmicro', 'spatialdata-io:steinbock']
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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cellspec_sc.bridges.anndata._categories import captured_styles
from cellspec_sc.bridges.anndata._keys import FUNCTION, warn, warn_not_carried
from cellspec_sc.bridges.anndata._matrix import dense
from cellspec_sc.bridges.anndata._obs import carry_obs_columns
from cellspec_sc.errors import InputError
from cellspec_sc.model import CellSpec, first_free_name, new_provenance, with_history_step
from cellspec_sc.readers.mcmicro import SHAPES, classify_columns, mask_compartment, split_file_name
from cellspec_sc.spec import SPEC_VERSION, as_spec_type, canonical_frame, vocabulary

if TYPE_CHECKING:
    import anndata

ADAPTER_VERSION = "1"  # provenance reader.adapter_version of a cellspec built from a foreign AnnData

PIXEL_ORIGINS = {
    "corner": "um = px * pixel_size (pixel coordinates measured from the image's top-left corner: QuPath)",
    "center": "um = (px + 0.5) * pixel_size (pixel i has its centre at i: scikit-image regionprops, mcquant, "
              "steinbock, scimap, spatialdata-io's mcmicro and steinbock readers)",
}


@dataclass(frozen=True)
class ForeignOptions:
    """What :func:`from_foreign_anndata` needs to know about a foreign AnnData (see there)."""

    image_id: str | None = None
    image_key: str | None = None
    sample_id: str | None = None
    sample_key: str | None = None
    pixel_size: float | Mapping[str, float] | None = None
    coordinates: str | tuple[str, str] = "spatial"
    coordinate_order: str = "xy"
    coordinate_unit: str | None = None
    pixel_origin: str | None = None
    cell_key: str | None = None
    layer: str | None = None
    features: FeatureRule | None = None
    obs_features: tuple[str, ...] = ()
    drop_obs: tuple[str, ...] = ()
    producer: Mapping[str, Any] | None = None
    preset: str | None = None


def from_foreign_anndata(adata: anndata.AnnData, *, preset: str | None = None, allow_modified: bool = False,
                         **options: Any) -> CellSpec:
    """Build a cellspec from an AnnData without ``uns["cellspec"]``.

    ``preset``: a table made by a known tool (``"scimap"``, ``"spatialdata-io:mcmicro"``,
    ``"spatialdata-io:steinbock"``, :data:`PRESETS`) sets every option below but the
    pixel size; options given explicitly win. The options:

    ``image_id``/``image_key``: one image id for all cells, or the obs column holding it (same
    for ``sample_id``/``sample_key``). ``pixel_size``: micrometres per pixel (one value or one
    per image). ``coordinates``: an ``obsm`` key (default ``"spatial"``) or two obs columns;
    ``coordinate_order``: ``"xy"`` (default) or ``"yx"`` (scikit-image ``centroid-0`` first);
    ``coordinate_unit``: ``"um"`` or ``"px"``; with ``"px"``, ``pixel_origin`` must say
    ``"corner"`` (um = px * pixel_size) or ``"center"`` (um = (px + 0.5) * pixel_size); the
    pixel centroids in the spec's frame are kept as ``x_px``/``y_px``. ``cell_key``: obs column
    of cell ids (default ``obs_names``). ``layer``: where the raw measurements are: ``"X"``,
    ``"raw"`` (``adata.raw``) or a layer name; without it, ``X`` is refused when ``adata.raw``
    differs from it or it looks transformed (:func:`measurement_layer`).
    ``features``: var name -> dictionary fields (``kind``, ``marker``, ``compartment``,
    ``statistic``, ``unit``); default :func:`other_feature`. ``obs_features``: obs columns that
    are measurements (``Area``, ...), appended to the var features and described by the same
    rule; a cell-compartment shape feature ``area`` in ``px2`` or ``um2`` also gives
    ``cells.area`` in um2. ``drop_obs``: obs columns not to carry. Other obs columns are kept
    (snake_case). Raises :class:`~cellspec_sc.InputError` naming every missing argument, and
    never returns an object that fails a structure check.
    """
    del allow_modified  # nothing to compare X against: there is no stored fingerprint
    known = {f.name for f in fields(ForeignOptions)} - {"preset"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise InputError(f"from_anndata: unknown argument(s) {unknown}; known: {sorted(known)}")
    given = {k: (tuple(v) if k in ("obs_features", "drop_obs") else v) for k, v in options.items() if v is not None}
    chosen = ForeignOptions(**{**(preset_options(preset, adata) if preset else {}), **given}, preset=preset)
    x = _convert(adata, chosen)
    x.validate().raise_if_failed(f"from_anndata (preset={preset!r})" if preset else "from_anndata")
    return x


def _convert(adata: anndata.AnnData, o: ForeignOptions) -> CellSpec:
    _check_given(adata, o)
    obs = adata.obs.reset_index(drop=True)
    n = len(obs)
    cell_ids = _text(obs[o.cell_key] if o.cell_key else pd.Series(list(map(str, adata.obs_names))))
    images_of = _text(obs[o.image_key]) if o.image_key else _text(pd.Series([o.image_id] * n, dtype=object))
    samples_of = _text(obs[o.sample_key]) if o.sample_key else _text(pd.Series([o.sample_id] * n, dtype=object))
    images = _images(images_of, samples_of, o.pixel_size)
    scale = images_of.map(dict(zip(images["image_id"], images["pixel_size"], strict=True))).to_numpy(np.float64)
    cells = {"cell_id": cell_ids, "image_id": images_of, "sample_id": samples_of,
             **_centroids(_coordinates(adata, obs, o), scale, o)}
    values, names, layer = measurement_layer(adata, o.layer)
    names = names + list(o.obs_features)
    matrix, counts = _raw_matrix(values, obs, o.obs_features, n, len(names))
    dictionary = _dictionary(names, o.features or other_feature)
    area = _cell_area(dictionary, matrix, scale)
    if area is not None:
        cells["area"] = pd.Series(area)
    used = {o.cell_key, o.image_key, o.sample_key, *o.obs_features, *o.drop_obs,
            *(o.coordinates if isinstance(o.coordinates, tuple) else ())}
    extra, carried = _extra_columns(obs, used, set(cells))
    cells |= extra
    warn_not_carried(adata, obsm={o.coordinates} if isinstance(o.coordinates, str) else set(),
                     layers={layer} if layer not in ("X", "raw") else set())
    return CellSpec(
        spec_version=SPEC_VERSION, cells=canonical_frame(pd.DataFrame(cells), "cells"), measurements=matrix,
        dictionary=dictionary, images=images, channels=_channels(images, dictionary), adjacency=None,
        provenance=captured_styles(obs, adata.uns, carried, _provenance(o, layer, n, counts, len(dictionary))),
    )


def _provenance(o: ForeignOptions, layer: str, n: int, counts: dict[str, int], n_features: int) -> dict[str, Any]:
    parameters = {k: v for k, v in asdict(o).items() if k not in ("features", "producer")}
    parameters |= {"pixel_size": dict(o.pixel_size) if isinstance(o.pixel_size, Mapping) else o.pixel_size,
                   "coordinates": list(o.coordinates) if isinstance(o.coordinates, tuple) else o.coordinates,
                   "obs_features": list(o.obs_features), "drop_obs": list(o.drop_obs), "layer": layer}
    if o.pixel_origin is not None:
        parameters["pixel_centre"] = PIXEL_ORIGINS[o.pixel_origin]
    provenance = new_provenance(producer=dict(o.producer or {"tool": "unknown", "version": "unknown"}),
                                adapter="anndata", adapter_version=ADAPTER_VERSION, parameters=parameters,
                                counts={"rows_read": n, "rows_kept": n, **counts})
    return with_history_step(provenance, "from_anndata", FUNCTION,
                             {"source": "AnnData without uns['cellspec']", "cells": n, "features": n_features,
                              "measurements_from": layer})


def _check_given(adata: anndata.AnnData, o: ForeignOptions) -> None:
    missing = []
    if o.image_id is None and o.image_key is None:
        missing.append("image_id='<id>' or image_key='<obs column>' (the image of each cell)")
    if o.sample_id is None and o.sample_key is None:
        missing.append("sample_id='<id>' or sample_key='<obs column>' (the biological sample of each cell)")
    if o.pixel_size is None:
        missing.append("pixel_size=<micrometres per pixel> (one value, or a dict image_id -> value)")
    if o.coordinate_unit not in ("um", "px"):
        missing.append("coordinate_unit='um' or 'px' (the unit of the centroids)")
    if o.coordinate_unit == "px" and o.pixel_origin not in PIXEL_ORIGINS:
        missing.append("pixel_origin='corner' or 'center' with coordinate_unit='px' (which pixel convention the "
                       f"centroids follow: 'corner': {PIXEL_ORIGINS['corner']}; 'center': {PIXEL_ORIGINS['center']})")
    if o.coordinate_order not in ("xy", "yx"):
        missing.append(f"coordinate_order='xy' or 'yx' (got {o.coordinate_order!r})")
    if isinstance(o.coordinates, str) and o.coordinates not in adata.obsm:
        missing.append(f"coordinates=<obsm key> or ('x column', 'y column') (obsm has no {o.coordinates!r}; "
                       f"obsm keys: {list(adata.obsm.keys())})")
    absent = [f"{arg}={col!r}" for arg, col in (("image_key", o.image_key), ("sample_key", o.sample_key),
                                               ("cell_key", o.cell_key)) if col is not None and col not in adata.obs]
    absent += [f"obs_features column {col!r}" for col in o.obs_features if col not in adata.obs]
    if isinstance(o.coordinates, tuple):
        absent += [f"coordinates column {col!r}" for col in o.coordinates if col not in adata.obs]
    if absent:
        missing.append(f"obs columns that exist ({', '.join(absent)} not in obs; obs has {list(adata.obs.columns)})")
    if missing:
        made_by = f" (preset {o.preset!r})" if o.preset else ""
        raise InputError("AnnData has no uns['cellspec'] (it was not written by cellspec_sc.to_anndata); to build "
                         f"a cellspec from it{made_by}, from_anndata also needs: " + "; ".join(missing))


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


def _coordinates(adata: anndata.AnnData, obs: pd.DataFrame, o: ForeignOptions) -> np.ndarray:
    if isinstance(o.coordinates, tuple):
        xy = np.column_stack([as_spec_type(obs[c], "double").to_numpy(np.float64, na_value=np.nan)
                              for c in o.coordinates])
    else:
        xy = np.asarray(dense(adata.obsm[o.coordinates]), dtype=np.float64)
        if xy.ndim != 2 or xy.shape[1] < 2:
            raise InputError(f"obsm[{o.coordinates!r}] has shape {xy.shape}; expected (n_cells, 2) centroids")
        xy = xy[:, :2]
    return xy[:, ::-1] if o.coordinate_order == "yx" else xy


def _centroids(xy: np.ndarray, scale: np.ndarray, o: ForeignOptions) -> dict[str, pd.Series]:
    """x, y in micrometres (and x_px, y_px in the spec's pixel frame for pixel input)."""
    if o.coordinate_unit == "um":
        return {"x": pd.Series(xy[:, 0]), "y": pd.Series(xy[:, 1])}
    # the spec puts the centre of pixel i at i + 0.5 (section 8); regionprops-style centroids at i
    x_px, y_px = (xy[:, 0] + 0.5, xy[:, 1] + 0.5) if o.pixel_origin == "center" else (xy[:, 0], xy[:, 1])
    return {"x": pd.Series(x_px * scale), "y": pd.Series(y_px * scale),
            "x_px": pd.Series(x_px), "y_px": pd.Series(y_px)}


def _extra_columns(obs: pd.DataFrame, used: set[Any], taken: set[str]
                   ) -> tuple[dict[str, pd.Series], dict[Any, str]]:
    """The other obs columns as cells columns, and the cells name of each obs column carried; one named like a
    column built from the arguments (an obs ``sample_id`` when ``sample_id=`` was given) is kept beside it as
    ``<name>_2``, never over it."""
    names = [name for name in obs.columns if name not in used]
    converted, _, _ = carry_obs_columns(obs, names, taken | set(map(str, obs.columns)))
    out: dict[str, pd.Series] = {}
    carried: dict[Any, str] = {}
    moved = {}
    for obs_name, (new_name, column) in converted.items():
        if new_name in taken:
            kept_as = first_free_name(new_name, taken | set(out) | set(map(str, obs.columns)))
            moved[new_name], new_name = kept_as, kept_as
        out[new_name] = column
        carried[obs_name] = new_name
    if moved:
        warn(f"obs columns {sorted(moved)} are kept as {[moved[k] for k in sorted(moved)]}: the cellspec's own "
             "columns of those names come from the arguments (image_id=, sample_id=, coordinates=, ...)")
    return out, carried


def _dictionary(names: list[str], rule: FeatureRule) -> pd.DataFrame:
    voc = vocabulary()
    rows = []
    for name in names:
        fields_ = {**other_feature(name), **dict(rule(name))}
        kind = fields_["kind"]
        if kind not in voc.kinds:
            raise InputError(f"features rule gave kind {kind!r} for var {name!r}; expected one of {voc.kinds}")
        feature_id = voc.feature_id_rule(kind).format(compartment=fields_["compartment"], marker=fields_["marker"],
                                                      statistic=fields_["statistic"])
        rows.append({"feature_id": feature_id, **{k: fields_[k] for k in DICTIONARY_FIELDS}, "source_name": name})
    frame = pd.DataFrame(rows, columns=["feature_id", *DICTIONARY_FIELDS, "source_name"])
    duplicated = frame["feature_id"][frame["feature_id"].duplicated()].tolist()
    if duplicated:
        raise InputError(f"features rule gives the same feature_id to several var names: {duplicated}")
    return canonical_frame(frame, "dictionary")


def _raw_matrix(values: Any, obs: pd.DataFrame, obs_features: Sequence[str], n_obs: int, n_features: int
                ) -> tuple[np.ndarray, dict[str, int]]:
    """The measurements (the chosen layer, then the ``obs_features`` columns), NaN/inf as NA and counted."""
    matrix = np.zeros((n_obs, n_features))
    n_var = n_features - len(obs_features)
    if values is not None:
        matrix[:, :n_var] = dense(values)
    for j, name in enumerate(obs_features):
        matrix[:, n_var + j] = as_spec_type(obs[name], "double").to_numpy(np.float64, na_value=np.nan)
    nonfinite = ~np.isfinite(matrix)
    matrix[nonfinite] = np.nan  # spec section 3: NaN and infinite source values become NA and are counted
    return matrix, {"na_converted": 0, "nonfinite_converted": int(nonfinite.sum())}


def _cell_area(dictionary: pd.DataFrame, matrix: np.ndarray, scale: np.ndarray) -> np.ndarray | None:
    """cells.area (um2) from the whole-cell area feature, as ``read_mcmicro`` computes it."""
    hit = dictionary.index[(dictionary["kind"] == "shape") & (dictionary["statistic"] == "area")
                           & (dictionary["compartment"] == "cell")].tolist()
    if not hit or dictionary["unit"].iloc[hit[0]] not in ("px2", "um2"):
        return None
    area = matrix[:, hit[0]] * (scale * scale) if dictionary["unit"].iloc[hit[0]] == "px2" else matrix[:, hit[0]].copy()
    area[~(area > 0)] = np.nan
    return area


def _channels(images: pd.DataFrame, dictionary: pd.DataFrame) -> pd.DataFrame:
    markers = list(dict.fromkeys(m for m, k in zip(dictionary["marker"], dictionary["kind"], strict=True)
                                 if k == "intensity" and isinstance(m, str)))
    ids = images["image_id"].astype(object).tolist()
    frame = pd.DataFrame({"image_id": [i for i in ids for _ in markers],
                          "channel_index": [j + 1 for _ in ids for j in range(len(markers))],
                          "channel_name": markers * len(ids), "marker": markers * len(ids)})
    return canonical_frame(frame, "channels")


# -- var names as dictionary rows ----------------------------------------------------------------------------------
FeatureRule = Callable[[str], Mapping[str, Any]]
DICTIONARY_FIELDS = ("kind", "marker", "compartment", "statistic", "unit")  # what a rule returns


def other_feature(name: str) -> dict[str, Any]:
    """The default rule of :func:`~cellspec_sc.from_anndata` for a foreign AnnData's var names: each becomes an
    ``other`` feature ``other:<name>`` in a.u.

    Parameters
    ----------
    name
        A var name of the AnnData.

    Returns
    -------
    dict
        The feature's dictionary fields: ``kind``, ``marker``, ``compartment``, ``statistic``, ``unit``.

    Examples
    --------
    >>> other_feature("Area")["statistic"]
    'Area'
    """
    return {"kind": "other", "marker": None, "compartment": None, "statistic": name, "unit": "a.u."}


def intensity_features(compartment: str = "cell", statistic: str = "mean", unit: str = "a.u.",
                       others: Sequence[str] = ()) -> FeatureRule:
    """A rule for var names that are marker names (scimap/MCMICRO): each becomes the intensity
    feature ``<compartment>:<marker>:<statistic>``; names in ``others`` become ``other``
    features, and scikit-image/mcquant region properties (``Area``, ``eccentricity``, ...) shape
    features of ``compartment`` in pixel units.

    Parameters
    ----------
    compartment
        The compartment of every feature (``cell``, ``nucleus``, ``cytoplasm``, ``membrane``).
    statistic
        The statistic of the intensities (``mean``, ``median``, ...).
    unit
        The unit of the intensities.
    others
        Var names that are neither markers nor region properties.

    Returns
    -------
    Callable[[str], dict]
        The rule to pass as ``from_anndata(adata, features=...)``: var name -> dictionary fields.

    Examples
    --------
    >>> intensity_features("nucleus")(" CD3 ")["marker"]
    'CD3'
    >>> intensity_features()("Area")["unit"]
    'px2'
    """
    def rule(name: str) -> dict[str, Any]:
        if name in others:
            return other_feature(name)
        if name in SHAPES:
            shape_statistic, shape_unit = SHAPES[name]
            return {"kind": "shape", "marker": None, "compartment": compartment, "statistic": shape_statistic,
                    "unit": shape_unit}
        return {"kind": "intensity", "marker": name.strip(), "compartment": compartment, "statistic": statistic,
                "unit": unit}
    return rule


# -- presets for tables of known tools -----------------------------------------------------------------------------
REGIONPROPS_CENTRE = "center"  # scikit-image regionprops (mcquant, steinbock): pixel i has its centre at i


def mcquant_features(names: list[str], compartment: str) -> Callable[[str], Mapping[str, Any]]:
    """The dictionary rule of ``read_mcmicro`` for mcquant column names (markers, ``<marker>_<property>``,
    region properties), as a ``features=`` rule.

    >>> rule = mcquant_features(["CD3D", "CD3D_intensity_median", "Area"], "cell")
    >>> [rule(n)["statistic"] for n in ("CD3D", "CD3D_intensity_median", "Area")]
    ['mean', 'median', 'area']
    """
    specs, _ = classify_columns(names, default_compartment=compartment, markers=None)
    by_name = {spec.source_name: spec for spec in specs}

    def rule(name: str) -> dict[str, Any]:
        spec = by_name[name]
        return {"kind": spec.kind, "marker": spec.marker, "compartment": spec.compartment,
                "statistic": spec.statistic, "unit": spec.unit}
    return rule


def _shape_columns(adata: anndata.AnnData) -> tuple[str, ...]:
    return tuple(str(c) for c in adata.obs.columns if c in SHAPES)


def _mask_compartment(values: Any, mask_of: Callable[[str], str | None]) -> str:
    """The compartment of the masks named in ``values`` (one per image), ``cell`` when unknown or mixed."""
    found = {mask_compartment(mask_of(str(v))) for v in dict.fromkeys(values)}
    return found.pop() if len(found) == 1 and None not in found else "cell"


def _scimap(adata: anndata.AnnData) -> dict[str, Any]:
    names = [str(v) for v in (adata.raw.var_names if adata.raw is not None else adata.var_names)]
    shapes = _shape_columns(adata)
    images = adata.obs["imageid"] if "imageid" in adata.obs else []
    compartment = _mask_compartment(images, lambda v: split_file_name(v)[1])
    return {"image_key": "imageid", "sample_key": "imageid", "cell_key": "CellID",
            "coordinates": ("X_centroid", "Y_centroid"), "coordinate_unit": "px", "pixel_origin": REGIONPROPS_CENTRE,
            "layer": "raw" if adata.raw is not None else None, "obs_features": shapes,
            "features": mcquant_features(names + list(shapes), compartment),
            "producer": {"tool": "mcquant (MCMICRO), imported by scimap", "version": None}}


def _spatialdata_io_mcmicro(adata: anndata.AnnData) -> dict[str, Any]:
    shapes = _shape_columns(adata)
    regions = adata.obs["region"] if "region" in adata.obs else []
    compartment = _mask_compartment(regions, lambda v: v.rsplit("_", 1)[-1])
    return {"image_key": "region", "sample_key": "region", "cell_key": "CellID", "coordinates": "spatial",
            "coordinate_unit": "px", "pixel_origin": REGIONPROPS_CENTRE, "layer": "X", "obs_features": shapes,
            "features": mcquant_features([str(v) for v in adata.var_names] + list(shapes), compartment),
            "producer": {"tool": "mcquant (MCMICRO), read by spatialdata-io", "version": None}}


def _spatialdata_io_steinbock(adata: anndata.AnnData) -> dict[str, Any]:
    in_obsm = "spatial" in adata.obsm
    return {"image_key": "image", "sample_key": "image", "cell_key": "cell_id" if "cell_id" in adata.obs else None,
            "coordinates": "spatial" if in_obsm else ("centroid-1", "centroid-0"),
            "coordinate_order": "yx" if in_obsm else "xy", "coordinate_unit": "px",
            "pixel_origin": REGIONPROPS_CENTRE, "layer": "X", "obs_features": _shape_columns(adata),
            "drop_obs": tuple(c for c in ("centroid-0", "centroid-1", "Image", "region") if c in adata.obs),
            "features": intensity_features("cell"),  # steinbock measure intensities: mean per channel by default
            "producer": {"tool": "steinbock, read by spatialdata-io", "version": None}}


PRESETS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "scimap": _scimap,
    "spatialdata-io:mcmicro": _spatialdata_io_mcmicro,
    "spatialdata-io:steinbock": _spatialdata_io_steinbock,
}


def preset_options(preset: str, adata: anndata.AnnData) -> dict[str, Any]:
    """The :func:`from_foreign_anndata` options of ``preset`` for ``adata``."""
    if preset not in PRESETS:
        raise InputError(f"preset={preset!r} is not known; presets: {sorted(PRESETS)}")
    return {k: v for k, v in PRESETS[preset](adata).items() if v is not None}


# -- which matrix holds the raw measurements -----------------------------------------------------------------------
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
    raw = _raw_in_var_order(adata)
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


def _raw_in_var_order(adata: anndata.AnnData) -> np.ndarray | None:
    """``adata.raw.X`` in ``var`` order when raw has every var name; raw of other features counts as differing."""
    raw = adata.raw
    if raw is None or raw.X is None:
        return None
    positions = raw.var_names.get_indexer(adata.var_names)
    values = dense(raw.X).astype(np.float64, copy=False)
    if (positions < 0).any():
        return np.full((adata.n_obs, adata.n_vars), np.nan)
    return values[:, positions]
