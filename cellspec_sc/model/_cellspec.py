"""The :class:`CellSpec` object (spec sections 1-8)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cellspec_sc.errors import InputError, ReadOnlyError
from cellspec_sc.model._compare import frame_differences, matrix_differences, value_differences
from cellspec_sc.model._from_tables import FUNCTION as FROM_TABLES
from cellspec_sc.model._from_tables import parts_from_tables
from cellspec_sc.model._methods import provided
from cellspec_sc.model._ownership import copied_matrix, guarded_view, owned_frame, owned_matrix, sealed
from cellspec_sc.model._provenance import with_history_step
from cellspec_sc.model._summary import format_html, format_text, summarise
from cellspec_sc.spec import SPEC_VERSION

COMPONENTS = ("spec_version", "cells", "measurements", "dictionary", "images", "channels", "provenance", "adjacency")


class CellSpec:
    """A cellspec 1.0 object: cells, a float64 measurement matrix and its dictionary, images,
    channels, provenance and optional adjacency.

    The constructor stores the parts as given and does not validate, so an
    invalid object can be built and reported; call :meth:`validate`.

    The object owns what it holds: ``x.measurements`` is read-only (assigning into it raises numpy's
    ``ValueError``, setting it :class:`~cellspec_sc.errors.ReadOnlyError`), a matrix given to the constructor is
    copied when the caller could still write it, and tables are kept as pandas' copy-on-write copies, so no
    array the caller goes on changing changes the object. :meth:`replace` and :meth:`subset` make changed
    objects and record a history step.

    >>> import cellspec_sc as cs
    >>> x = cs.example()
    >>> x.measurements.shape
    (80, 19)
    >>> x.features(kind="intensity", marker="FOXP3")
    ['cell:FOXP3:mean', 'cell:FOXP3:median', 'nucleus:FOXP3:mean', 'nucleus:FOXP3:median']
    """

    __slots__ = (*(c for c in COMPONENTS if c != "measurements"), "_measurements", "source_dir", "extensions",
                 "validation_memo")

    def __init__(
        self,
        *,
        cells: pd.DataFrame,
        measurements: np.ndarray,
        dictionary: pd.DataFrame,
        images: pd.DataFrame,
        channels: pd.DataFrame,
        provenance: dict[str, Any],
        adjacency: pd.DataFrame | None = None,
        spec_version: str = SPEC_VERSION,
        source_dir: str | Path | None = None,
        extensions: dict[str, Any] | None = None,
    ):
        self.spec_version = spec_version
        # Where the object was read from (not a component, not compared): files named by
        # images.geometry_ref are resolved against it.
        self.source_dir = source_dir
        # Top-level keys of cellspec.json this package does not know (not a component, not
        # compared): kept on read and written back, so other implementations' additions survive.
        self.extensions = dict(extensions or {})
        # (content token, options, report) of the last validation (not a component, not compared):
        # see cellspec_sc.validation._runner, which reuses the report while the content is unchanged.
        self.validation_memo: tuple[str, dict[str, Any], Any] | None = None  # the report: a ValidationReport
        self.cells = owned_frame(cells)
        self._measurements = owned_matrix(measurements)
        self.dictionary = owned_frame(dictionary)
        self.images = owned_frame(images)
        self.channels = owned_frame(channels)
        self.provenance = provenance
        self.adjacency = owned_frame(adjacency)

    @property
    def measurements(self) -> np.ndarray:
        """The float64 measurement matrix (cells x features), read-only.

        Setting it raises :class:`~cellspec_sc.errors.ReadOnlyError`: make a changed object with
        :meth:`replace` instead.

        Returns
        -------
        numpy.ndarray
            A read-only view of the matrix, one row per cell and one column per feature.

        Examples
        --------
        >>> import cellspec_sc as cs
        >>> x = cs.example()
        >>> x.measurements.flags.writeable
        False
        """
        return guarded_view(self._measurements)

    @measurements.setter
    def measurements(self, value: Any) -> None:
        raise ReadOnlyError("x.measurements cannot be set: make a changed object with "
                            "x.replace(measurements=new_matrix), which records a history step (the matrix itself "
                            "is read-only: transform a copy, m = x.measurements.copy(), or work in an AnnData from "
                            "cs.to_anndata(x), whose X is its own copy)")

    @classmethod
    def from_tables(cls, *, cells: pd.DataFrame, measurements: Any, dictionary: pd.DataFrame,
                    images: pd.DataFrame, channels: pd.DataFrame, adjacency: pd.DataFrame | None = None,
                    producer: str | dict[str, Any], **provenance: Any) -> CellSpec:
        """A valid object from your own tables, or a ValidationError saying which rules to satisfy.

        Columns are coerced to the spec types (ids to text, integers to float64 or Int32, float32 matrix to
        float64, infinities to NA); dictionary rows without ``feature_id`` get one from the rule of their kind,
        rows without ``source_name`` the measurement column's name; provenance is filled (``reader`` is this
        package, ``created_utc`` now, counts, a ``from_tables`` history step). ``producer``: your tool, a name
        or ``{"tool": ..., "version": ...}``; ``**provenance``: ``inputs`` (paths or records), ``parameters``,
        ``counts``, ``created_utc`` or other fields. See docs/object.md.

        Parameters
        ----------
        cells
            One row per cell: ``image_id``, ``cell_id``, ``x``, ``y`` and optional columns.
        measurements
            The cells x features matrix (any numeric array; stored as float64).
        dictionary
            One row per measurement column: ``kind``, ``marker``, ``compartment``, ``statistic``, ``unit`` ...
        images
            One row per image.
        channels
            One row per channel of each image.
        adjacency
            Optional cell contacts (``image_id``, ``cell_id_a``, ``cell_id_b``).
        producer
            The tool that made the tables: a name or ``{"tool": ..., "version": ...}``.
        **provenance
            Further provenance fields (``inputs``, ``parameters``, ``counts``, ``created_utc`` ...).

        Returns
        -------
        CellSpec
            A valid object whose provenance records a ``from_tables`` step.

        Raises
        ------
        ValidationError
            The tables, once coerced, fail a structure rule; the message names each rule to satisfy.
        InputError
            A table cannot be coerced to the spec types.

        Examples
        --------
        >>> import cellspec_sc as cs
        >>> x = cs.example()
        >>> y = cs.CellSpec.from_tables(cells=x.cells, measurements=x.measurements, dictionary=x.dictionary,
        ...                             images=x.images, channels=x.channels, producer="my-pipeline")
        >>> y.shape, y.provenance["history"][-1]["step"]
        ((80, 19), 'from_tables')
        """
        x = cls(**parts_from_tables(cells=cells, measurements=measurements, dictionary=dictionary, images=images,
                                    channels=channels, adjacency=adjacency, producer=producer, **provenance))
        x.validate().raise_if_failed(f"{FROM_TABLES}: change what the rules below name and call it again")
        return x

    # -- parts ---------------------------------------------------------------------------------
    def parts(self) -> dict[str, Any]:
        """The components as a dict (no copies), e.g. to build a modified object.

        Returns
        -------
        dict
            ``{name: component}`` for ``spec_version``, ``cells``, ``measurements``, ``dictionary``, ``images``,
            ``channels``, ``provenance`` and ``adjacency``.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> list(example().parts())[:3]
        ['spec_version', 'cells', 'measurements']
        """
        return {name: getattr(self, name) for name in COMPONENTS}

    def replace(self, **changes: Any) -> CellSpec:
        """A new object with the components given, sharing the others (read-only or copy-on-write).

        A change of content (anything but ``provenance``, ``source_dir`` and ``extensions``) appends a
        ``replace`` step naming the components to ``provenance["history"]``, unless ``provenance`` is given too
        (the caller then writes the history).

        Parameters
        ----------
        **changes
            Components by name (``cells=``, ``measurements=`` ...) and ``source_dir`` or ``extensions``.

        Returns
        -------
        CellSpec
            The new object; ``x`` itself is unchanged. It is not validated: call :meth:`validate`.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> x = example()
        >>> y = x.replace(adjacency=None)
        >>> y.adjacency is None, y.provenance["history"][-1]["details"]
        (True, {'components': ['adjacency']})
        """
        content = sorted(set(changes) & set(COMPONENTS) - {"provenance"})
        if content and "provenance" not in changes:
            changes["provenance"] = with_history_step(self.provenance, "replace", "cellspec_sc.CellSpec.replace",
                                                      {"components": content})
        return CellSpec(**{**self.parts(), "source_dir": self.source_dir, "extensions": self.extensions, **changes})

    @property
    def feature_ids(self) -> list[str]:
        """Measurement column names: ``dictionary.feature_id`` by position.

        Returns
        -------
        list of str
            One id per column of :attr:`measurements`.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> example().feature_ids[:2]
        ['cell:DAPI:mean', 'cell:DAPI:median']
        """
        return [str(f) for f in self.dictionary["feature_id"]]

    @property
    def n_cells(self) -> int:
        """Number of cells (rows of cells).

        Returns
        -------
        int
            ``len(x.cells)``, also ``len(x)``.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> example().n_cells
        80
        """
        return len(self.cells)

    @property
    def shape(self) -> tuple[int, int]:
        """``(cells, features)``, as ``AnnData.shape``.

        Returns
        -------
        tuple of int
            The number of cells and the number of features.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> example().shape
        (80, 19)
        """
        return self.n_cells, len(self.dictionary)

    def __len__(self) -> int:
        """The number of cells, as ``len(adata)``."""
        return self.n_cells

    def copy(self) -> CellSpec:
        """An independent object with equal content: its own matrix (read-only), tables, provenance and extensions.

        Nothing writable is shared with ``x``, so changing a table of the copy (or of ``x``) never reaches the
        other; no history step is added (the content is the same).

        Returns
        -------
        CellSpec
            The copy, equal to ``x`` by :meth:`equals`.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> x = example()
        >>> y = x.copy()
        >>> y.equals(x), y.measurements is x.measurements
        (True, False)
        """
        return CellSpec(
            spec_version=self.spec_version,
            cells=self.cells.copy(deep=True),
            measurements=copied_matrix(self._measurements),
            dictionary=self.dictionary.copy(deep=True),
            images=self.images.copy(deep=True),
            channels=self.channels.copy(deep=True),
            provenance=copy.deepcopy(self.provenance),
            adjacency=None if self.adjacency is None else self.adjacency.copy(deep=True),
            source_dir=self.source_dir,
            extensions=copy.deepcopy(self.extensions),
        )

    def __getitem__(self, key: Any) -> CellSpec:
        """``x[cells]`` or ``x[cells, features]``, as AnnData indexing: the same selection as :meth:`subset`.

        ``cells``: a slice, a boolean mask, integer positions, cell ids or ``(image_id, cell_id)`` pairs (one
        integer or id selects one cell). ``features``: a slice, a boolean mask, positions, feature ids, or a
        dictionary query ``{"kind": "intensity", "statistic": "mean"}`` (the arguments of :meth:`features`).

        Parameters
        ----------
        key
            ``cells`` or ``(cells, features)``.

        Returns
        -------
        CellSpec
            The selection, with a ``subset`` history step.

        Raises
        ------
        InputError
            More than two selections, a mask of the wrong length, a position out of range or an unknown
            feature id.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> x = example()
        >>> x[:5].shape, x[x.cells["image_id"] == "img1", {"kind": "shape"}].shape
        ((5, 19), (40, 2))
        >>> x[["1", "2"], "cell:area"].shape
        (4, 1)
        """
        cells, features = key if isinstance(key, tuple) and len(key) == 2 else (key, slice(None))
        if isinstance(key, tuple) and len(key) != 2:
            raise InputError(f"x[...] takes cells or (cells, features), not {len(key)} selections")
        return self.subset(cells=None if _takes_all(cells) else cells,
                           features=None if _takes_all(features) else features)

    def measurement_frame(self, features: Sequence[str] | None = None) -> pd.DataFrame:
        """Measurements as a DataFrame with feature ids as columns (a copy of the selected columns).

        Parameters
        ----------
        features
            Feature ids of the columns to take, in this order (default: every feature).

        Returns
        -------
        pandas.DataFrame
            One row per cell (a ``RangeIndex``), one float64 column per feature.

        Raises
        ------
        InputError
            A feature id is not in the dictionary.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> example().measurement_frame(["cell:area"]).shape
        (80, 1)
        """
        ids = self.feature_ids
        cols = range(len(ids)) if features is None else [self.feature_position(f) for f in features]
        return pd.DataFrame({ids[i]: self.measurements[:, i] for i in cols}, index=pd.RangeIndex(self.n_cells))

    def feature_position(self, feature_id: str) -> int:
        """Column of ``feature_id`` in the measurement matrix (InputError when unknown).

        Parameters
        ----------
        feature_id
            A value of ``dictionary.feature_id``.

        Returns
        -------
        int
            The 0-based column position.

        Raises
        ------
        InputError
            ``feature_id`` is not in the dictionary.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> example().feature_position("cell:area")
        16
        """
        try:
            return self.feature_ids.index(feature_id)
        except ValueError:
            raise InputError(f"unknown feature_id {feature_id!r}; see x.features()") from None

    # -- selection -----------------------------------------------------------------------------
    def features(self, kind: str | None = None, marker: str | None = None, compartment: str | None = None,
                 statistic: str | None = None, unit: str | None = None) -> list[str]:
        """Feature ids selected through the dictionary columns (never by splitting ids).

        Parameters
        ----------
        kind, marker, compartment, statistic, unit
            Wanted values of these dictionary columns; ``None`` does not filter on that column.

        Returns
        -------
        list of str
            The feature ids whose dictionary rows match every given value, in column order.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> example().features(kind="shape")
        ['cell:area', 'nucleus:area']
        """
        d = self.dictionary
        keep = np.ones(len(d), dtype=bool)
        for column, wanted in (("kind", kind), ("marker", marker), ("compartment", compartment),
                               ("statistic", statistic), ("unit", unit)):
            if wanted is not None:
                keep &= (d[column] == wanted).fillna(False).to_numpy(dtype=bool)
        return [str(f) for f in d["feature_id"][keep]]

    def subset(self, cells: Any = None, features: Any = None) -> CellSpec:
        """A new object with some cells and/or features, rows kept aligned.

        ``cells``: a slice, boolean mask, integer positions, ``(image_id, cell_id)`` pairs,
        or cell_id strings (matched in every image). ``features``: a slice, boolean mask,
        positions, feature ids or a dictionary query (a dict of :meth:`features` arguments).
        ``x[cells, features]`` is the same selection. Adjacency pairs whose cells are gone are
        dropped (section 7). Images and channels are all kept: they describe
        acquisition, an image without cells is valid, and dropping channels
        could break ``markers_in_channels`` for the remaining features.
        A step is appended to ``provenance["history"]``.

        Parameters
        ----------
        cells
            The cells to keep (default: all).
        features
            The features to keep (default: all).

        Returns
        -------
        CellSpec
            The selection, with a ``subset`` history step giving the counts before and after.

        Raises
        ------
        InputError
            A mask of the wrong length, a position out of range, an unknown feature id or an unknown
            dictionary column in a query.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> x = example()
        >>> x.subset(cells=x.cells["image_id"] == "img1").n_cells
        40
        """
        rows = np.arange(self.n_cells) if cells is None else self._cell_positions(cells)
        cols = np.arange(len(self.dictionary)) if features is None else self._feature_positions(features)
        new_cells = self.cells.iloc[rows].reset_index(drop=True)
        selected = cells is not None or features is not None
        matrix = sealed(np.ascontiguousarray(np.asarray(self.measurements)[np.ix_(rows, cols)])) if selected \
            else self.measurements
        details = {"cells_before": self.n_cells, "cells_after": int(rows.size),
                   "features_before": int(len(self.dictionary)), "features_after": int(cols.size)}
        adjacency = drop_missing_pairs(self.adjacency, new_cells)
        if self.adjacency is not None:
            details["contacts_dropped"] = int(len(self.adjacency) - len(adjacency))
        return self.replace(
            cells=new_cells,
            measurements=matrix,
            dictionary=self.dictionary.iloc[cols].reset_index(drop=True),
            adjacency=adjacency,
            provenance=with_history_step(self.provenance, "subset", "cellspec_sc.CellSpec.subset", details),
        )

    def _cell_positions(self, cells: Any) -> np.ndarray:
        if isinstance(cells, slice):
            return np.arange(self.n_cells)[cells]
        if _is_scalar(cells):
            cells = [cells]
        sel = cells.to_numpy() if isinstance(cells, pd.Series) else np.asarray(cells, dtype=object)
        if sel.dtype == bool or (sel.size and all(isinstance(v, (bool, np.bool_)) for v in sel)):
            return _mask_positions(sel.astype(bool), self.n_cells, "cells")
        if sel.size == 0:
            return np.arange(0)
        first = sel.flat[0] if sel.ndim == 1 else sel[0]
        if isinstance(first, (int, np.integer)):
            return _checked_positions(sel.astype(np.int64), self.n_cells, "cells")
        if isinstance(first, (tuple, list, np.ndarray)):
            keys = pd.MultiIndex.from_arrays([self.cells["image_id"].astype(object),
                                              self.cells["cell_id"].astype(object)])
            return np.flatnonzero(keys.isin([tuple(map(str, v)) for v in cells]))
        return np.flatnonzero(self.cells["cell_id"].isin(set(map(str, sel))).fillna(False).to_numpy(dtype=bool))

    def _feature_positions(self, features: Any) -> np.ndarray:
        if isinstance(features, slice):
            return np.arange(len(self.dictionary))[features]
        if isinstance(features, Mapping):
            features = self.features(**_query(features))
        elif _is_scalar(features):
            features = [features]
        sel = np.asarray(features.to_numpy() if isinstance(features, pd.Series) else features, dtype=object)
        n = len(self.dictionary)
        if sel.size and all(isinstance(v, (bool, np.bool_)) for v in sel):
            return _mask_positions(sel.astype(bool), n, "features")
        if sel.size and isinstance(sel[0], (int, np.integer)):
            return _checked_positions(sel.astype(np.int64), n, "features")
        return np.array([self.feature_position(str(f)) for f in sel], dtype=np.int64)

    # -- comparison ----------------------------------------------------------------------------
    def differences(self, other: Any) -> list[str]:
        """Human-readable list of every way ``other`` differs from this object (empty if equal).

        Parameters
        ----------
        other
            The object to compare with (anything; a non-CellSpec differs by its type).

        Returns
        -------
        list of str
            One line per difference, naming the component, column and rows.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> x = example()
        >>> x.differences(x.copy()), x.differences(x[:3])[:1]
        ([], ['cells: 80 rows != 3 rows'])
        """
        if not isinstance(other, CellSpec):
            return [f"other is a {type(other).__name__}, not a CellSpec"]
        out = value_differences("spec_version", self.spec_version, other.spec_version)
        for name in ("cells", "dictionary", "images", "channels", "adjacency"):
            out += frame_differences(name, getattr(self, name), getattr(other, name))
        out += matrix_differences(self.measurements, other.measurements)
        out += value_differences("provenance", self.provenance, other.provenance)
        return out

    def equals(self, other: Any) -> bool:
        """Bit-exact equality: measurements by their 64 bits (NaN equals NaN, -0.0 differs from 0.0),
        tables by column order, spec types and values, provenance by value.

        Parameters
        ----------
        other
            The object to compare with.

        Returns
        -------
        bool
            True iff :meth:`differences` finds none.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> example().equals(example())
        True
        """
        return not self.differences(other)

    # -- delegations: validation, io and the widgets sit above the model (see model/_methods.py) ---------
    def validate(self, **options: Any) -> Any:
        """Run every check of section 10 and return the :class:`~cellspec_sc.ValidationReport`; see
        :func:`cellspec_sc.validate`.

        Parameters
        ----------
        **options
            The options of :func:`cellspec_sc.validate` (``area_range``, ``na_max`` ...).

        Returns
        -------
        ValidationReport
            One result per check; an invalid object gives failures in the report, not an exception.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> example().validate().ok
        True
        """
        return provided("validate")(self, **options)

    def preview(self, *, image: str | None = None, feature: str | None = None, **options: Any) -> Any:
        """An interactive notebook preview; see :func:`cellspec_sc.widgets.preview`.

        Parameters
        ----------
        image
            The image shown first (default: the first image).
        feature
            The feature shown first (default: the first feature).
        **options
            The image options of :func:`cellspec_sc.preview`: ``images``, ``channels``, ``region``, ``verify``.

        Returns
        -------
        cellspec_sc.widgets.Preview
            The widget (it displays itself as the last value of a notebook cell).

        Raises
        ------
        InputError
            ``image`` or ``feature`` is not in the object.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> example().preview(feature="cell:area").feature
        'cell:area'
        """
        return provided("preview")(self, image=image, feature=feature, **options)

    def write(self, path: str | Path, **options: Any) -> Path:
        """Write a cellspec directory; see :func:`cellspec_sc.write`.

        Parameters
        ----------
        path
            The directory to make (or a URL on object storage).
        **options
            The options of :func:`cellspec_sc.write` (``format``, ``overwrite`` ...).

        Returns
        -------
        pathlib.Path or str
            ``path``, holding the complete directory (the URL, for object storage).

        Raises
        ------
        ValidationError
            The object fails structure validation; nothing is written.
        WriteFailed
            The operating system refused a write; nothing was published.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> from cellspec_sc import example
        >>> example().write(pathlib.Path(tempfile.mkdtemp()) / "run1", format="tsv").name
        'run1'
        """
        return provided("write")(self, path, **options)

    def summary(self) -> dict[str, Any]:
        """The facts printed by ``repr`` as a dict.

        Returns
        -------
        dict
            Counts of cells, features, images and channels, and the other facts ``repr`` prints.

        Examples
        --------
        >>> from cellspec_sc import example
        >>> example().summary()["cells"]
        80
        """
        return summarise(self)

    def __repr__(self) -> str:
        return format_text(self)

    def _repr_html_(self) -> str:
        return format_html(self)


def _takes_all(selection: Any) -> bool:
    return isinstance(selection, slice) and selection == slice(None)


def _is_scalar(selection: Any) -> bool:
    return isinstance(selection, (str, int, np.integer)) and not isinstance(selection, (bool, np.bool_))


_QUERY_FIELDS = ("kind", "marker", "compartment", "statistic", "unit")


def _query(query: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(query) - set(_QUERY_FIELDS))
    if unknown:
        raise InputError(f"feature query has unknown dictionary column(s) {unknown}; a query names "
                         f"{', '.join(_QUERY_FIELDS)}")
    return dict(query)


def _mask_positions(mask: np.ndarray, n: int, what: str) -> np.ndarray:
    if mask.size != n:
        raise InputError(f"{what} mask has {mask.size} entries for {n} {what}")
    return np.flatnonzero(mask)


def _checked_positions(pos: np.ndarray, n: int, what: str) -> np.ndarray:
    if pos.size and (pos.min() < -n or pos.max() >= n):
        raise InputError(f"{what} position out of range 0..{n - 1}")
    return np.where(pos < 0, pos + n, pos)


def drop_missing_pairs(adjacency: pd.DataFrame | None, cells: pd.DataFrame) -> pd.DataFrame | None:
    """Contacts whose two cells are both still in ``cells``."""
    if adjacency is None:
        return None
    a, b = contact_positions(cells, adjacency)
    return adjacency[(a >= 0) & (b >= 0)].reset_index(drop=True)


def contact_positions(cells: pd.DataFrame, adjacency: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Row positions in ``cells`` of cell_id_a and cell_id_b of every contact (-1 where absent).

    Keys are factorised to integers first: hashing (image_id, cell_id) tuples of
    millions of contacts through a MultiIndex sorts strings and takes seconds.

    >>> cells = pd.DataFrame({"image_id": ["i", "i", "j"], "cell_id": ["1", "2", "1"]})
    >>> adj = pd.DataFrame({"image_id": ["i", "j"], "cell_id_a": ["1", "1"], "cell_id_b": ["2", "2"]})
    >>> [p.tolist() for p in contact_positions(cells, adj)]
    [[0, 2], [1, -1]]
    >>> [p.tolist() for p in contact_positions(cells.iloc[:0], adj)]
    [[-1, -1], [-1, -1]]
    """
    n, m = len(cells), len(adjacency)
    images, _ = pd.factorize(np.concatenate([_objects(cells["image_id"]), _objects(adjacency["image_id"])]))
    ids, uniques = pd.factorize(np.concatenate([_objects(cells["cell_id"]), _objects(adjacency["cell_id_a"]),
                                                _objects(adjacency["cell_id_b"])]))
    width = max(len(uniques), 1) + 1  # codes are -1 for NA, so shift by one
    key = images.astype(np.int64)[:n] * width + ids[:n] + 1
    first = ~pd.Index(key).duplicated()  # a duplicated key (invalid object) resolves to its first row
    index = pd.Index(key[first])
    positions = np.append(np.flatnonzero(first), -1)  # get_indexer's -1 (not found) picks the final -1
    adj_images = images.astype(np.int64)[n:] * width
    return (positions[index.get_indexer(adj_images + ids[n:n + m] + 1)],
            positions[index.get_indexer(adj_images + ids[n + m:] + 1)])


def _objects(column: pd.Series) -> np.ndarray:
    return column.astype(object).to_numpy()

