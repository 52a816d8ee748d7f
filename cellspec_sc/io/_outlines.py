"""Cell outlines named by ``images.geometry_ref``: GeoJSON files inside a cellspec directory.

``geometry_ref`` (spec section 5) is a path relative to the cellspec directory
the object was read from (``x.source_dir``). This module resolves it safely and
reads the outlines as shapely polygons, joined to the cells of one image.

Conventions (shared by the SpatialData bridge and the Luxar scene builder):

* **Path**: relative to the directory; an absolute path, ``..``, or a symlink
  that leads out of the directory is refused with
  :class:`~cellspec_sc.io._refusals.UnsafePath` (a :class:`~cellspec_sc.CellspecError`),
  by the same check the directory reader applies. When the directory has a
  ``MANIFEST.sha256`` the file must be listed in it.
* **Missing or unreadable file** (not there, not listed in the manifest, not
  JSON, not GeoJSON): a :class:`OutlineWarning` is issued and the image has
  no outlines (:func:`image_outlines` leaves it out).
* **Join to cells**: a feature's ``properties.cell_id`` wins when present;
  otherwise the GeoJSON feature ``id`` is used (QuPath writes the object id
  there). Ids are compared as strings. Features whose id is not a cell of the
  image, features without an id, non-polygonal geometries and repeated ids
  (the first one is kept) are counted in :attr:`Outlines.skipped`.
* **Units**: QuPath writes outlines in full-resolution pixels, so coordinates
  are read as pixels by default and scaled to micrometres with the image's
  ``pixel_size`` (x) and ``pixel_size_y`` (y, when present); pass
  ``units="um"`` for files already in micrometres.

>>> import json, tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> feature = {"type": "Feature", "id": "c1", "properties": {},
...            "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [4, 0], [4, 2], [0, 0]]]}}
>>> _ = (d / "img1.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": [feature]}))
>>> o = read_outlines(outline_path(d, "img1.geojson"), pixel_size=0.5)
>>> o.geometry["c1"].bounds
(0.0, 0.0, 2.0, 1.0)
"""

from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from cellspec_sc.errors import CellspecError, CellspecWarning, InputError
from cellspec_sc.io._manifest import MANIFEST, checked_relative, read_manifest

if TYPE_CHECKING:
    from shapely.geometry.base import BaseGeometry

    from cellspec_sc.model import CellSpec

Units = Literal["px", "um"]
_POLYGONAL = ("Polygon", "MultiPolygon")


class OutlineWarning(CellspecWarning):
    """A geometry_ref file that is missing or cannot be read; the image gets no outlines."""


@dataclass
class Outlines:
    """The outlines of one GeoJSON file, in micrometres.

    ``geometry`` is a ``pandas.Series`` of shapely Polygon/MultiPolygon indexed
    by cell_id (strings, file order); ``skipped`` counts features that were not
    used, by reason.
    """

    path: Path
    geometry: pd.Series
    skipped: dict[str, int] = field(default_factory=dict)

    def for_cells(self, cell_ids: Any) -> pd.Series:
        """The outlines of these cells, in their order; cells without an outline are left out.

        Features whose id is not among ``cell_ids`` are counted in ``skipped["unknown_id"]``.
        """
        wanted = pd.Index([str(c) for c in cell_ids])
        known = self.geometry.index.isin(wanted)
        unknown = int((~known).sum())
        if unknown:
            self.skipped["unknown_id"] = self.skipped.get("unknown_id", 0) + unknown
        kept = self.geometry[known]
        order = wanted[wanted.isin(kept.index)]
        return kept.reindex(order)


def outline_path(source_dir: str | os.PathLike, geometry_ref: str) -> Path:
    """The file a ``geometry_ref`` names, refusing paths that leave ``source_dir``
    (:func:`cellspec_sc.io._manifest.checked_relative`: absolute, ``..``, or a symlink out).

    >>> outline_path("/data/run1", "../secret.geojson")  # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    cellspec_sc.io._refusals.UnsafePath: /data/run1: images.geometry_ref: path '../secret.geojson'
    leaves the directory...
    """
    return checked_relative(Path(source_dir), str(geometry_ref), "images.geometry_ref", must_exist=False)


def read_outlines(path: str | os.PathLike, *, pixel_size: float = 1.0, pixel_size_y: float | None = None,
                  units: Units = "px") -> Outlines:
    """Read a GeoJSON file of cell outlines (FeatureCollection, bare feature list or one Feature).

    Raises :class:`~cellspec_sc.errors.InputError` when the file cannot be read
    or is not GeoJSON; :func:`image_outlines` turns that into a warning.
    """
    from shapely.affinity import scale

    path = Path(path)
    features = _features(path)
    sx = 1.0 if units == "um" else float(pixel_size)
    sy = sx if units == "um" or pixel_size_y is None or _is_na(pixel_size_y) else float(pixel_size_y)
    ids: list[str] = []
    seen: set[str] = set()
    shapes: list[BaseGeometry] = []
    skipped: dict[str, int] = {}
    for feature in features:
        reason, cell_id, geom = _feature_outline(feature)
        if reason is None and cell_id in seen:
            reason = "duplicate_id"
        if reason is not None:
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        ids.append(cell_id)
        seen.add(cell_id)
        shapes.append(geom if sx == sy == 1.0 else scale(geom, xfact=sx, yfact=sy, origin=(0.0, 0.0)))
    geometry = pd.Series(shapes, index=pd.Index(ids, dtype=object, name="cell_id"), dtype=object)
    return Outlines(path=path, geometry=geometry, skipped=skipped)


def outline_files(x: CellSpec, *, source_dir: str | os.PathLike | None = None) -> dict[str, Path]:
    """``{geometry_ref: file}`` for every ``images.geometry_ref`` of ``x`` whose file can be used.

    ``source_dir`` defaults to ``x.source_dir``. A file that is missing or not listed in the
    directory's manifest is left out with an :class:`OutlineWarning`, as is everything when no
    directory is known or its manifest is damaged; a path that leaves the directory raises
    :class:`~cellspec_sc.io._refusals.UnsafePath`.
    """
    if "geometry_ref" not in x.images.columns:
        return {}
    refs = list(dict.fromkeys(str(r) for r in x.images["geometry_ref"].dropna()))
    if not refs:
        return {}
    root = source_dir if source_dir is not None else x.source_dir
    if root is None:
        warnings.warn(f"{len(refs)} geometry_ref file(s) named but the cellspec directory is unknown "
                      "(pass source_dir=); no outlines read", OutlineWarning, stacklevel=3)
        return {}
    try:
        listed = _manifest_paths(Path(root))
    except CellspecError as err:
        warnings.warn(f"{err}; no outlines read", OutlineWarning, stacklevel=3)
        return {}
    out: dict[str, Path] = {}
    for ref in refs:
        path = outline_path(root, ref)
        problem = _unusable(path, ref, listed)
        if problem is None:
            out[ref] = path
        else:
            users = ", ".join(repr(str(i)) for i in x.images.loc[x.images["geometry_ref"] == ref, "image_id"])
            warnings.warn(f"image {users}: {problem}; no outlines for this image", OutlineWarning, stacklevel=3)
    return out


def image_outlines(x: CellSpec, *, source_dir: str | os.PathLike | None = None, units: Units = "px",
                   files: dict[str, Path] | None = None) -> dict[str, Outlines]:
    """Outlines of every image of ``x`` whose ``geometry_ref`` file can be read, keyed by image_id.

    ``files`` is the result of :func:`outline_files` (computed when not given). A file that
    is not GeoJSON gives an :class:`OutlineWarning` and the image is left out.
    """
    files = outline_files(x, source_dir=source_dir) if files is None else files
    out: dict[str, Outlines] = {}
    if not files:
        return out
    for _, row in x.images[x.images["geometry_ref"].notna()].iterrows():
        image_id, ref = str(row["image_id"]), str(row["geometry_ref"])
        if ref not in files:
            continue
        try:
            out[image_id] = read_outlines(files[ref], pixel_size=float(row["pixel_size"]),
                                          pixel_size_y=row.get("pixel_size_y"), units=units)
        except InputError as err:
            warnings.warn(f"image {image_id!r}: {err}; no outlines for this image", OutlineWarning, stacklevel=2)
    return out


def materialise_outline_files(contents: dict[str, bytes], directory: str | os.PathLike) -> Path:
    """Write outline files (``{geometry_ref: bytes}``) under ``directory`` and return it, so that
    an object whose ``source_dir`` is ``directory`` finds them again. An existing file with other
    content is not replaced (:class:`~cellspec_sc.errors.InputError`).
    """
    root = Path(directory)
    for ref, data in contents.items():
        path = outline_path(root, ref)
        if path.exists():
            if path.read_bytes() != data:
                raise InputError(f"{path} exists with other content; not replacing it with geometry_ref {ref!r}")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


# -- helpers ---------------------------------------------------------------------------------------
def _features(path: Path) -> list[Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise InputError(f"{path}: cannot read GeoJSON ({type(err).__name__}: {err})") from None
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and data.get("type") == "FeatureCollection" and isinstance(data.get("features"), list):
        return data["features"]
    if isinstance(data, dict) and data.get("type") == "Feature":
        return [data]
    raise InputError(f"{path}: not a GeoJSON FeatureCollection, Feature or list of features")


def _feature_outline(feature: Any) -> tuple[str | None, str, Any]:
    """(skip reason or None, cell id, shapely geometry) of one GeoJSON feature."""
    from shapely.geometry import shape

    if not isinstance(feature, dict):
        return "not_a_feature", "", None
    props = feature.get("properties") if isinstance(feature.get("properties"), dict) else {}
    cell_id = props.get("cell_id", feature.get("id"))
    if cell_id is None or cell_id == "":
        return "no_id", "", None
    geometry = feature.get("geometry")
    if not isinstance(geometry, dict) or geometry.get("type") not in _POLYGONAL:
        return "not_polygonal", "", None
    try:
        geom = shape(geometry)
    except Exception:  # noqa: BLE001 - shapely raises several types for malformed coordinates
        return "bad_geometry", "", None
    return None, str(cell_id), geom


def _manifest_paths(root: Path) -> set[str] | None:
    """Paths listed in the directory's manifest (checked as the directory reader does), or None
    when there is no manifest (a folder of files that is not a cellspec directory)."""
    if not (root / MANIFEST).is_file():
        return None
    return set(read_manifest(root))


def _unusable(path: Path, ref: str, listed: set[str] | None) -> str | None:
    if not path.is_file():
        return f"geometry_ref {ref!r} not found"
    if listed is not None and Path(ref).as_posix() not in listed:
        return f"geometry_ref {ref!r} is not listed in MANIFEST.sha256"
    return None


def _is_na(value: Any) -> bool:
    try:
        return value is None or value is pd.NA or math.isnan(float(value))
    except (TypeError, ValueError):
        return True
