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

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cellspec_sc.bridges.anndata._categories import captured_styles
from cellspec_sc.bridges.anndata._foreign import from_foreign_anndata
from cellspec_sc.bridges.anndata._images import spatial_uns
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
from cellspec_sc.bridges.anndata._record import (
    UNS_KEY,
    Fingerprinting,
    StoredRecord,
    array_fingerprint,
    changed_columns,
    decode,
    encode,
)
from cellspec_sc.errors import FormatError, InputError, require_extra
from cellspec_sc.images import ImageInput, checked_images
from cellspec_sc.io import supported_version
from cellspec_sc.model import CellSpec, drop_missing_pairs, with_history_step
from cellspec_sc.progress import progress
from cellspec_sc.spec import as_spec_type

if TYPE_CHECKING:
    import anndata


# -- cellspec -> AnnData -------------------------------------------------------------------------
def to_anndata(x: CellSpec, *, copy: bool = True, features: Any = None, var_names: str = "feature_id",
               images: Mapping[str, ImageInput] | None = None, verify: bool = True) -> anndata.AnnData:
    """The cellspec as an AnnData that scanpy and squidpy understand; ``x`` never changes through it.

    Parameters
    ----------
    x
        The object. A lazy (dask) matrix stays lazy in ``X``.
    features
        The features to convert (default: all): anything :meth:`CellSpec.subset` takes, e.g. a dictionary query
        ``{"statistic": "mean", "compartment": "cell"}`` or a list of feature ids. The AnnData then holds
        ``x.subset(features=features)``, which :func:`from_anndata` gives back.
    var_names
        ``"feature_id"`` (the default): features are named by their ids (``cell:CD45:mean``). ``"marker"``:
        intensity features are named by their marker (``CD45``), so ``sc.pl.umap(adata, color="CD45")`` works
        and plots are labelled by marker; features without a marker (areas, ...) keep their id. Refused, naming
        the collisions, when two selected features share a marker: select one per marker with ``features``.
        ``var`` holds the full dictionary either way (``feature_id`` included).
    copy
        ``True`` (the default): ``X`` is the AnnData's own copy of the measurements, so scanpy's in-place steps
        (``sc.pp.log1p(adata)``, ``sc.pp.scale(adata)``, ``adata.X[...] = ...``) work as usual and change only
        the AnnData. ``False``: ``X`` is ``x``'s read-only matrix (no memory added); steps that write ``X`` in
        place then fail with numpy's "output array is read-only": pass ``copy=True`` to them
        (``sc.pp.log1p(adata, copy=True)``) or put the result in ``adata.layers``.
    images
        ``{image_id: path or cs.open_image(...)}``, each checked against ``x`` first: fills squidpy's
        ``uns["spatial"][image_id]`` (``images["hires"]``, longest side at most 2,000 px, and ``scalefactors``
        matching ``obsm["spatial"]``) with ``obs["image_id"]`` as the library key (``docs/images.md``).
    verify
        Compare each image file's SHA-256 with ``images.source_image_sha256`` where that is set.

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
        ``x.cells`` has no ``cell_id`` or ``image_id`` column (rows are named by them); ``var_names="marker"``
        with two selected features of one marker; an unknown ``var_names`` or feature.
    ImageError
        An image does not match its row of ``x.images`` or its ``image_id`` is unknown.

    Examples
    --------
    >>> import cellspec_sc as cs
    >>> adata = cs.to_anndata(cs.example())
    >>> adata.var.query('kind == "intensity" and marker == "CD3e"').index.tolist()[:2]
    ['cell:CD3e:mean', 'cell:CD3e:median']
    >>> means = cs.to_anndata(cs.example(), var_names="marker", features={"compartment": "cell", "statistic": "mean"})
    >>> means.var_names.tolist(), means.var["feature_id"].iloc[0]
    (['DAPI', 'CD3e', 'Pan-Cytokeratin', 'FOXP3'], 'cell:DAPI:mean')
    """
    require_extra("anndata", "cellspec_sc.to_anndata")
    import anndata

    if var_names not in VAR_NAMES:
        raise InputError(f"to_anndata: var_names must be one of {', '.join(map(repr, VAR_NAMES))}, not {var_names!r}")
    if features is not None:
        x = x.subset(features=features)
    names_of_features = marker_var_names(x.dictionary) if var_names == "marker" else x.feature_ids
    missing = [c for c in ("cell_id", "image_id") if c not in x.cells.columns]
    if missing:
        raise InputError(f"cells has no {' and no '.join(missing)} column (cells_required_columns); "
                         "AnnData rows are named by image_id and cell_id")
    opened = checked_images(x, images, verify=verify)
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
        var = x.dictionary.set_axis(pd.Index(names_of_features, dtype=object), axis=0)
        obsm = {SPATIAL_KEY: np.column_stack([double_column(x.cells, "x"), double_column(x.cells, "y")])}
        bar.update(1)
        # a lazy X is never loaded to sample it: subsets of it are not checked
        sample = None if is_dask(matrix) else take_sample(matrix, names)
        uns = {UNS_KEY: encode(x, fingerprint, sample, obsm[SPATIAL_KEY]), **colours}
        if opened:
            uns[SPATIAL_KEY] = spatial_uns(x, opened)
        adata = anndata.AnnData(X=matrix, obs=obs, var=var, obsm=obsm, uns=uns)
        bar.update(1)
        if x.adjacency is not None:
            adata.obsp[CONNECTIVITIES_KEY], adata.obsp[SHARED_BOUNDARY_KEY] = adjacency_matrices(x.cells, x.adjacency)
        bar.update(1)
    return adata


VAR_NAMES = ("feature_id", "marker")


def marker_var_names(dictionary: pd.DataFrame) -> list[str]:
    """``var_names`` by marker: each feature's marker, its id when it has none; refused when markers repeat.

    >>> d = pd.DataFrame({"feature_id": ["cell:CD3:mean", "cell:area"], "marker": ["CD3", None]})
    >>> marker_var_names(d)
    ['CD3', 'cell:area']
    >>> marker_var_names(pd.concat([d, d.iloc[:1].assign(feature_id="nucleus:CD3:mean")]))
    Traceback (most recent call last):
    ...
    cellspec_sc.errors.InputError: to_anndata: var_names="marker" needs one feature per marker, but marker 'CD3' \
has cell:CD3:mean, nucleus:CD3:mean; select one per marker with features=..., e.g. features={"compartment": \
"cell", "statistic": "mean"}
    """
    ids = [str(f) for f in dictionary["feature_id"]]
    markers = [None if pd.isna(m) else str(m) for m in dictionary["marker"]]
    names = [m if m is not None else f for m, f in zip(markers, ids, strict=True)]
    shared: dict[str, list[str]] = {}
    for name, feature in zip(names, ids, strict=True):
        shared.setdefault(name, []).append(feature)
    collisions = {name: found for name, found in shared.items() if len(found) > 1}
    if collisions:
        listed = "; ".join(f"marker {name!r} has {', '.join(found)}" for name, found in collisions.items())
        raise InputError(f'to_anndata: var_names="marker" needs one feature per marker, but {listed}; select one '
                         'per marker with features=..., e.g. features={"compartment": "cell", "statistic": "mean"}')
    return names


# -- AnnData -> cellspec -------------------------------------------------------------------------
def from_anndata(adata: anndata.AnnData, *, allow_modified: bool | Collection[str] = False,
                 **foreign: Any) -> CellSpec:
    """The cellspec held by an AnnData made by :func:`to_anndata`, with analysis results added.

    New ``obs`` columns (``leiden``, ...) become cells columns (categoricals as character;
    names made snake_case with a warning). Rows and columns follow ``obs`` and ``var``, so a
    subset ``adata[mask, features]`` gives a valid subset (contacts of removed cells dropped).
    If ``X`` no longer holds the values written (``sc.pp.log1p`` or ``scale`` in place), they are
    taken from ``adata.raw`` when that still holds them. Entries of ``uns``/``obsm``/``layers``/``obsp``/``varm``
    that are not the bridge's own (``moranI``, ``X_umap``, the kNN graph, ...) are listed in one
    :class:`AnnDataBridgeWarning`; scanpy's colours of a carried category column (``uns["leiden_colors"]``)
    are not listed. A history step is
    appended whenever content changed.

    Parameters
    ----------
    adata
        An AnnData from :func:`to_anndata` (``uns["cellspec"]`` of any version this package wrote), or one made
        elsewhere, without ``uns["cellspec"]``.
    allow_modified
        What may have changed since :func:`to_anndata` (each change is recorded in history); anything else
        that changed is refused, naming it. ``True``: anything; or the names of what may have changed: cells
        columns that were written (``"x"``, ``"classification"`` ...), dictionary columns, ``"X"``,
        ``"obsm['spatial']"`` and the record's fields (``"images"``, ``"channels"``, ``"provenance"``,
        ``"adjacency"``, ``"spec_version"``), ``"var_names"`` (features named other than written). New ``obs``
        columns, and a subset or new order of the features written, need no permission.
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
        ``X``, a column written, ``obsm["spatial"]`` or a field of the record changed without ``allow_modified``
        (named in the message), ``uns["cellspec"]`` is damaged, or ``foreign`` arguments were given for an
        AnnData of :func:`to_anndata`.
    FormatError
        ``uns["cellspec"]`` is of a newer major version than this package reads (the message names both), or
        its ``spec_version`` is one this package does not read.

    Examples
    --------
    >>> import cellspec_sc as cs
    >>> adata = cs.to_anndata(cs.example())
    >>> adata.obs["leiden"] = pd.Categorical(["0", "1"] * 40)
    >>> cs.from_anndata(adata).cells["leiden"].dtype
    <StringDtype(na_value=<NA>)>
    """
    require_extra("anndata", "cellspec_sc.from_anndata")
    if UNS_KEY not in adata.uns:
        return from_foreign_anndata(adata, allow_modified=allow_modified, **foreign)
    if foreign:
        raise InputError(f"from_anndata: {sorted(foreign)} only apply to an AnnData without uns['cellspec']")
    stored = decode(adata.uns[UNS_KEY], where=f"uns[{UNS_KEY!r}]")
    allowed = _Allowed(allow_modified)
    changes: dict[str, Any] = {}
    _check_record_fields(adata, stored, allowed, changes)
    matrix = dense(adata.X) if adata.X is not None else np.zeros((adata.n_obs, adata.n_vars))
    written = x_fingerprint(matrix, stored)
    cells, carried = _cells_from_obs(adata.obs, stored, changes)
    dictionary = _dictionary_from_var(adata.var, stored, changes)
    allowed.refuse_unless_allowed(changes)
    _check_spatial(adata, stored, allowed, changes)
    measurements = measurements_from_x(adata, matrix, stored, allowed("X"), changes, written)
    adjacency = _adjacency_from_record(stored, cells, changes)
    warn_replaced_graph(adata, cells, adjacency)
    # uns["spatial"] holds the images handed to to_anndata (their files, not the object, carry them)
    warn_not_carried(adata, obsm={SPATIAL_KEY}, obsp={CONNECTIVITIES_KEY, SHARED_BOUNDARY_KEY},
                     uns={UNS_KEY, SPATIAL_KEY})
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


class _Allowed:
    """What the caller said may have changed since to_anndata (``allow_modified``)."""

    def __init__(self, allow_modified: bool | Collection[str]):
        if isinstance(allow_modified, str):
            allow_modified = [allow_modified]
        self.everything = allow_modified is True
        self.names = set() if isinstance(allow_modified, bool) else {str(n) for n in allow_modified}

    def __call__(self, name: str) -> bool:
        return self.everything or name in self.names

    def refuse_unless_allowed(self, changes: Mapping[str, Any]) -> None:
        """Refuse the changed columns of ``changes`` the caller did not allow, naming them."""
        for key, where in (("cells_columns_changed", "obs"), ("dictionary_columns_changed", "var")):
            refused = [name for name in changes.get(key, ()) if not self(name)]
            if refused:
                raise InputError(
                    f"{where} columns {refused} hold other values than to_anndata wrote (edited, or the store is "
                    "damaged); new analysis results belong in new columns. If the change is intended, pass "
                    f"allow_modified={refused!r} (or allow_modified=True) to keep it (recorded in provenance "
                    "history)")
        unknown = changes.get("features_not_written", [])
        if unknown and not self("var_names"):
            shown = unknown[:10]
            raise InputError(
                f"var names {shown}{' ...' if len(unknown) > 10 else ''} are not features to_anndata wrote (renamed, "
                "or the store is damaged). If the change is intended, pass allow_modified=['var_names'] (or "
                "allow_modified=True) to keep it (recorded in provenance history)")


def _check_record_fields(adata: anndata.AnnData, stored: StoredRecord, allowed: _Allowed,
                         changes: dict[str, Any]) -> None:
    """The record's own fields and obsm['spatial'] are as written (or their change is allowed and noted), and
    the spec version is one this package reads."""
    why = supported_version(stored.spec_version)
    if why is not None:
        raise FormatError(f"uns[{UNS_KEY!r}]['spec_version']: {why} (spec section 11)")
    _refuse_changed(allowed, stored.changed_fields(), changes)


def _check_spatial(adata: anndata.AnnData, stored: StoredRecord, allowed: _Allowed, changes: dict[str, Any]) -> None:
    """obsm['spatial'] holds what was written (its rows in their order), or its change is allowed and noted."""
    spatial = adata.obsm[SPATIAL_KEY] if SPATIAL_KEY in adata.obsm else None
    if (stored.spatial_fingerprint is not None and adata.n_obs == stored.shape[0] and not changes.get("cells_reordered")
            and (spatial is None or array_fingerprint(spatial) != stored.spatial_fingerprint)):
        _refuse_changed(allowed, [f"obsm[{SPATIAL_KEY!r}]"], changes)


def _refuse_changed(allowed: _Allowed, changed: list[str], changes: dict[str, Any]) -> None:
    refused = [name for name in changed if not allowed(name)]
    if refused:
        raise InputError(f"{', '.join(_field_name(n) for n in refused)} changed since to_anndata wrote "
                         f"{'it' if len(refused) == 1 else 'them'} (edited, or the store is damaged). If the change "
                         f"is intended, pass allow_modified={refused!r} (or allow_modified=True) to keep it "
                         "(recorded in provenance history)")
    if changed:
        changes.setdefault("record_fields_changed", []).extend(changed)


def _field_name(name: str) -> str:
    return name if name.startswith("obsm") else f"uns[{UNS_KEY!r}][{name!r}]"


def _cells_from_obs(obs: pd.DataFrame, stored: StoredRecord, changes: dict[str, Any]
                    ) -> tuple[pd.DataFrame, dict[Any, str]]:
    """cells from ``obs``, and the name in cells of every obs column carried."""
    stored_types = stored.cells_types
    index = obs.index
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
    reordered = same_rows and _reordered(cells, index, stored)
    if reordered:
        changes["cells_reordered"] = True
    _note_table_changes("cells", cells, stored_types, stored.cells_fingerprints if same_rows and not reordered
                        else {}, changes)
    if converted:
        changes["cells_columns_added"] = [new_name for new_name, _ in converted.values()]
    if renamed:
        changes["columns_renamed"] = renamed
    if dropped:
        changes["columns_not_carried"] = dropped
    return cells, carried


def _reordered(cells: pd.DataFrame, index: pd.Index, stored: StoredRecord) -> bool:
    """Whether the rows were put in another order (sorted by cluster, say): the ids changed as columns but still
    name each row as its obs name does, so they moved together; the other columns cannot be compared then."""
    ids = {"cell_id", "image_id"}
    if not ids <= set(cells.columns) or not set(changed_columns(cells[list(ids)], stored.cells_fingerprints)):
        return False
    return pd.Index(obs_names(cells), dtype=object).equals(pd.Index(index.astype(str), dtype=object))


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
        written = set(stored.feature_ids)
        unknown = [i for i in ids if i not in written]
        if unknown:  # a subset or a new order of the features written is analysis; a name never written is not
            changes["features_not_written"] = unknown
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


