"""SpatialData ``.zarr`` stores on disk: recognise one, read it as a cellspec, write a cellspec as one
(published atomically through :mod:`cellspec_sc.io.publish`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cellspec_sc._files import scratch_folder
from cellspec_sc.bridges.sd_read import from_spatialdata, stored_outline_files
from cellspec_sc.bridges.sd_write import to_spatialdata
from cellspec_sc.bridges.zarr_strings import bounded_string_chunks
from cellspec_sc.errors import FormatError, InputError
from cellspec_sc.io import TargetKind, check_target, publishing
from cellspec_sc.model import CellSpec
from cellspec_sc.progress import progress
from cellspec_sc.validation import refuse_unstorable

if TYPE_CHECKING:
    from spatialdata import SpatialData

# -- files -----------------------------------------------------------------------------------------
def is_spatialdata_zarr(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a SpatialData zarr store: its root group has ``spatialdata_attrs``."""
    import zarr

    if not Path(path).is_dir():
        return False
    try:
        return "spatialdata_attrs" in zarr.open_group(str(path), mode="r").attrs
    except Exception:  # noqa: BLE001 - anything zarr cannot open is not a SpatialData store
        return False


SPATIALDATA_ZARR = TargetKind("a SpatialData .zarr store", True, is_spatialdata_zarr)


def read_spatialdata(path: str | os.PathLike, **options: Any) -> CellSpec:
    """Read a SpatialData zarr store and convert it with :func:`from_spatialdata` (``options`` as there).

    Outline files carried by the store go to ``outline_dir`` when given, else to a temporary
    directory removed when the process ends (so ``cellspec convert`` can write them).
    """
    try:
        sdata = _read_zarr(path)
        if options.get("outline_dir") is None and stored_outline_files(sdata, options.get("table_key")):
            options["outline_dir"] = scratch_folder("outlines")
        return from_spatialdata(sdata, **options)
    except InputError as err:
        raise InputError(f"{path}: {err}") from None


def write_spatialdata(x: CellSpec, path: str | os.PathLike, *, overwrite: bool = False, **options: Any) -> Path:
    """Write ``to_spatialdata(x, **options)`` as a zarr store and return its path.

    The store is written under a hidden name next to ``path`` and published atomically
    (:func:`cellspec_sc.io.publish.publishing`). An existing ``path`` is replaced only with
    ``overwrite=True`` and only if it is a SpatialData store.
    """
    check_target(path, SPATIALDATA_ZARR, overwrite=overwrite)
    refuse_unstorable(x, path, "a SpatialData .zarr store", text=False, names=True)
    sdata = to_spatialdata(x, **options)
    with publishing(path, SPATIALDATA_ZARR, overwrite=overwrite) as payload, \
            progress(1, f"writing {Path(path).name}", unit="file", size=np.size(x.measurements)):
        sdata.write(str(payload))  # spatialdata writes only to a path that does not exist yet
    return Path(path)


def _read_zarr(path: str | os.PathLike) -> SpatialData:
    import spatialdata

    try:
        with bounded_string_chunks():  # a damaged string chunk could claim 2**32 values (.zarr_strings)
            return spatialdata.read_zarr(str(path))
    except Exception as err:  # noqa: BLE001 - zarr, anndata and geopandas raise many types on a damaged store
        raise FormatError(f"{path}: not a readable SpatialData zarr store ({type(err).__name__}: {err})") from None

