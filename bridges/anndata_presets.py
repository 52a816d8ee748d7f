"""Presets for AnnData tables made by known tools: keys, coordinate order, pixel convention, layer,
shape columns and feature kinds, so that ``cs.from_anndata(a, preset="scimap", pixel_size=0.65)``
gives the same cells, centroids and measurements as reading the tool's table directly.

Only the pixel size is left to the caller: no table of these tools holds it.

| preset | made by | what it sets |
| --- | --- | --- |
| ``scimap`` | ``sm.pp.mcmicro_to_scimap`` | image and sample from ``imageid``, cell ids from ``CellID``, centroids from ``X_centroid``/``Y_centroid`` (pixel centres, regionprops), measurements from ``adata.raw`` (``X`` holds ``log1p``), ``Area`` ... as shape features |
| ``spatialdata-io:mcmicro`` | ``spatialdata_io.mcmicro`` | image and sample from ``region``, ``CellID``, ``obsm["spatial"]`` (x, y pixel centres), ``X`` |
| ``spatialdata-io:steinbock`` | ``spatialdata_io.steinbock`` | image and sample from ``image``, ``cell_id``, ``obsm["spatial"]`` in (y, x) order (``centroid-0``, ``centroid-1``), ``X`` (mean intensities), ``area`` ... as shape features |

Feature ids follow :func:`cellspec_sc.readers.mcmicro.classify_columns` (the MCMICRO reader's own
rule) for mcquant tables, so ``cell:CD3D:mean`` and ``cell:area`` (px2) name the same columns as
``cs.read_mcmicro``; a whole-cell ``area`` in px2 also gives ``cells.area`` in um2.

>>> sorted(PRESETS)
['scimap', 'spatialdata-io:mcmicro', 'spatialdata-io:steinbock']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from cellspec_sc.bridges.anndata_features import intensity_features
from cellspec_sc.errors import InputError
from cellspec_sc.readers.mcmicro import SHAPES, classify_columns, mask_compartment, split_file_name

if TYPE_CHECKING:
    import anndata

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
    """The :func:`~cellspec_sc.bridges.anndata_foreign.from_foreign_anndata` options of ``preset`` for ``adata``."""
    if preset not in PRESETS:
        raise InputError(f"preset={preset!r} is not known; presets: {sorted(PRESETS)}")
    return {k: v for k, v in PRESETS[preset](adata).items() if v is not None}
