"""cellspec objects as AnnData files: ``.h5ad`` and AnnData ``.zarr`` stores.

Writers publish atomically (a hidden sibling is renamed at the end), refuse an
existing target unless ``overwrite=True``, and never replace something that is
not an AnnData store. Readers wrap anndata's errors in :class:`~cellspec_sc.InputError`.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> path = write_h5ad(cs.example(), pathlib.Path(tempfile.mkdtemp()) / "x.h5ad")
>>> read_h5ad(path).equals(cs.example())
True
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from cellspec_sc.errors import InputError
from cellspec_sc.progress import progress

from cellspec_sc.bridges.anndata import AnnDataBridgeWarning, from_anndata, to_anndata

if TYPE_CHECKING:
    from cellspec_sc.model.cellspec import CellSpec


def is_h5ad(source: str | Path) -> bool:
    """A file whose name ends in ``.h5ad``."""
    return Path(source).suffix.lower() == ".h5ad" and Path(source).is_file()


def is_anndata_zarr(source: str | Path) -> bool:
    """A zarr store (v2 or v3) whose root group is an AnnData (``encoding-type: anndata``)."""
    path = Path(source)
    for name, key in (("zarr.json", "attributes"), (".zattrs", None)):
        try:
            document = json.loads((path / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        attrs = document.get(key, {}) if key else document
        if isinstance(attrs, dict) and attrs.get("encoding-type") == "anndata":
            return True
    return False


def read_h5ad(path: str | Path) -> CellSpec:
    """The cellspec stored in an ``.h5ad`` file (see :func:`cellspec_sc.from_anndata`)."""
    import anndata

    return _from_store(path, anndata.read_h5ad)


def read_anndata_zarr(path: str | Path) -> CellSpec:
    """The cellspec stored in an AnnData ``.zarr`` store."""
    import anndata

    return _from_store(path, anndata.read_zarr)


def _from_store(path: str | Path, reader) -> CellSpec:
    try:
        adata = reader(path)
    except Exception as err:  # h5py/zarr raise many types for damaged or foreign files
        raise InputError(f"{path}: cannot be read as AnnData ({type(err).__name__}: {err})") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AnnDataBridgeWarning)  # a file's extras are expected, not news
            return from_anndata(adata)
    except InputError as err:
        raise InputError(f"{path}: {err}") from None


def write_h5ad(x: CellSpec, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write ``x`` as an ``.h5ad`` file (via :func:`cellspec_sc.to_anndata`) and return the path."""
    target = Path(path)
    _check_target(target, overwrite, is_h5ad)
    stage = target.with_name(f".{target.name}.cellspec-staging-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        adata = to_anndata(x)
        with progress(1, f"writing {target.name}", unit="file", size=adata.X.size):  # anndata has no progress
            adata.write_h5ad(stage)
        os.replace(stage, target)
    finally:
        stage.unlink(missing_ok=True)
    return target


def write_anndata_zarr(x: CellSpec, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write ``x`` as an AnnData ``.zarr`` store and return the path."""
    target = Path(path)
    _check_target(target, overwrite, is_anndata_zarr)
    stage = target.with_name(f".{target.name}.cellspec-staging-{os.getpid()}-{secrets.token_hex(4)}")
    old = target.with_name(f".{target.name}.cellspec-old-{secrets.token_hex(4)}")
    try:
        adata = to_anndata(x)
        with progress(1, f"writing {target.name}", unit="file", size=adata.X.size):
            adata.write_zarr(stage)
        if target.exists():
            target.rename(old)
        stage.rename(target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return target


def _check_target(target: Path, overwrite: bool, is_same_kind) -> None:
    if not (target.exists() or target.is_symlink()):
        target.parent.mkdir(parents=True, exist_ok=True)
        return
    if not overwrite:
        raise InputError(f"{target}: already exists; pass overwrite=True (CLI: --overwrite) to replace it")
    if target.is_symlink() or not is_same_kind(target):
        raise InputError(f"{target}: exists and is not an AnnData store; refusing to replace it")
