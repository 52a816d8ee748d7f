"""The AnnData bridge: a cellspec as an AnnData that scanpy and squidpy understand, and back, losslessly.

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

from cellspec_sc.bridges.anndata_foreign import from_foreign_anndata
from cellspec_sc.bridges.anndata_graph import adjacency_matrices, warn_replaced_graph
from cellspec_sc.bridges.anndata_keys import (
    BRIDGE_VERSION, CONNECTIVITIES_KEY, FUNCTION, SHARED_BOUNDARY_KEY, SPATIAL_KEY, UNS_KEY, AnnDataBridgeWarning,
    warn, warn_not_carried,
)
from cellspec_sc.bridges.anndata_fingerprint import Fingerprinting, holds_written_values, recorded_algorithm
from cellspec_sc.bridges.anndata_matrix import column_fingerprints, dense, is_dask
from cellspec_sc.bridges.anndata_obs import carry_obs_columns, double_column, obs_names, scverse_obs
from cellspec_sc.bridges.anndata_sample import SAMPLE_KEY, sample_check, take_sample
from cellspec_sc.bridges.uns_tables import decode_table, encode_table, from_json_text, known_types, to_json_text
from cellspec_sc.errors import InputError
from cellspec_sc.model.cellspec import CellSpec, drop_missing_pairs
from cellspec_sc.model.provenance import with_history_step
from cellspec_sc.progress import progress
from cellspec_sc.spec.types import as_spec_type, column_spec_types

if TYPE_CHECKING:
    import anndata

# the bridge's keys and warning, imported from here by users
__all__ = ["CONNECTIVITIES_KEY", "SHARED_BOUNDARY_KEY", "SPATIAL_KEY", "UNS_KEY", "AnnDataBridgeWarning",
           "from_anndata", "to_anndata"]


# -- cellspec -> AnnData -------------------------------------------------------------------------
def to_anndata(x: CellSpec, *, copy: bool = True) -> anndata.AnnData:
    """The cellspec as an AnnData: ``X`` = measurements, ``var`` = dictionary, ``obs`` = cells,
    ``obsm["spatial"]`` = centroids in micrometres, ``obsp["spatial_connectivities"]`` /
    ``obsp["cellspec_shared_boundary"]`` = adjacency, and ``uns["cellspec"]`` = everything else needed to
    restore ``x`` exactly.

    ``x`` never changes through the AnnData. ``copy=True`` (the default) gives ``X`` as the AnnData's own
    copy of the matrix, so scanpy's in-place steps (``sc.pp.log1p(adata)``, ``sc.pp.scale(adata)``) work on it
    as usual; ``copy=False`` shares the object's read-only matrix (no memory added), and in-place steps on
    ``X`` then fail with numpy's "output array is read-only": pass ``copy=True`` to them, or write results
    into ``adata.layers``. A lazy object (``read(..., lazy=True)``) gives a dask ``X`` either way.

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
        obs = scverse_obs(x.cells).set_axis(names, axis=0)
        var = x.dictionary.set_axis(pd.Index(x.feature_ids, dtype=object), axis=0)
        obsm = {SPATIAL_KEY: np.column_stack([double_column(x.cells, "x"), double_column(x.cells, "y")])}
        bar.update(1)
        uns = {UNS_KEY: _uns_record(x, matrix.shape, fingerprint)}
        if not is_dask(matrix):  # a lazy X is never loaded to sample it: subsets of it are not checked
            uns[UNS_KEY][SAMPLE_KEY] = take_sample(matrix, names)
        adata = anndata.AnnData(X=matrix, obs=obs, var=var, obsm=obsm, uns=uns)
        bar.update(1)
        if x.adjacency is not None:
            adata.obsp[CONNECTIVITIES_KEY], adata.obsp[SHARED_BOUNDARY_KEY] = adjacency_matrices(x.cells, x.adjacency)
        bar.update(1)
    return adata


def _uns_record(x: CellSpec, shape: tuple[int, ...], fingerprint: Fingerprinting) -> dict[str, Any]:
    meta = {
        "bridge_version": BRIDGE_VERSION,
        "cells_types": dict(column_spec_types(x.cells, "cells")),
        "dictionary_types": dict(column_spec_types(x.dictionary, "dictionary")),
        "cells_fingerprints": column_fingerprints(x.cells),
        "dictionary_fingerprints": column_fingerprints(x.dictionary),
        "feature_ids": x.feature_ids,
        "measurements_shape": list(shape),
    }
    meta["measurements_fingerprint"] = fingerprint.result()
    record: dict[str, Any] = {
        "spec_version": str(x.spec_version),
        "provenance": to_json_text(x.provenance),
        "meta": to_json_text(meta),
        "images": encode_table(x.images, "images"),
        "channels": encode_table(x.channels, "channels"),
    }
    if x.adjacency is not None:
        record["adjacency"] = encode_table(x.adjacency, "adjacency")
    return record


# -- AnnData -> cellspec -------------------------------------------------------------------------
def from_anndata(adata: anndata.AnnData, *, allow_modified: bool = False, **foreign: Any) -> CellSpec:
    """The cellspec held by an AnnData made by :func:`to_anndata`, with analysis results added.

    New ``obs`` columns (``leiden``, ...) become cells columns (categoricals as character;
    names made snake_case with a warning). Rows and columns follow ``obs`` and ``var``, so a
    subset ``adata[mask, features]`` gives a valid subset (contacts of removed cells dropped).
    If ``X`` no longer holds the values written (``sc.pp.log1p`` or ``scale`` in place), they are
    taken from ``adata.raw`` when that still holds them, else a :class:`~cellspec_sc.InputError`
    is raised unless ``allow_modified=True`` (recorded in history). Entries of ``obsm``/``layers``/``obsp``/``varm`` that are not the bridge's own are
    reported in a warning. A history step is appended whenever content changed.

    An AnnData without ``uns["cellspec"]`` (from scimap, spatialdata-io, ...) is converted with
    the keyword arguments of :func:`cellspec_sc.bridges.anndata_foreign.from_foreign_anndata`.

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
    record = adata.uns[UNS_KEY]
    meta = _read_meta(record)
    changes: dict[str, Any] = {}
    matrix = dense(adata.X) if adata.X is not None else np.zeros((adata.n_obs, adata.n_vars))
    written = _fingerprint_of_x(matrix, meta)
    cells = _cells_from_obs(adata.obs, meta, changes)
    dictionary = _dictionary_from_var(adata.var, meta, changes)
    measurements = _measurements_from_x(adata, matrix, meta, allow_modified, changes, written, record)
    adjacency = _adjacency_from_record(record, cells, changes)
    warn_replaced_graph(adata, cells, adjacency)
    warn_not_carried(adata, obsm={SPATIAL_KEY}, obsp={CONNECTIVITIES_KEY, SHARED_BOUNDARY_KEY})
    provenance = _read_json(record, "provenance")
    if changes:
        provenance = with_history_step(provenance, "from_anndata", FUNCTION, changes)
    return CellSpec(
        spec_version=str(record.get("spec_version", "")),
        cells=cells,
        measurements=measurements,
        dictionary=dictionary,
        images=_table(record, "images"),
        channels=_table(record, "channels"),
        provenance=provenance,
        adjacency=adjacency,
    )


def _read_json(record: Mapping[str, Any], key: str) -> Any:
    if key not in record:
        raise InputError(f"uns['cellspec'] has no {key!r}; it was not written by cellspec_sc.to_anndata")
    try:
        return from_json_text(record[key])
    except ValueError as err:
        raise InputError(f"uns['cellspec'][{key!r}] is not valid JSON text ({err})") from None


_META_KEYS = ("cells_types", "dictionary_types", "cells_fingerprints", "dictionary_fingerprints", "feature_ids",
              "measurements_shape")


def _read_meta(record: Any) -> dict[str, Any]:
    if not isinstance(record, Mapping):
        raise InputError(f"uns['cellspec'] is a {type(record).__name__}, not the dict written by "
                         "cellspec_sc.to_anndata")
    meta = _read_json(record, "meta")
    missing = [key for key in _META_KEYS if not isinstance(meta, dict) or key not in meta]
    if isinstance(meta, dict) and not {"measurements_fingerprint", "measurements_sha256"} & set(meta):
        missing.append("measurements_fingerprint")
    if missing:
        raise InputError(f"uns['cellspec']['meta'] lacks {missing}; it was not written by cellspec_sc.to_anndata")
    for key in ("cells_types", "dictionary_types"):
        meta[key] = known_types(meta[key], f"uns['cellspec']['meta'][{key!r}]")
    return meta


def _table(record: Mapping[str, Any], key: str) -> pd.DataFrame:
    if key not in record:
        raise InputError(f"uns['cellspec'] has no table {key!r}; it was not written by cellspec_sc.to_anndata")
    return decode_table(record[key], key)


def _cells_from_obs(obs: pd.DataFrame, meta: Mapping[str, Any], changes: dict[str, Any]) -> pd.DataFrame:
    stored_types: dict[str, str | None] = meta["cells_types"]
    obs = obs.reset_index(drop=True)
    new = [name for name in obs.columns if name not in stored_types]
    converted, renamed, dropped = carry_obs_columns(obs, new, taken=set(map(str, obs.columns)))
    columns: dict[str, pd.Series] = {}
    for name in obs.columns:
        if name in stored_types:  # a column without spec type passes through as it was
            spec_type = stored_types[name]
            columns[name] = _restore_column(obs[name], spec_type, f"obs[{name!r}]") if spec_type else obs[name]
        elif name in converted:
            new_name, column = converted[name]
            columns[new_name] = column
    cells = pd.DataFrame(columns, index=pd.RangeIndex(len(obs)), columns=list(columns))
    same_rows = len(cells) == int(meta["measurements_shape"][0])
    _note_table_changes("cells", cells, stored_types, meta["cells_fingerprints"] if same_rows else {}, changes)
    if converted:
        changes["cells_columns_added"] = [new_name for new_name, _ in converted.values()]
    if renamed:
        changes["columns_renamed"] = renamed
    if dropped:
        changes["columns_not_carried"] = dropped
    return cells


def _note_table_changes(table: str, frame: pd.DataFrame, stored_types: Mapping[str, Any],
                        stored_hashes: Mapping[str, str], changes: dict[str, Any]) -> None:
    """Record stored columns that are gone, and (given the stored hashes) columns whose values changed."""
    missing = [name for name in stored_types if name not in frame.columns]
    if missing:
        changes[f"{table}_columns_removed"] = missing
    now = column_fingerprints(frame[[c for c in frame.columns if c in stored_hashes]], stored_hashes)
    edited = [name for name, digest in now.items() if digest != stored_hashes[name]]
    if edited:
        changes[f"{table}_columns_changed"] = edited


def _restore_column(column: pd.Series, spec_type: str, where: str) -> pd.Series:
    try:
        return as_spec_type(column, spec_type)
    except (TypeError, ValueError) as err:
        raise InputError(f"{where} cannot be read back as cellspec type {spec_type} ({err})") from None


def _dictionary_from_var(var: pd.DataFrame, meta: Mapping[str, Any], changes: dict[str, Any]) -> pd.DataFrame:
    stored_types: dict[str, str | None] = meta["dictionary_types"]
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
    if ids != list(meta["feature_ids"]):
        changes["features_before"], changes["features_after"] = len(meta["feature_ids"]), len(ids)
        _note_table_changes("dictionary", dictionary, stored_types, {}, changes)
    else:
        _note_table_changes("dictionary", dictionary, stored_types, meta["dictionary_fingerprints"], changes)
    return dictionary


def _fingerprint_of_x(matrix: np.ndarray, meta: Mapping[str, Any]) -> Fingerprinting | None:
    """X's fingerprint, computed in a thread while obs and var are restored; None when X cannot hold the
    written values (another dtype or shape) or the record holds the older SHA-256."""
    if matrix.dtype != np.float64 or list(matrix.shape) != list(meta["measurements_shape"]) or \
            "measurements_fingerprint" not in meta:
        return None
    return Fingerprinting(matrix, recorded_algorithm(meta["measurements_fingerprint"]))


def _measurements_from_x(adata: anndata.AnnData, matrix: np.ndarray, meta: Mapping[str, Any], allow_modified: bool,
                         changes: dict[str, Any], written: Fingerprinting | None,
                         record: Mapping[str, Any]) -> np.ndarray:
    raw = _raw_measurements(adata, meta)
    if raw is not None:
        return raw
    problem = None
    if np.asarray(matrix).dtype != np.float64:
        problem = f"X has dtype {np.asarray(matrix).dtype}, not the float64 measurements written by to_anndata"
    elif _as_written(matrix, adata.var_names, meta, changes):  # the fingerprint covers X as written: every value
        if not holds_written_values(matrix, meta, written):
            problem = MODIFIED
    else:  # rows or columns subset or reordered: the sample of cells in uns
        problem = _sample_problem(adata, matrix, meta, record)
    if problem is not None:
        if not allow_modified:
            raise InputError(f"{problem}. cellspec measurements are raw values (spec section 3): keep raw values "
                             "in X and put transforms in adata.layers, or pass allow_modified=True to store X "
                             "as it is now (recorded in provenance history)")
        changes["measurements_modified"] = problem
    if matrix.shape[0] != int(meta["measurements_shape"][0]):
        changes["cells_before"], changes["cells_after"] = int(meta["measurements_shape"][0]), int(matrix.shape[0])
    out = np.asarray(matrix, dtype=np.float64)
    return out if out.flags.c_contiguous or out.flags.f_contiguous else np.ascontiguousarray(out)


MODIFIED = "X no longer holds the values written by to_anndata (changed in place, e.g. by sc.pp.log1p or sc.pp.scale)"


def _as_written(matrix: np.ndarray, var_names: pd.Index, meta: Mapping[str, Any], changes: Mapping[str, Any]) -> bool:
    """Whether X has the rows and columns written, in their order (cell and image ids unchanged)."""
    reordered = {"cell_id", "image_id"} & set(changes.get("cells_columns_changed", ()))
    return list(matrix.shape) == list(meta["measurements_shape"]) and not reordered and \
        list(map(str, var_names)) == list(meta["feature_ids"])


def _sample_problem(adata: anndata.AnnData, matrix: np.ndarray, meta: Mapping[str, Any],
                    record: Mapping[str, Any]) -> str | None:
    """What is wrong with a subset or reordered X at the sampled cells (None: nothing), warning when it cannot be
    checked."""
    sample = record.get(SAMPLE_KEY)
    if not isinstance(sample, Mapping) or not {"obs_names", "values"} <= set(sample):
        return None  # written before samples were kept (or from a lazy X): as before, not checked
    found = sample_check(matrix, adata.obs.index, adata.var_names, sample, meta["feature_ids"])
    if found is None:
        warn("X could not be checked against the values to_anndata wrote: none of the cells it sampled is left "
             "(or obs names repeat); make sure X still holds raw measurements")
        return None
    if found.differing:
        return (f"X no longer holds the values written by to_anndata: {found.differing} of the {found.cells} "
                "sampled cells still there differ (changed in place, e.g. by sc.pp.log1p or sc.pp.scale after "
                "subsetting)")
    return None


def _raw_measurements(adata: anndata.AnnData, meta: Mapping[str, Any]) -> np.ndarray | None:
    """The measurements from ``adata.raw`` (scanpy's ``adata.raw = adata`` before ``log1p``), when
    ``raw.X`` still holds exactly what ``to_anndata`` wrote; columns follow ``adata.var``."""
    raw = adata.raw
    if raw is None or raw.X is None or list(raw.shape) != list(meta["measurements_shape"]):
        return None
    matrix = dense(raw.X)
    if matrix.dtype != np.float64 or not holds_written_values(matrix, meta):
        return None
    positions = pd.Index(list(map(str, raw.var_names))).get_indexer(list(map(str, adata.var_names)))
    if (positions < 0).any():
        return None
    return matrix if np.array_equal(positions, np.arange(matrix.shape[1])) else np.ascontiguousarray(matrix[:, positions])


def _adjacency_from_record(record: Mapping[str, Any], cells: pd.DataFrame,
                           changes: dict[str, Any]) -> pd.DataFrame | None:
    if "adjacency" not in record:
        return None
    stored = _table(record, "adjacency")
    if not {"image_id", "cell_id"} <= set(cells.columns):
        raise InputError("obs has lost image_id or cell_id, so adjacency cannot be matched to cells")
    kept = drop_missing_pairs(stored, cells)
    if len(kept) != len(stored):
        changes["contacts_dropped"] = int(len(stored) - len(kept))
    return kept


