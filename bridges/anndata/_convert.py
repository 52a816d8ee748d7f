"""A cellspec as an AnnData that scanpy and squidpy understand, and back, losslessly: ``to_anndata`` and
``from_anndata`` (obs and var restored to cells and dictionary with what changed noted in history).

See ``docs/anndata.md`` for the mapping table.

>>> import cellspec_sc as cs
>>> x = cs.example(adjacency=True)
>>> adata = cs.to_anndata(x)
>>> adata.obsm["spatial"].shape, adata.obsp["spatial_connectivities"].shape
((80, 2), (80, 80))
>>> cs.from_anndata(adata).equals(x)
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cellspec_sc.bridges.anndata._categories import captured_styles
from cellspec_sc.bridges.anndata._foreign import from_foreign_anndata
from cellspec_sc.bridges.anndata._keys import (
    CONNECTIVITIES_KEY,
    FUNCTION,
    SHARED_BOUNDARY_KEY,
    SPATIAL_KEY,
    warn,
    warn_not_carried,
)
from cellspec_sc.bridges.anndata._matrix import dense, is_dask, measurements_from_x, take_sample, x_fingerprint
from cellspec_sc.bridges.anndata._obs import (
    adjacency_matrices,
    carry_obs_columns,
    double_column,
    obs_names,
    scverse_obs,
    warn_replaced_graph,
)
from cellspec_sc.bridges.anndata._record import UNS_KEY, Fingerprinting, StoredRecord, changed_columns, decode, encode
from cellspec_sc.errors import InputError
from cellspec_sc.model import CellSpec, drop_missing_pairs, with_history_step
from cellspec_sc.progress import progress
from cellspec_sc.spec import as_spec_type

if TYPE_CHECKING:
    import anndata


# -- cellspec -> AnnData -------------------------------------------------------------------------
def to_anndata(x: CellSpec, *, copy: bool = True) -> anndata.AnnData:
    """The cellspec as an AnnData that scanpy and squidpy understand; ``x`` never changes through it.

    Parameters
    ----------
    x
        The object. A lazy (dask) matrix stays lazy in ``X``.
    copy
        ``True`` (the default): ``X`` is the AnnData's own copy of the measurements, so scanpy's in-place steps
        (``sc.pp.log1p(adata)``, ``sc.pp.scale(adata)``, ``adata.X[...] = ...``) work as usual and change only
        the AnnData. ``False``: ``X`` is ``x``'s read-only matrix (no memory added); steps that write ``X`` in
        place then fail with numpy's "output array is read-only": pass ``copy=True`` to them
        (``sc.pp.log1p(adata, copy=True)``) or put the result in ``adata.layers``.

    Returns
    -------
    anndata.AnnData
        ``X`` = measurements (see ``copy``), ``var`` = dictionary, ``obs`` = cells,
        ``obsm["spatial"]`` = centroids in micrometres, ``obsp["spatial_connectivities"]`` /
        ``obsp["cellspec_shared_boundary"]`` = adjacency, and ``uns["cellspec"]`` = everything else needed to
        restore ``x`` exactly (the versioned record of :mod:`._record`).

    Raises
    ------
    InputError
        ``x.cells`` has no ``cell_id`` or ``image_id`` column (rows are named by them).

    Examples
    --------
    >>> import cellspec_sc as cs
    >>> adata = cs.to_anndata(cs.example())
    >>> adata.var.query('kind == "intensity" and marker == "CD3e"').index.tolist()[:2]
    ['cell:CD3e:mean', 'cell:CD3e:median']
    """
    import anndata

    missing = [c for c in ("cell_id", "image_id") if c not in x.cells.columns]
    if missing:
        raise InputError(f"cells has no {' and no '.join(missing)} column (cells_required_columns); "
                         "AnnData rows are named by image_id and cell_id")
    # A dask matrix (cellspec_sc.read(path, lazy=True)) stays lazy: AnnData supports a dask-backed X.
    source = x.measurements if is_dask(x.measurements) else np.asarray(x.measurements)
    if source.dtype != np.float64:
        source = source.astype(np.float64)
    fingerprint = Fingerprinting(source)  # the one pass over X, on the other core meanwhile
    matrix = np.array(source, order="K") if copy and not is_dask(source) else source
    with progress(3, "to_anndata", unit="steps", size=matrix.size) as bar:
        names = pd.Index(obs_names(x.cells), dtype=object)
        obs, colours = scverse_obs(x.cells, x.provenance)
        obs = obs.set_axis(names, axis=0)
        var = x.dictionary.set_axis(pd.Index(x.feature_ids, dtype=object), axis=0)
        obsm = {SPATIAL_KEY: np.column_stack([double_column(x.cells, "x"), double_column(x.cells, "y")])}
        bar.update(1)
        # a lazy X is never loaded to sample it: subsets of it are not checked
        sample = None if is_dask(matrix) else take_sample(matrix, names)
        uns = {UNS_KEY: encode(x, fingerprint, sample), **colours}
        adata = anndata.AnnData(X=matrix, obs=obs, var=var, obsm=obsm, uns=uns)
        bar.update(1)
        if x.adjacency is not None:
            adata.obsp[CONNECTIVITIES_KEY], adata.obsp[SHARED_BOUNDARY_KEY] = adjacency_matrices(x.cells, x.adjacency)
        bar.update(1)
    return adata


# -- AnnData -> cellspec -------------------------------------------------------------------------
def from_anndata(adata: anndata.AnnData, *, allow_modified: bool = False, **foreign: Any) -> CellSpec:
    """The cellspec held by an AnnData made by :func:`to_anndata`, with analysis results added.

    New ``obs`` columns (``leiden``, ...) become cells columns (categoricals as character;
    names made snake_case with a warning). Rows and columns follow ``obs`` and ``var``, so a
    subset ``adata[mask, features]`` gives a valid subset (contacts of removed cells dropped).
    If ``X`` no longer holds the values written (``sc.pp.log1p`` or ``scale`` in place), they are
    taken from ``adata.raw`` when that still holds them. Entries of ``obsm``/``layers``/``obsp``/``varm``
    that are not the bridge's own are reported in an :class:`AnnDataBridgeWarning`. A history step is
    appended whenever content changed.

    Parameters
    ----------
    adata
        An AnnData from :func:`to_anndata` (``uns["cellspec"]`` of any version this package wrote), or one made
        elsewhere, without ``uns["cellspec"]``.
    allow_modified
        Store an ``X`` that no longer holds the values written as it is now (recorded in history) instead of
        refusing it.
    **foreign
        Only for an AnnData without ``uns["cellspec"]`` (from scimap, spatialdata-io, ...): the keyword arguments
        of :func:`cellspec_sc.bridges.anndata.from_foreign_anndata` (``preset=``, ``pixel_size=``, ...).

    Returns
    -------
    CellSpec
        The object, its provenance extended by what changed since :func:`to_anndata`.

    Raises
    ------
    InputError
        ``X`` changed without ``allow_modified``, ``uns["cellspec"]`` is damaged, or ``foreign`` arguments were
        given for an AnnData of :func:`to_anndata`.
    FormatError
        ``uns["cellspec"]`` is of a newer major version than this package reads (the message names both).

    Examples
    --------
    >>> import cellspec_sc as cs
    >>> adata = cs.to_anndata(cs.example())
    >>> adata.obs["leiden"] = pd.Categorical(["0", "1"] * 40)
    >>> cs.from_anndata(adata).cells["leiden"].dtype
    <StringDtype(na_value=<NA>)>
    """
    if UNS_KEY not in adata.uns:
        return from_foreign_anndata(adata, allow_modified=allow_modified, **foreign)
    if foreign:
        raise InputError(f"from_anndata: {sorted(foreign)} only apply to an AnnData without uns['cellspec']")
    stored = decode(adata.uns[UNS_KEY], where=f"uns[{UNS_KEY!r}]")
    changes: dict[str, Any] = {}
    matrix = dense(adata.X) if adata.X is not None else np.zeros((adata.n_obs, adata.n_vars))
    written = x_fingerprint(matrix, stored)
    cells, carried = _cells_from_obs(adata.obs, stored, changes)
    dictionary = _dictionary_from_var(adata.var, stored, changes)
    measurements = measurements_from_x(adata, matrix, stored, allow_modified, changes, written)
    adjacency = _adjacency_from_record(stored, cells, changes)
    warn_replaced_graph(adata, cells, adjacency)
    warn_not_carried(adata, obsm={SPATIAL_KEY}, obsp={CONNECTIVITIES_KEY, SHARED_BOUNDARY_KEY})
    provenance = captured_styles(adata.obs, adata.uns, carried, stored.provenance(),
                                 stored=stored.cells_types or {})
    if changes:
        provenance = with_history_step(provenance, "from_anndata", FUNCTION, changes)
    return CellSpec(
        spec_version=stored.spec_version,
        cells=cells,
        measurements=measurements,
        dictionary=dictionary,
        images=stored.table("images"),
        channels=stored.table("channels"),
        provenance=provenance,
        adjacency=adjacency,
    )


def _cells_from_obs(obs: pd.DataFrame, stored: StoredRecord, changes: dict[str, Any]
                    ) -> tuple[pd.DataFrame, dict[Any, str]]:
    """cells from ``obs``, and the name in cells of every obs column carried."""
    stored_types = stored.cells_types
    obs = obs.reset_index(drop=True)
    new = [name for name in obs.columns if name not in stored_types]
    converted, renamed, dropped = carry_obs_columns(obs, new, taken=set(map(str, obs.columns)))
    columns: dict[str, pd.Series] = {}
    carried: dict[Any, str] = {}
    for name in obs.columns:
        if name in stored_types:  # a column without spec type passes through as it was
            spec_type = stored_types[name]
            columns[name] = _restore_column(obs[name], spec_type, f"obs[{name!r}]") if spec_type else obs[name]
            carried[name] = str(name)
        elif name in converted:
            new_name, column = converted[name]
            columns[new_name] = column
            carried[name] = new_name
    cells = pd.DataFrame(columns, index=pd.RangeIndex(len(obs)), columns=list(columns))
    same_rows = len(cells) == stored.shape[0]
    _note_table_changes("cells", cells, stored_types, stored.cells_fingerprints if same_rows else {}, changes)
    if converted:
        changes["cells_columns_added"] = [new_name for new_name, _ in converted.values()]
    if renamed:
        changes["columns_renamed"] = renamed
    if dropped:
        changes["columns_not_carried"] = dropped
    return cells, carried


def _note_table_changes(table: str, frame: pd.DataFrame, stored_types: Mapping[str, Any],
                        stored_hashes: Mapping[str, str], changes: dict[str, Any]) -> None:
    """Record stored columns that are gone, and (given the stored hashes) columns whose values changed."""
    missing = [name for name in stored_types if name not in frame.columns]
    if missing:
        changes[f"{table}_columns_removed"] = missing
    edited = changed_columns(frame, stored_hashes)
    if edited:
        changes[f"{table}_columns_changed"] = edited


def _restore_column(column: pd.Series, spec_type: str, where: str) -> pd.Series:
    try:
        return as_spec_type(column, spec_type)
    except (TypeError, ValueError) as err:
        raise InputError(f"{where} cannot be read back as cellspec type {spec_type} ({err})") from None


def _dictionary_from_var(var: pd.DataFrame, stored: StoredRecord, changes: dict[str, Any]) -> pd.DataFrame:
    stored_types = stored.dictionary_types
    keep = [name for name in var.columns if name in stored_types]
    extra = [str(name) for name in var.columns if name not in stored_types]
    data = {name: _restore_column(var[name].reset_index(drop=True), stored_types[name], f"var[{name!r}]")
            if stored_types[name] else var[name].reset_index(drop=True) for name in keep}
    if "feature_id" not in data:
        data = {"feature_id": as_spec_type(pd.Series(list(map(str, var.index))), "character"), **data}
    dictionary = pd.DataFrame(data, index=pd.RangeIndex(len(var)), columns=list(data))
    if extra:
        warn(f"var columns {extra} are not dictionary columns and are not carried into the cellspec")
    ids = [str(f) for f in dictionary["feature_id"]]
    if ids != stored.feature_ids:
        changes["features_before"], changes["features_after"] = len(stored.feature_ids), len(ids)
        _note_table_changes("dictionary", dictionary, stored_types, {}, changes)
    else:
        _note_table_changes("dictionary", dictionary, stored_types, stored.dictionary_fingerprints, changes)
    return dictionary


def _adjacency_from_record(stored: StoredRecord, cells: pd.DataFrame,
                           changes: dict[str, Any]) -> pd.DataFrame | None:
    adjacency = stored.adjacency()
    if adjacency is None:
        return None
    if not {"image_id", "cell_id"} <= set(cells.columns):
        raise InputError("obs has lost image_id or cell_id, so adjacency cannot be matched to cells")
    kept = drop_missing_pairs(adjacency, cells)
    if len(kept) != len(adjacency):
        changes["contacts_dropped"] = int(len(adjacency) - len(kept))
    return kept


