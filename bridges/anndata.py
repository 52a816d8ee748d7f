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

import hashlib
import os
import re
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import xxhash

from cellspec_sc.model.cellspec import CellSpec, drop_missing_pairs, contact_positions
from cellspec_sc.errors import InputError
from cellspec_sc.model.names import first_free_name
from cellspec_sc.model.provenance import with_history_step
from cellspec_sc.progress import progress
from cellspec_sc.spec.types import as_spec_type, column_spec_types
from cellspec_sc.spec.vocabulary import vocabulary
from cellspec_sc.validation.matrix_stats import row_blocks

from cellspec_sc.bridges.uns_tables import decode_table, encode_table, from_json_text, to_json_text

if TYPE_CHECKING:
    import anndata

UNS_KEY = "cellspec"
SPATIAL_KEY = "spatial"
CONNECTIVITIES_KEY = "spatial_connectivities"
SHARED_BOUNDARY_KEY = "cellspec_shared_boundary"
BRIDGE_VERSION = "1"
FUNCTION = "cellspec_sc.from_anndata"


class AnnDataBridgeWarning(UserWarning):
    """Something in an AnnData was renamed or not carried into the cellspec."""


def warn(message: str) -> None:
    """Warn with the location of the user's call (frames inside this package are skipped)."""
    warnings.warn(message, AnnDataBridgeWarning, skip_file_prefixes=(os.path.dirname(__file__),))


# -- cellspec -> AnnData -------------------------------------------------------------------------
def to_anndata(x: CellSpec) -> anndata.AnnData:
    """The cellspec as an AnnData: ``X`` = measurements (shared memory, no copy, when float64),
    ``var`` = dictionary, ``obs`` = cells, ``obsm["spatial"]`` = centroids in micrometres,
    ``obsp["spatial_connectivities"]`` / ``obsp["cellspec_shared_boundary"]`` = adjacency, and
    ``uns["cellspec"]`` = everything else needed to restore ``x`` exactly. ``x`` is not changed.

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
    matrix = x.measurements if _is_dask(x.measurements) else np.asarray(x.measurements)
    if matrix.dtype != np.float64:
        matrix = matrix.astype(np.float64)
    with progress(3, "to_anndata", unit="steps", size=matrix.size) as bar:
        names = pd.Index(obs_names(x.cells), dtype=object)
        obs = scverse_obs(x.cells).set_axis(names, axis=0)
        var = x.dictionary.set_axis(pd.Index(x.feature_ids, dtype=object), axis=0)
        obsm = {SPATIAL_KEY: np.column_stack([_double(x.cells, "x"), _double(x.cells, "y")])}
        bar.update(1)
        adata = anndata.AnnData(X=matrix, obs=obs, var=var, obsm=obsm, uns={UNS_KEY: _uns_record(x, matrix)})
        bar.update(1)
        if x.adjacency is not None:
            adata.obsp[CONNECTIVITIES_KEY], adata.obsp[SHARED_BOUNDARY_KEY] = adjacency_matrices(x.cells, x.adjacency)
        bar.update(1)
    return adata


CATEGORICAL_COLUMNS = ("image_id", "sample_id", "classification")


def scverse_obs(cells: pd.DataFrame) -> pd.DataFrame:
    """``cells`` with the text columns squidpy, scimap and spatialdata-plot group by as categoricals:
    ``image_id``, ``sample_id``, ``classification``, ``region__*`` and any other text column (but
    ``cell_id``) with at most half as many distinct values as rows. ``from_anndata`` restores them to
    text from the stored spec types, so the round trip stays exact.

    >>> cells = pd.DataFrame({"cell_id": ["1", "2", "3"], "image_id": ["a", "a", "b"], "note": ["x", "y", "z"]},
    ...                      dtype="string")
    >>> scverse_obs(cells).dtypes.astype(str).tolist()
    ['string', 'category', 'string']
    """
    out = {}
    for name in cells.columns:
        column = cells[name]
        if name != "cell_id" and isinstance(column.dtype, pd.StringDtype) and (
                name in CATEGORICAL_COLUMNS or str(name).startswith("region__")
                or column.nunique(dropna=True) <= len(column) // 2):
            column = pd.Series(pd.Categorical(column.astype(object).where(column.notna(), None)),
                               index=column.index, name=name)
        out[name] = column
    return pd.DataFrame(out, index=cells.index, columns=cells.columns)


def obs_names(cells: pd.DataFrame) -> list[str]:
    """Unique row names ``<image_id>:<cell_id>``; ``\\`` and ``:`` in image_id are escaped so
    that different keys never give the same name.

    >>> obs_names(pd.DataFrame({"image_id": ["img1", "a:b"], "cell_id": ["001", "c"]}))
    ['img1:001', 'a\\\\:b:c']
    """
    if all(isinstance(cells[c].dtype, pd.StringDtype) for c in ("image_id", "cell_id")):
        return _joined_in_arrow(cells["image_id"], cells["cell_id"])
    codes, images = pd.factorize(cells["image_id"].astype(object).to_numpy())
    prefixes = np.array([_escape(i) for i in images] + ["<NA>"], dtype=object)[codes]
    return [f"{i}:{c}" for i, c in zip(prefixes.tolist(), cells["cell_id"].astype(object).tolist(), strict=True)]


def _joined_in_arrow(image_id: pd.Series, cell_id: pd.Series) -> list[str]:
    """:func:`obs_names` of text columns, joined by Arrow (half the time of Python for a million cells)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    images = _one_chunk(pa.array(image_id, type=pa.string(), from_pandas=True)).dictionary_encode()
    escaped = pa.array([_escape(i) for i in images.dictionary.to_pylist()] + ["<NA>"], type=pa.string())
    prefixes = escaped.take(images.indices.fill_null(len(images.dictionary)))
    ids = _one_chunk(pa.array(cell_id, type=pa.string(), from_pandas=True)).fill_null("<NA>")  # f"{pd.NA}" is "<NA>" too
    return pc.binary_join_element_wise(prefixes, ids, ":").to_numpy(zero_copy_only=False).tolist()


def _one_chunk(array: Any) -> Any:
    """An Arrow-backed pandas column (e.g. after pd.concat) converts to a ChunkedArray: make it one array."""
    return array.combine_chunks() if hasattr(array, "combine_chunks") else array


def _escape(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace(":", "\\:")


def _double(frame: pd.DataFrame, column: str) -> np.ndarray:
    if column not in frame:
        return np.full(len(frame), np.nan)
    return as_spec_type(frame[column], "double").to_numpy(dtype=np.float64, na_value=np.nan)


def adjacency_matrices(cells: pd.DataFrame, adjacency: pd.DataFrame) -> tuple[Any, Any]:
    """Symmetric cells x cells CSR matrices: 1.0 for every contact, and its shared boundary (um).

    Contacts whose cells are not in ``cells`` are left out (the uns table keeps them).
    """
    from scipy import sparse

    a, b = contact_positions(cells, adjacency)
    found = (a >= 0) & (b >= 0)
    a, b = a[found], b[found]
    boundary = _double(adjacency, "shared_boundary")[found]
    rows, cols = np.concatenate([a, b]), np.concatenate([b, a])
    n = len(cells)
    ones = sparse.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    shared = sparse.csr_matrix((np.concatenate([boundary, boundary]), (rows, cols)), shape=(n, n))
    return ones, shared


def measurement_fingerprint(matrix: Any, algorithm: str = "xxh3_128") -> str:
    """A digest of the float64 bytes of a matrix (C order) and its shape: detects ``X`` changed in place.

    ``"xxh3_128:<hex>"`` (xxhash, at the speed of memory: a 1.6 GB matrix in about 0.1 s, where
    SHA-256 took 1.1 s); ``algorithm="sha256"`` gives the bare hex digest that records written before
    stored as ``measurements_sha256``. Dense and dask matrices are hashed a row block at a time, so a
    dask X is never loaded whole.

    >>> measurement_fingerprint(np.zeros((2, 2)))[:9]
    'xxh3_128:'
    """
    digest = xxhash.xxh3_128() if algorithm == "xxh3_128" else hashlib.new(algorithm)
    digest.update(np.asarray(matrix.shape, dtype=np.int64).tobytes())
    blocks = [(0, dense(matrix))] if hasattr(matrix, "toarray") else row_blocks(matrix)
    with progress(matrix.shape[0], "fingerprinting the measurements", size=np.prod(matrix.shape)) as bar:
        for _, block in blocks:
            block = np.ascontiguousarray(block, dtype=np.float64)
            digest.update(memoryview(block.reshape(-1).view(np.uint8)))
            bar.update(block.shape[0])
    return f"xxh3_128:{digest.hexdigest()}" if algorithm == "xxh3_128" else digest.hexdigest()


def holds_written_values(matrix: Any, meta: Mapping[str, Any]) -> bool:
    """Whether ``matrix`` has the fingerprint ``to_anndata`` recorded (also a record's older SHA-256)."""
    if "measurements_fingerprint" in meta:
        return measurement_fingerprint(matrix) == meta["measurements_fingerprint"]
    return measurement_fingerprint(matrix, "sha256") == meta.get("measurements_sha256")


def _is_dask(matrix: Any) -> bool:
    return type(matrix).__module__.startswith("dask.")


def column_fingerprints(frame: pd.DataFrame) -> dict[str, str]:
    """A hash of each column's values (NA-aware, doubles by their bits), to detect edited columns."""
    out = {}
    for name in frame.columns:
        hashes = pd.util.hash_pandas_object(frame[name], index=False).to_numpy(dtype=np.uint64)
        out[str(name)] = hashlib.sha256(hashes.tobytes()).hexdigest()[:32]
    return out


def _uns_record(x: CellSpec, matrix: np.ndarray) -> dict[str, Any]:
    meta = {
        "bridge_version": BRIDGE_VERSION,
        "cells_types": dict(column_spec_types(x.cells, "cells")),
        "dictionary_types": dict(column_spec_types(x.dictionary, "dictionary")),
        "cells_fingerprints": column_fingerprints(x.cells),
        "dictionary_fingerprints": column_fingerprints(x.dictionary),
        "feature_ids": x.feature_ids,
        "measurements_shape": list(matrix.shape),
        "measurements_fingerprint": measurement_fingerprint(matrix),
    }
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
        from cellspec_sc.bridges.anndata_foreign import from_foreign_anndata

        return from_foreign_anndata(adata, allow_modified=allow_modified, **foreign)
    if foreign:
        raise InputError(f"from_anndata: {sorted(foreign)} only apply to an AnnData without uns['cellspec']")
    record = adata.uns[UNS_KEY]
    meta = _read_meta(record)
    changes: dict[str, Any] = {}
    cells = _cells_from_obs(adata.obs, meta, changes)
    dictionary = _dictionary_from_var(adata.var, meta, changes)
    measurements = _measurements_from_x(adata, meta, allow_modified, changes)
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


def carry_obs_columns(obs: pd.DataFrame, names: list[Any], taken: set[str]
                      ) -> tuple[dict[Any, tuple[str, pd.Series]], dict[str, str], list[str]]:
    """Convert analysis columns ``names`` of ``obs`` to cells columns: ``{name: (snake_case name,
    column)}``, the renamed ones and those of no cellspec type (dropped), with one warning each."""
    out: dict[Any, tuple[str, pd.Series]] = {}
    renamed, dropped = {}, []
    for name in names:
        column = analysis_column(obs[name].reset_index(drop=True))
        if column is None:
            dropped.append(str(name))
            continue
        used = {new for new, _ in out.values()}
        new_name = unique_snake_case(str(name), (taken | used | spec_cells_columns()) - {str(name)})
        if new_name != name:
            renamed[str(name)] = new_name
        out[name] = (new_name, column)
    if renamed:
        warn("obs columns renamed to snake_case for the cellspec: " +
             ", ".join(f"{old!r} -> {new!r}" for old, new in renamed.items()))
    if dropped:
        warn(f"obs columns {dropped} hold values of no cellspec type and are not carried into the cellspec")
    return out, renamed, dropped


def _note_table_changes(table: str, frame: pd.DataFrame, stored_types: Mapping[str, Any],
                        stored_hashes: Mapping[str, str], changes: dict[str, Any]) -> None:
    """Record stored columns that are gone, and (given the stored hashes) columns whose values changed."""
    missing = [name for name in stored_types if name not in frame.columns]
    if missing:
        changes[f"{table}_columns_removed"] = missing
    now = column_fingerprints(frame[[c for c in frame.columns if c in stored_hashes]])
    edited = [name for name, digest in now.items() if digest != stored_hashes[name]]
    if edited:
        changes[f"{table}_columns_changed"] = edited


def _restore_column(column: pd.Series, spec_type: str, where: str) -> pd.Series:
    try:
        return as_spec_type(column, spec_type)
    except (TypeError, ValueError) as err:
        raise InputError(f"{where} cannot be read back as cellspec type {spec_type} ({err})") from None


_SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
_RESERVED = ("region__", "boundary_distance__")


def snake_case(name: str) -> str:
    """``name`` in snake_case (lower case, runs of other characters as one ``_``).

    >>> snake_case("Leiden Cluster"), snake_case("CD3+ cells"), snake_case("1st")
    ('leiden_cluster', 'cd3_cells', 'x1st')
    """
    if _SNAKE.match(name) or name.startswith(_RESERVED):
        return name
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)  # camelCase -> camel_Case
    out = re.sub(r"[^a-z0-9]+", "_", spaced.lower()).strip("_") or "column"
    return out if out[0].isalpha() else f"x{out}"


def spec_cells_columns() -> set[str]:
    """Names the spec defines for cells: a new column is never renamed onto one of them."""
    return {column.name for column in vocabulary().columns("cells")}


def unique_snake_case(name: str, taken: set[str]) -> str:
    """:func:`snake_case` of ``name``, with ``_2``, ``_3``, ... appended if that name is taken."""
    return first_free_name(snake_case(name), taken)


def analysis_column(column: pd.Series) -> pd.Series | None:
    """A column added by analysis in its cellspec type, or None if it has none.

    Categoricals (``leiden``) become character, any float double, small integers integer,
    integers beyond int32 double, booleans logical.

    >>> analysis_column(pd.Series(pd.Categorical(["0", "1"]))).dtype
    <StringDtype(na_value=<NA>)>
    """
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        values = column.astype(object).where(column.notna(), None)
        return as_spec_type(values.map(lambda v: v if v is None else str(v)), "character")
    if pd.api.types.is_bool_dtype(dtype):
        return as_spec_type(column, "logical")
    if pd.api.types.is_integer_dtype(dtype):
        info = np.iinfo(np.int32)
        values = column.dropna()
        fits = values.empty or (int(values.min()) >= info.min and int(values.max()) <= info.max)
        return as_spec_type(column, "integer" if fits else "double")
    if pd.api.types.is_float_dtype(dtype):
        return as_spec_type(column, "double")
    if isinstance(dtype, pd.StringDtype) or (dtype == object and column.dropna().map(type).eq(str).all()):
        return as_spec_type(column, "character")
    return None


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


def _measurements_from_x(adata: anndata.AnnData, meta: Mapping[str, Any], allow_modified: bool,
                         changes: dict[str, Any]) -> np.ndarray:
    matrix = dense(adata.X) if adata.X is not None else np.zeros((adata.n_obs, adata.n_vars))
    raw = _raw_measurements(adata, meta)
    if raw is not None:
        return raw
    problem = None
    if np.asarray(matrix).dtype != np.float64:
        problem = f"X has dtype {np.asarray(matrix).dtype}, not the float64 measurements written by to_anndata"
    elif list(matrix.shape) == list(meta["measurements_shape"]) and \
            not holds_written_values(matrix, meta):
        problem = "X no longer holds the values written by to_anndata (changed in place, e.g. by sc.pp.log1p " \
                  "or sc.pp.scale)"
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


def dense(matrix: Any) -> np.ndarray:
    """A sparse or array-like matrix as a numpy array (no copy when it is one already)."""
    if hasattr(matrix, "toarray"):
        return matrix.toarray()
    return np.asarray(matrix)


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


def warn_replaced_graph(adata: anndata.AnnData, cells: pd.DataFrame, adjacency: pd.DataFrame | None) -> None:
    """Warn when ``obsp["spatial_connectivities"]`` is no longer the graph of the cellspec's contacts
    (``sq.gr.spatial_neighbors`` writes its own graph under that key): it is not carried."""
    from scipy import sparse

    if CONNECTIVITIES_KEY not in adata.obsp:
        return
    graph = sparse.csr_matrix(adata.obsp[CONNECTIVITIES_KEY])
    if adjacency is not None:
        expected, _ = adjacency_matrices(cells, adjacency)
        if graph.shape == expected.shape and (graph != expected).nnz == 0:
            return
    stored = "no adjacency" if adjacency is None else f"its {len(adjacency)} stored contacts"
    warn(f"obsp[{CONNECTIVITIES_KEY!r}] is not the cellspec adjacency any more ({graph.nnz} non-zero entries; "
         "replaced, e.g. by squidpy's spatial_neighbors) and is not carried into the cellspec, which keeps "
         f"{stored}. To keep both, build squidpy's graph with key_added='<name>' (the bridge's graph stays); keep "
         "what you computed from it as obs columns (they become cells columns); or replace the contacts with "
         "x.replace(adjacency=<table with method 'mask_touching', 'polygon_intersection' or 'delaunay'>), as "
         "docs/anndata.md shows")


def warn_not_carried(adata: anndata.AnnData, obsm: set[str] = frozenset(), obsp: set[str] = frozenset(),
                     layers: set[str] = frozenset()) -> None:
    """Warn about ``obsm``/``layers``/``obsp``/``varm`` entries that are not the given ones (the bridge's own)."""
    own = {"obsm": obsm, "obsp": obsp, "layers": layers, "varm": set()}
    left = [f"{slot}[{key!r}]" for slot, mine in own.items() for key in getattr(adata, slot).keys()
            if key is not None and key not in mine]
    if left:
        warn(f"not carried into the cellspec (analysis results outside obs): {', '.join(left)}")

