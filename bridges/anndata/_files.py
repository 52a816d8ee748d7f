"""cellspec objects as AnnData files: ``.h5ad`` and AnnData ``.zarr`` stores.

Writers publish through :func:`cellspec_sc.io._publish.publishing` (staged next to
the target, published atomically), refuse an existing target unless
``overwrite=True``, and never replace something that is not an AnnData store of
the same kind. Readers wrap anndata's errors in :class:`~cellspec_sc.InputError`.

>>> import cellspec_sc as cs, tempfile, pathlib
>>> path = write_h5ad(cs.example(), pathlib.Path(tempfile.mkdtemp()) / "x.h5ad")
>>> read_h5ad(path).equals(cs.example())
True
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cellspec_sc._files import scratch_folder
from cellspec_sc.bridges._zarr import OBJECT_VALUE_BYTES, InflatedStore, bounded_string_chunks, refuse_inflated_store
from cellspec_sc.bridges.anndata._convert import from_anndata, to_anndata
from cellspec_sc.bridges.anndata._keys import AnnDataBridgeWarning
from cellspec_sc.errors import FormatError, InputError, MissingPath, require_extra
from cellspec_sc.io import (
    DEFAULT_MAX_INFLATION,
    INFLATION_FLOOR_BYTES,
    TargetKind,
    check_file_url,
    check_store_url,
    check_target,
    check_url_target_of,
    is_url,
    publishing,
    root_attributes,
    upload_file,
    upload_store,
    zarr_root_attributes,
)
from cellspec_sc.progress import progress
from cellspec_sc.validation import refuse_unstorable

if TYPE_CHECKING:
    import anndata

    from cellspec_sc.model import CellSpec


def is_h5ad(source: str | Path) -> bool:
    """Whether ``source`` is a file whose name ends in ``.h5ad``.

    >>> is_h5ad("no-such-file.h5ad")
    False
    """
    return Path(source).suffix.lower() == ".h5ad" and Path(source).is_file()


def is_anndata_zarr(source: str | Path) -> bool:
    """Whether ``source`` is a zarr store (v2 or v3) whose root group is an AnnData (``encoding-type: anndata``).

    >>> is_anndata_zarr("no-such-store.zarr")
    False
    """
    return zarr_root_attributes(source).get("encoding-type") == "anndata"


def read_h5ad(path: str | Path, *, max_inflation: float = DEFAULT_MAX_INFLATION) -> CellSpec:
    """The cellspec stored in an ``.h5ad`` file (see :func:`cellspec_sc.from_anndata`).

    Parameters
    ----------
    path
        An ``.h5ad`` file written by :func:`write_h5ad` (or ``to_anndata(x).write_h5ad``), of any record version
        this package reads.
    max_inflation
        Its arrays may claim at most this many times the file's size decoded (or 64 MiB, if more): a file
        whose datasets claim more is refused before anything is read.

    Returns
    -------
    CellSpec
        The object; the file's extras (other ``obsm`` entries, ...) are left out without a warning.

    Raises
    ------
    InputError
        The file cannot be read as AnnData, or its ``uns["cellspec"]`` is damaged; the message names the file.
    FormatError
        Its record is of a newer major version than this package reads.

    Examples
    --------
    See the module docstring.
    """
    require_extra("anndata", "cellspec_sc.bridges.anndata.read_h5ad")
    import anndata

    return _from_store(path, anndata.read_h5ad, max_inflation)


def read_anndata_zarr(path: str | Path, *, max_inflation: float = DEFAULT_MAX_INFLATION) -> CellSpec:
    """The cellspec stored in an AnnData ``.zarr`` store: as :func:`read_h5ad`, for a store written by
    :func:`write_anndata_zarr` (or ``to_anndata(x).write_zarr``); its arrays too are bounded by
    ``max_inflation`` times the bytes of its files.

    >>> import cellspec_sc as cs, tempfile, pathlib
    >>> path = write_anndata_zarr(cs.example(), pathlib.Path(tempfile.mkdtemp()) / "x.zarr")
    >>> read_anndata_zarr(path).equals(cs.example())
    True
    """
    require_extra("anndata", "cellspec_sc.bridges.anndata.read_anndata_zarr")
    import anndata

    return _from_store(path, anndata.read_zarr, max_inflation)


def read_anndata_file(path: str | Path, reader=None, max_inflation: float = DEFAULT_MAX_INFLATION) -> anndata.AnnData:
    """``path`` read by ``reader`` (default ``anndata.read_h5ad``), with any error of anndata, h5py or zarr
    (they raise many types for damaged or foreign files) as an InputError naming the file; a zarr string chunk
    that claims more values than it holds is refused before it is decoded (:mod:`cellspec_sc.bridges._zarr`),
    and so are arrays that claim more than ``max_inflation`` times the bytes present."""
    require_extra("anndata", "cellspec_sc.bridges.anndata.read_anndata_file")
    if reader is None:
        import anndata

        reader = anndata.read_h5ad
    if not Path(path).exists():
        raise MissingPath(path, f"{path}: no such file or directory")
    try:
        if Path(path).is_dir():
            refuse_inflated_store(path, max_inflation, INFLATION_FLOOR_BYTES)
        elif Path(path).is_file():
            _refuse_inflated_h5(Path(path), max_inflation)
        with bounded_string_chunks():
            return reader(path)
    except InflatedStore:
        raise
    except Exception as err:
        raise InputError(f"{path}: cannot be read as AnnData ({type(err).__name__}: {err})") from None


def read_anndata(path: str | Path) -> anndata.AnnData | None:
    """The AnnData of an ``.h5ad`` file or an AnnData ``.zarr`` store as anndata reads it (its ``obsm``
    embeddings and ``uns`` colours with it), None when ``path`` is neither.

    >>> import cellspec_sc as cs, tempfile, pathlib
    >>> path = write_anndata_zarr(cs.example(), pathlib.Path(tempfile.mkdtemp()) / "x.zarr")
    >>> read_anndata(path).obsm["spatial"].shape, read_anndata("example")
    ((80, 2), None)
    """
    import anndata

    if is_h5ad(path):
        return read_anndata_file(path, anndata.read_h5ad)
    if is_anndata_zarr(path):
        return read_anndata_file(path, anndata.read_zarr)
    return None


def _refuse_inflated_h5(path: Path, max_inflation: float) -> None:
    """As :func:`~cellspec_sc.bridges._zarr.refuse_inflated_store`, for the datasets of an HDF5 file (an
    unallocated chunked dataset reads as its fill value, however large its shape)."""
    import h5py

    claims: dict[str, int] = {}

    def visit(name: str, node: object) -> None:
        if isinstance(node, h5py.Dataset):
            itemsize = OBJECT_VALUE_BYTES if node.dtype.kind in "OSUV" else node.dtype.itemsize
            claims[name] = int(node.size or 0) * itemsize

    with h5py.File(path, "r") as handle:
        handle.visititems(visit)
    present = path.stat().st_size
    bound = max(INFLATION_FLOOR_BYTES, present * max_inflation)
    if claims and sum(claims.values()) > bound:
        biggest = max(claims, key=claims.__getitem__)
        raise InflatedStore(f"{path}: its datasets claim {sum(claims.values()):,} bytes decoded ({biggest!r}: "
                            f"{claims[biggest]:,}) from a file of {present:,} bytes, more than "
                            f"max_inflation={max_inflation:g} times that (or {INFLATION_FLOOR_BYTES:,} bytes): the "
                            "file is damaged or crafted; if it is genuine, read it with max_inflation= set higher")


def _from_store(path: str | Path, reader, max_inflation: float = DEFAULT_MAX_INFLATION) -> CellSpec:
    adata = read_anndata_file(path, reader, max_inflation)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AnnDataBridgeWarning)  # a file's extras are expected, not news
            return from_anndata(adata)
    except InputError as err:
        raise InputError(f"{path}: {err}") from None
    except FormatError as err:  # a record of a newer version
        raise FormatError(f"{path}: {err}") from None



def _is_hdf5(head: bytes) -> bool:
    return head.startswith(b"\x89HDF\r\n\x1a\n")


def _holds_anndata(location: Any, present: Mapping[str, int]) -> bool:
    return root_attributes(location, present).get("encoding-type") == "anndata"


def _check_h5ad_url(url: str, storage_options: Mapping[str, Any] | None, overwrite: bool) -> None:
    check_file_url(url, storage_options, overwrite=overwrite, ours=_is_hdf5, what="an .h5ad file")


def _check_store_url(url: str, storage_options: Mapping[str, Any] | None, overwrite: bool) -> None:
    check_store_url(url, storage_options, overwrite=overwrite, ours=_holds_anndata, what="an AnnData store")


H5AD_FILE = TargetKind("an AnnData .h5ad file", False, is_h5ad, url_check=_check_h5ad_url)
ANNDATA_ZARR = TargetKind("an AnnData .zarr store", True, is_anndata_zarr, url_check=_check_store_url)


def write_h5ad(x: CellSpec, path: str | Path, *, overwrite: bool = False,
               storage_options: Mapping[str, Any] | None = None, **options: Any) -> Path | str:
    """Write ``x`` as an ``.h5ad`` file (via :func:`cellspec_sc.to_anndata`) and return the path.

    ``path`` may be a URL on object storage (``s3://bucket/x.h5ad``; the ``cloud`` extra): h5py writes only
    local files, so the file is written in a private local folder and uploaded as one object (a store shows
    the old object or the whole new one), which needs local disk space for one copy.

    Parameters
    ----------
    x
        The object.
    path
        The file to write; staged beside it and published at the end.
    overwrite
        Replace an existing ``.h5ad`` file (never anything else).
    storage_options
        For a URL on object storage: fsspec options of the store (endpoint, credentials).
    **options
        Passed to :func:`cellspec_sc.to_anndata` (``images=``, ``verify=``).

    Returns
    -------
    Path or str
        ``path`` (the URL, for object storage).

    Raises
    ------
    CellspecError
        The target exists (without ``overwrite``) or is no ``.h5ad`` file, ``x`` holds what h5py cannot store
        (:class:`~cellspec_sc.errors.Unstorable`), or the write failed (nothing was published).

    Examples
    --------
    See the module docstring.
    """
    require_extra("anndata", "cellspec_sc.bridges.anndata.write_h5ad")
    if is_url(path):
        check_url_target_of(H5AD_FILE, str(path), storage_options, overwrite=overwrite)  # before anything is built
        return _written_then_uploaded(write_h5ad, x, str(path), ".h5ad", options, lambda local: upload_file(
            local, str(path), storage_options, overwrite=overwrite, ours=_is_hdf5, what="an .h5ad file"))
    check_target(path, H5AD_FILE, overwrite=overwrite)
    refuse_unstorable(x, path, "an .h5ad file (h5py)", text=True, names=False)
    adata = to_anndata(x, **options)
    with publishing(path, H5AD_FILE, overwrite=overwrite) as payload, \
            progress(1, f"writing {Path(path).name}", unit="file", size=adata.X.size):  # anndata shows none
        adata.write_h5ad(payload)
    return Path(path)


def write_anndata_zarr(x: CellSpec, path: str | Path, *, overwrite: bool = False,
                       storage_options: Mapping[str, Any] | None = None, **options: Any) -> Path | str:
    """Write ``x`` as an AnnData ``.zarr`` store and return the path: as :func:`write_h5ad`, for a store (an
    existing one is replaced with ``overwrite=True`` only when it is an AnnData store).

    ``path`` may be a URL on object storage: the store is written locally by anndata, then uploaded with its
    root ``zarr.json`` last, so that no reader opens it before it is complete (``anndata.read_zarr`` reads
    it back through ``zarr.storage.FsspecStore``).

    See :func:`read_anndata_zarr` for an example.
    """
    require_extra("anndata", "cellspec_sc.bridges.anndata.write_anndata_zarr")
    if is_url(path):
        check_url_target_of(ANNDATA_ZARR, str(path), storage_options, overwrite=overwrite)
        return _written_then_uploaded(write_anndata_zarr, x, str(path), ".zarr", options, lambda local: upload_store(
            local, str(path), storage_options, overwrite=overwrite, ours=_holds_anndata, what="an AnnData store"))
    check_target(path, ANNDATA_ZARR, overwrite=overwrite)
    refuse_unstorable(x, path, "an AnnData .zarr store", text=False, names=True)
    adata = to_anndata(x, **options)
    with publishing(path, ANNDATA_ZARR, overwrite=overwrite) as payload, \
            progress(1, f"writing {Path(path).name}", unit="file", size=adata.X.size):
        adata.write_zarr(payload)
    return Path(path)


def _written_then_uploaded(write: Callable[..., Any], x: CellSpec, url: str, suffix: str, options: Mapping[str, Any],
                           upload: Callable[[Path], str]) -> str:
    """``write(x)`` into a private local folder, then ``upload`` of what it wrote; the folder is removed."""
    folder = scratch_folder("upload")
    try:
        return upload(write(x, folder / f"payload{suffix}", **options))
    finally:
        shutil.rmtree(folder, ignore_errors=True)

