"""A CellSpec keeps its values as measured: read-only measurements, copies of what a caller can still write,
copy-on-write tables, and a history step for every changed object; no public function returns an array sharing
writable memory with its input."""


from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cellspec_sc as cs
from cellspec_sc.errors import ReadOnlyError
from strategies import cellspecs


# -- the object guards itself ---------------------------------------------------------------------
def test_assigning_into_the_measurements_is_refused_and_setting_them_says_how_to_change_them():
    x = cs.example()
    with pytest.raises(ValueError, match="read-only"):
        x.measurements[0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        np.log1p(x.measurements, out=x.measurements)
    view = x.measurements
    with pytest.raises(ValueError):
        view.setflags(write=True)  # its base is read-only: the flag cannot be turned back on
    with pytest.raises(ReadOnlyError, match=r"x\.replace\(measurements=") as caught:
        x.measurements = np.zeros_like(x.measurements)
    assert isinstance(caught.value, ValueError)
    assert np.isfinite(x.measurements[0, 0]) and x.equals(cs.example())


def test_the_measurements_are_a_plain_array_that_anndata_writes(tmp_path):
    """Libraries that dispatch on the exact type (anndata's writers) take x.measurements as it is."""
    import anndata as ad

    x = cs.example()
    assert type(x.measurements) is np.ndarray
    ad.AnnData(X=x.measurements).write_zarr(tmp_path / "x.zarr")
    assert np.array_equal(ad.read_zarr(tmp_path / "x.zarr").X, x.measurements, equal_nan=True)


def test_arrays_computed_from_the_measurements_are_the_users_own():
    x = cs.example()
    logged = np.log1p(np.abs(x.measurements))
    logged[0, 0] = -1.0  # a new array: writable
    m = x.measurements.copy()
    m[:] = 0.0
    assert logged[0, 0] == -1.0 and not m.any() and x.equals(cs.example())


def test_cells_columns_as_numpy_are_read_only_views():
    x = cs.example()
    column = x.cells["x"].to_numpy()
    assert not column.flags.writeable
    with pytest.raises(ValueError):
        column[0] = 0.0


def test_replace_records_a_history_step_naming_the_changed_components():
    x = cs.example()
    m = x.measurements.copy()
    m[0, 0] = 123.0
    y = x.replace(measurements=m)
    step = y.provenance["history"][-1]
    assert step["step"] == "replace" and step["details"] == {"components": ["measurements"]}
    assert y.measurements[0, 0] == 123.0 and x.measurements[0, 0] != 123.0
    assert len(x.provenance.get("history") or []) == len(y.provenance["history"]) - 1
    assert cs.validate(y).ok


def test_a_matrix_given_to_the_constructor_is_copied_when_the_caller_can_still_write_it():
    x = cs.example()
    mine = np.array(x.measurements)  # writable, the caller's
    y = x.replace(measurements=mine)
    mine[:] = -7.0
    assert not np.shares_memory(mine, y.measurements) and y.measurements[0, 0] != -7.0
    view = mine[:, :]
    view.setflags(write=False)  # read-only, but over an array the caller still writes
    z = x.replace(measurements=view)
    mine[:] = 5.0
    assert not (z.measurements == 5.0).any()


def test_frames_given_to_the_constructor_do_not_follow_later_edits_of_the_callers_frame():
    x = cs.example()
    cells = x.cells.copy()
    y = x.replace(cells=cells)
    cells.loc[0, "x"] = -1.0
    cells["x"] = 0.0
    assert y.cells.loc[0, "x"] == x.cells.loc[0, "x"] != -1.0


def test_objects_made_by_replace_do_not_share_edits_of_each_others_tables():
    x = cs.example()
    y = x.replace(adjacency=None)
    x.cells.loc[0, "x"] = -1.0  # the owner edits its own table in place
    assert y.cells.loc[0, "x"] != -1.0


# -- no writable sharing between what goes in and what comes out (generated objects) ----------------
def arrays_of(value) -> list[np.ndarray]:
    """Every numpy array an object holds (matrix, table columns, AnnData parts)."""
    out: list[np.ndarray] = []
    if isinstance(value, cs.CellSpec):
        if isinstance(value.measurements, np.ndarray):
            out.append(np.asarray(value.measurements))
        for frame in (value.cells, value.dictionary, value.images, value.channels, value.adjacency):
            if frame is not None:
                out += numpy_columns(frame)
    elif hasattr(value, "obs") and hasattr(value, "X"):  # AnnData
        out += [np.asarray(value.X)] if isinstance(value.X, np.ndarray) else []
        out += [np.asarray(v) for v in value.obsm.values() if isinstance(v, np.ndarray)]
        out += [np.asarray(v) for v in value.layers.values() if isinstance(v, np.ndarray)]
        for frame in (value.obs, value.var):
            out += numpy_columns(frame)
    return [a for a in out if isinstance(a, np.ndarray) and a.dtype != object]


def numpy_columns(frame: pd.DataFrame) -> list[np.ndarray]:
    """The numpy arrays behind a table's numpy-typed columns. Columns of pandas' own extension types (nullable
    integers and booleans, strings) are left out: their ``to_numpy`` hands out pandas' internal buffer, which
    pandas' copy-on-write does not guard, and no cellspec code writes through it."""
    return [frame[c].to_numpy() for c in frame.columns if isinstance(frame[c].dtype, np.dtype)]


def writable_sharing(inputs, outputs) -> list[str]:
    found = []
    for i, a in enumerate(inputs):
        for j, b in enumerate(outputs):
            if (a.flags.writeable or b.flags.writeable) and np.shares_memory(a, b):
                found.append(f"input array {i} and output array {j}")
    return found


ROUTES = {
    "to_anndata": cs.to_anndata,
    "from_anndata(to_anndata)": lambda x: cs.from_anndata(cs.to_anndata(x)),
    "subset": lambda x: x.subset(cells=np.arange(x.n_cells) % 2 == 0),
    "replace": lambda x: x.replace(adjacency=None),
    "from_tables": lambda x: cs.CellSpec.from_tables(
        cells=x.cells, measurements=np.array(x.measurements), dictionary=x.dictionary, images=x.images,
        channels=x.channels, adjacency=x.adjacency, producer="hypothesis"),
}


@settings(max_examples=25, deadline=None)
@given(x=cellspecs(max_cells=8), route=st.sampled_from(sorted(ROUTES)))
def test_no_public_function_returns_an_array_sharing_writable_memory_with_its_input(x, route):
    try:
        out = ROUTES[route](x)
    except cs.CellspecError:
        return  # refused (e.g. from_tables of an object it cannot make valid): nothing shared
    shared = writable_sharing(arrays_of(x), arrays_of(out))
    assert not shared, f"{route}: {shared}"
