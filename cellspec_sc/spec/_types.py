"""Spec column types and their pandas representation.

cellspec has four column types (``character``, ``double``, ``integer``,
``logical``). In memory they are held as:

=========  ===================================  =====================
spec type  pandas dtype                         NA
=========  ===================================  =====================
character  ``string`` (``pd.StringDtype()``)    ``pd.NA``
double     ``float64``                          ``NaN``
integer    ``Int32``                            ``pd.NA``
logical    ``boolean``                          ``pd.NA``
=========  ===================================  =====================

>>> import pandas as pd
>>> spec_type_of(pd.Series(["a", None], dtype="string"))
'character'
>>> as_spec_type(pd.Series([1, None]), "integer").dtype
Int32Dtype()
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from cellspec_sc.spec._vocabulary import vocabulary

try:  # pandas' way for libraries that know the blocks of the frame they build (pandas >= 2.3)
    from pandas.api.internals import create_dataframe_from_blocks
except ImportError:  # pragma: no cover - another pandas: its constructor
    create_dataframe_from_blocks = None

PANDAS_DTYPES = {
    "character": pd.StringDtype(na_value=pd.NA),
    "double": np.dtype("float64"),
    "integer": pd.Int32Dtype(),
    "logical": pd.BooleanDtype(),
}


def spec_type_of(series: pd.Series | np.ndarray | pd.api.extensions.ExtensionArray) -> str | None:
    """The spec type a pandas column (or its values, as :func:`column_values` gives them) holds, or None if it holds
    none of the four.

    Object columns count as character when every non-missing value is a ``str``;
    categoricals count as the type of their categories.

    >>> spec_type_of(np.array(["a", None], dtype=object)), spec_type_of(np.array([1], dtype=np.int8))
    ('character', 'integer')
    """
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        categories = dtype.categories
        return spec_type_of(categories.to_numpy() if isinstance(categories.dtype, np.dtype) else categories.array)
    if isinstance(dtype, pd.StringDtype):
        return "character"
    if pd.api.types.is_bool_dtype(dtype):
        return "logical"
    if pd.api.types.is_integer_dtype(dtype):
        return "integer"
    if pd.api.types.is_float_dtype(dtype):
        return "double" if dtype == np.float64 else None
    if dtype == np.dtype(object):
        values = np.asarray(series, dtype=object)
        if all(isinstance(v, str) for v in values[~pd.isna(values)]):
            return "character"
    return None


def column_values(frame: pd.DataFrame) -> list[tuple[Any, np.ndarray | pd.api.extensions.ExtensionArray]]:
    """(name, values) of every column of ``frame``, in order, as the frame holds them (never a copy): the pandas
    array of ``Series.array``, but a numpy array where that is a thin wrapper of one (float64, int64, object ...).

    ``frame.items()`` builds a Series around every column, about 8 us each: for the few rows of the dictionary,
    images and channels tables more than what validation then does with them. The values are taken from the
    frame's blocks (``DataFrame._mgr.iget_values``, a private method of pandas' block manager); a pandas without it
    gets them from ``frame.items()`` (a test holds the two to the same values).

    >>> frame = pd.DataFrame({"a": [1.0], "b": pd.array(["x"], dtype="string")})
    >>> [(name, type(values).__name__) for name, values in column_values(frame)]
    [('a', 'ndarray'), ('b', 'ArrowStringArray')]
    """
    names = column_names(frame)
    take = getattr(getattr(frame, "_mgr", None), "iget_values", None)
    if take is None:
        return public_column_values(frame)
    return [(name, take(i)) for i, name in enumerate(names)]


def column_names(frame: pd.DataFrame) -> list[Any]:
    """``frame.columns.tolist()``, read by Arrow from an Index of ``str`` (pandas converts such an Index one value at
    a time: a quarter of the time for a table of a few columns).

    >>> column_names(pd.DataFrame({"a": [1], "b": [2]})), column_names(pd.DataFrame({1: [1]}))
    (['a', 'b'], [1])
    """
    index = frame.columns
    if is_arrow_text(index):
        names = pa.array(index.array).to_pylist()
        if None not in names:  # a missing name stays as pandas gives it (NaN or NA)
            return names
    return index.tolist()


def python_values(values: np.ndarray | pd.api.extensions.ExtensionArray) -> list[Any]:
    """A column's values (as :func:`column_values` gives them) as Python objects, None for every missing value (NA,
    NaN, None): Arrow text read by Arrow, without a Python call per value.

    >>> python_values(pd.array(["a", None], dtype="string")), python_values(np.array(["b", np.nan], dtype=object))
    (['a', None], ['b', None])
    """
    if is_arrow_text(values):
        return pa.array(values).to_pylist()
    objects = np.asarray(values, dtype=object)
    return [None if missing else value for value, missing in zip(objects.tolist(), pd.isna(objects).tolist(),
                                                                  strict=True)]


def public_column_values(frame: pd.DataFrame) -> list[tuple[Any, np.ndarray | pd.api.extensions.ExtensionArray]]:
    """:func:`column_values` through pandas' public API alone (a Series per column).

    >>> [(name, values.tolist()) for name, values in public_column_values(pd.DataFrame({"a": [1.0]}))]
    [('a', [1.0])]
    """
    return [(name, _unwrapped(column.array)) for name, column in frame.items()]


def _unwrapped(values: pd.api.extensions.ExtensionArray) -> np.ndarray | pd.api.extensions.ExtensionArray:
    return values.to_numpy() if type(values) is pd.arrays.NumpyExtensionArray else values  # not its subclasses


def as_spec_type(series: pd.Series, spec_type: str) -> pd.Series:
    """Convert a column to the canonical pandas dtype of ``spec_type``.

    Missing values of any flavour (None, NaN, pd.NA) become the NA of the
    target dtype; categoricals are expanded to their values.
    """
    if isinstance(series.dtype, pd.CategoricalDtype):
        series = series.astype(series.dtype.categories.dtype).astype(object).where(series.notna(), None)
    target = PANDAS_DTYPES[spec_type]
    if spec_type == "character":
        return _as_character(series, target)
    if spec_type == "double":
        return _as_double(series)
    return series.astype(target)


def _as_character(series: pd.Series, target: pd.StringDtype) -> pd.Series:
    if isinstance(series.dtype, pd.StringDtype) and series.dtype == target:
        return series
    text = arrow_text(series)
    if text is not None:
        return pd.Series(pd.arrays.ArrowStringArray(text), index=series.index, name=series.name)
    values = series.astype(object)
    return values.where(series.notna(), None).astype(target)


def holds_canonical_dtype(values: Any, spec_type: str | None) -> bool:
    """Whether an array (numpy, or a pandas extension array) holds the canonical dtype of ``spec_type`` (None: of
    any spec type), so that :func:`as_spec_type` would leave it as it is.

    >>> holds_canonical_dtype(np.zeros(2), "double"), holds_canonical_dtype(np.zeros(2, dtype=np.int64), None)
    (True, False)
    >>> holds_canonical_dtype(character_array(["a"]), None), holds_canonical_dtype(character_array(["a"]), "double")
    (True, False)
    """
    if isinstance(values, np.ndarray):
        return values.ndim == 1 and values.dtype == np.float64 and spec_type in (None, "double")
    if not isinstance(values, pd.api.extensions.ExtensionArray) or spec_type == "double":
        return False
    return values.dtype == PANDAS_DTYPES[spec_type] if spec_type else values.dtype in _EXTENSION_DTYPES


_EXTENSION_DTYPES = frozenset(dtype for spec_type, dtype in PANDAS_DTYPES.items() if spec_type != "double")


def without_repeated_names(items: Iterable[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """The (name, column) pairs of ``items`` whose name occurs once, in order: a table's columns that can be
    checked one by one (the required-columns check reports the repeated names).

    >>> without_repeated_names([("a", 1), ("b", 2), ("a", 3)])
    [('b', 2)]
    """
    items = list(items)
    counts = Counter(name for name, _ in items)
    return [(name, values) for name, values in items if counts[name] == 1]


def is_arrow_text(values: pd.Series) -> bool:
    """Whether ``values`` is text held by Arrow (pandas' ``string`` with pyarrow storage), as the spec's
    ``character`` columns are."""
    return isinstance(values.dtype, pd.StringDtype) and values.dtype.storage == "pyarrow"


def character_array(values: Sequence[str | None]) -> pd.arrays.ArrowStringArray:
    """Python strings (None: NA) as a column of the spec's ``character`` type, straight through Arrow.

    >>> character_array(["a", None]).dtype == PANDAS_DTYPES["character"]
    True
    """
    return pd.arrays.ArrowStringArray(pa.chunked_array([pa.array(list(values), type=pa.large_string())]))


def arrow_text(series: pd.Series) -> pa.ChunkedArray | None:
    """The values of a column of ``str`` (and missing values) as Arrow large strings, straight from Arrow-backed
    text or from Python strings (a tenth of the cost of pandas' ``astype``); None for other values.

    >>> arrow_text(pd.Series(["a", None], dtype=object)).to_pylist(), arrow_text(pd.Series([1, "a"]))
    (['a', None], None)
    """
    try:
        if is_arrow_text(series):
            return pa.chunked_array(pa.array(series.array)).cast(pa.large_string())
        if series.dtype == object:
            return pa.chunked_array([pa.array(series.to_numpy(), type=pa.large_string(), from_pandas=True)])
    except (pa.ArrowTypeError, pa.ArrowInvalid):  # other objects: pandas turns them into str
        pass
    return None


def _as_double(series: pd.Series) -> pd.Series:
    if series.dtype == np.float64:
        return series
    if isinstance(series.dtype, pd.api.extensions.ExtensionDtype):
        values = series.astype("Float64").to_numpy(dtype=np.float64, na_value=np.nan)
        return pd.Series(values, index=series.index, name=series.name)
    return series.astype(np.float64)


def declared_type(table: str, column: str) -> str | None:
    """The type the spec fixes for ``column`` of ``table`` (None for extra columns)."""
    col = vocabulary().column(table, column)
    return None if col is None else col.type


def column_spec_types(frame: pd.DataFrame, table: str) -> list[tuple[str, str | None]]:
    """(name, spec type) of every column of ``frame``: declared where the spec fixes it, else inferred."""
    return [(name, declared_type(table, name) or spec_type_of(frame[name])) for name in frame.columns]


def canonical_frame(frame: pd.DataFrame | Mapping[str, Any], table: str, types: dict[str, str] | None = None
                    ) -> pd.DataFrame:
    """A copy of ``frame`` whose columns hold the canonical dtypes of their spec types.

    ``frame`` is a DataFrame, or a mapping of column names to equally long columns (arrays, Arrow arrays,
    lists: no frame is built first). ``types`` overrides the spec type of named columns (e.g. from a file's
    ``column_types``); other columns get their declared or inferred type.

    >>> df = pd.DataFrame({"image_id": ["a"], "pixel_size": [1], "sample_id": ["s"]})
    >>> canonical_frame(df, "images").dtypes["pixel_size"]
    dtype('float64')
    >>> canonical_frame({"image_id": ["a"], "pixel_size": np.array([1])}, "images").dtypes.astype(str).tolist()
    ['string', 'float64']
    """
    types = types or {}
    if isinstance(frame, pd.DataFrame) and not frame.columns.is_unique:
        out = {}
        for name in frame.columns:  # a duplicated name gives a frame: converted as before, by name
            spec_type = types.get(name) or declared_type(table, name) or spec_type_of(frame[name])
            out[name] = frame[name] if spec_type is None else as_spec_type(frame[name], spec_type)
        return pd.DataFrame(out, index=pd.RangeIndex(len(frame)), columns=list(frame.columns))
    items = column_values(frame) if isinstance(frame, pd.DataFrame) else list(frame.items())
    out = {}
    for name, values in items:
        declared = types.get(name) or declared_type(table, name)
        if isinstance(values, list) and declared in (None, "character") and all(
                v is None or isinstance(v, str) for v in values):
            values = character_array(values)  # Python strings straight to Arrow, no Series to infer them first
        if not isinstance(values, pd.Series) and holds_canonical_dtype(values, declared):
            out[name] = values  # what as_spec_type would return unchanged, without wrapping it in a Series first
            continue
        values = values if isinstance(values, pd.Series) else pd.Series(values)
        spec_type = declared or spec_type_of(values)
        out[name] = (values if spec_type is None else as_spec_type(values, spec_type)).array
    # columns by position, from their arrays: a frame of Series would be aligned on their index, one by one
    n = len(frame) if isinstance(frame, pd.DataFrame) else (len(items[0][1]) if items else 0)
    if not out:  # no columns: an empty Index of names, not the RangeIndex pandas gives an empty dict
        return pd.DataFrame(out, index=pd.RangeIndex(n), columns=[])
    return frame_of_arrays(out, n)


def frame_of_arrays(columns: Mapping[Any, Any], n: int) -> pd.DataFrame:
    """The frame ``pd.DataFrame(columns, index=pd.RangeIndex(n))`` builds of ``columns`` (name -> array of ``n``
    values), holding copies of them: float64 numpy columns in one block, each pandas array in its own.

    When every column is a float64 numpy array or a pandas extension array (the canonical dtypes), the frame is
    made from those blocks (``pandas.api.internals.create_dataframe_from_blocks``): a third to half of the
    constructor's time, which infers and checks what is known here. A test holds the two to the same frame.

    >>> frame = frame_of_arrays({"id": character_array(["a"]), "x": np.array([1.5])}, 1)
    >>> frame.dtypes.astype(str).tolist(), frame.equals(pd.DataFrame({"id": ["a"], "x": [1.5]}).astype(frame.dtypes))
    (['string', 'float64'], True)
    """
    arrays = {name: _unwrapped(values) if isinstance(values, pd.api.extensions.ExtensionArray) else values
              for name, values in columns.items()}
    known = all(isinstance(v, pd.api.extensions.ExtensionArray) or (isinstance(v, np.ndarray) and v.ndim == 1 and
                v.dtype == np.float64) for v in arrays.values())
    if not (known and arrays) or create_dataframe_from_blocks is None or any(len(v) != n for v in arrays.values()):
        # the dict's keys are the names in order: naming them again (columns=) would look each one up
        return pd.DataFrame(arrays, index=pd.RangeIndex(n))
    blocks, floats, where = [], [], []
    for position, values in enumerate(arrays.values()):
        if isinstance(values, np.ndarray):
            floats.append(values)
            where.append(position)
        else:
            blocks.append((values.copy(), np.array([position])))
    if floats:
        blocks.append((np.vstack(floats), np.array(where)))  # a copy, as one block of rows
    names = _names_index(tuple((type(name), name) for name in arrays)).copy()  # its own: a name set on it stays there
    return create_dataframe_from_blocks(blocks, index=pd.RangeIndex(n), columns=names)


@functools.lru_cache(maxsize=256)
def _names_index(typed_names: tuple[tuple[type, Any], ...]) -> pd.Index:
    """The Index of column names pandas makes of the names of ``typed_names`` ((type, name) pairs: 1 and 1.0 are
    equal keys, not equal names), kept for the next frame of the same columns (its values are immutable; inferring
    their type costs about 25 us, a shallow copy of the Index 4).

    >>> _names_index(((int, 1),)).tolist(), _names_index(((float, 1.0),)).tolist()
    ([1], [1.0])
    """
    return pd.Index([name for _, name in typed_names])
