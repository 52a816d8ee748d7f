"""Every check of spec section 10: one minimal object that fails (structure) or warns (semantic) each."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import cellspec_sc as cs
from cellspec_sc.spec._types import public_column_values
from cellspec_sc.validation import _context as context_module
from cellspec_sc.validation import implemented_checks


def base() -> cs.CellSpec:
    return cs.example(adjacency=True, region_layers=("tissue",))


def with_cells(obj, **columns):
    cells = obj.cells.copy()
    for name, value in columns.items():
        cells[name] = value
    return obj.replace(cells=cells)


def set_cell(x, column, row, value):
    cells = x.cells.copy()
    cells.loc[row, column] = value
    return x.replace(cells=cells)


def set_table(x, table, column, row, value):
    frame = getattr(x, table).copy()
    frame.loc[row, column] = value
    return x.replace(**{table: frame})


def set_value(x, row, feature, value):
    m = x.measurements.copy()
    m[row, x.feature_ids.index(feature)] = value
    return x.replace(measurements=m)


def drop(x, table, column):
    return x.replace(**{table: getattr(x, table).drop(columns=column)})


def duplicate_first_cell_id(x):
    same_image = x.cells.index[x.cells["image_id"] == x.cells["image_id"][0]]
    return set_cell(x, "cell_id", same_image[1], x.cells["cell_id"][0])


def swap_adjacency_pair(x):
    adj = x.adjacency.copy()
    adj.loc[0, ["cell_id_a", "cell_id_b"]] = [adj.loc[0, "cell_id_b"], adj.loc[0, "cell_id_a"]]
    return x.replace(adjacency=adj)


def flatten_feature_in_image(x):
    m = x.measurements.copy()
    m[(x.cells["image_id"] == "img2").to_numpy(), x.feature_ids.index("cell:CD3e:mean")] = 7.0
    return x.replace(measurements=m)


def untyped_extra_column(x):
    return with_cells(x, odd=[object()] * x.n_cells)


FAILING = {
    "object_components": lambda x: x.replace(images=x.images.to_dict()),
    "spec_version": lambda x: x.replace(spec_version="2.0.0"),
    "cells_required_columns": lambda x: drop(x, "cells", "y"),
    "cells_column_types": lambda x: with_cells(x, x=x.cells["x"].astype("float32")),
    "cells_reserved_names": lambda x: with_cells(x, cs__secret=1.0),
    "cells_subject_id": lambda x: with_cells(x, subject_id=pd.array(["p1"] * x.n_cells, dtype="string")),
    "cells_ids_present": lambda x: set_cell(x, "cell_id", 3, ""),
    "cells_key_unique": duplicate_first_cell_id,
    "cells_coordinates_finite": lambda x: set_cell(x, "y", 5, np.inf),
    "cells_area_positive": lambda x: set_cell(x, "area", 2, -1.0),
    "cells_images_known": lambda x: set_cell(x, "image_id", 4, "img9"),
    "cells_sample_consistent": lambda x: set_cell(x, "sample_id", 6, "s2"),
    "measurements_type": lambda x: x.replace(measurements=x.measurements.astype(np.float32)),
    "measurements_rows": lambda x: x.replace(measurements=x.measurements[:-1]),
    "measurements_names": lambda x: x.replace(measurements=x.measurements[:, :-1]),
    "measurements_finite": lambda x: set_value(x, 7, "cell:FOXP3:mean", -np.inf),
    "dictionary_required_columns": lambda x: drop(x, "dictionary", "unit"),
    "dictionary_column_types": lambda x: set_table(x, "dictionary", "extra", 0, 1.0),
    "dictionary_feature_id_unique": lambda x: set_table(x, "dictionary", "feature_id", 1, x.feature_ids[0]),
    "dictionary_kind": lambda x: set_table(x, "dictionary", "kind", 0, "texture"),
    "dictionary_intensity": lambda x: set_table(x, "dictionary", "statistic", 0, "mode"),
    "dictionary_shape": lambda x: set_table(x, "dictionary", "marker", x.feature_ids.index("cell:area"), "DAPI"),
    "dictionary_other": lambda x: set_table(x, "dictionary", "marker", len(x.feature_ids) - 1, "DAPI"),
    "dictionary_unit": lambda x: set_table(x, "dictionary", "unit", 0, "µm"),
    "dictionary_marker_names": lambda x: set_table(x, "dictionary", "marker", 0, " DAPI"),
    "dictionary_feature_id_format": lambda x: set_table(x, "dictionary", "feature_id", 0, "DAPI_mean"),
    "dictionary_source_name": lambda x: set_table(x, "dictionary", "source_name", 0, None),
    "images_required_columns": lambda x: drop(x, "images", "pixel_size"),
    "images_column_types": lambda x: x.replace(images=x.images.assign(width_px=x.images["width_px"].astype(str))),
    "images_id_unique": lambda x: set_table(x, "images", "image_id", 1, "img1"),
    "images_sample_present": lambda x: set_table(x, "images", "sample_id", 0, None),
    "images_pixel_size": lambda x: set_table(x, "images", "pixel_size", 0, 0.0),
    "images_dimensions": lambda x: set_table(x, "images", "height_px", 1, 0),
    "channels_required_columns": lambda x: drop(x, "channels", "channel_name"),
    "channels_column_types": lambda x: x.replace(channels=x.channels.assign(
        channel_index=x.channels["channel_index"].astype("float64"))),
    "channels_images_known": lambda x: set_table(x, "channels", "image_id", 0, "img7"),
    "channels_index_contiguous": lambda x: set_table(x, "channels", "channel_index", 1, 3),
    "channels_names": lambda x: set_table(x, "channels", "marker", 1, "DAPI"),
    "markers_in_channels": lambda x: set_table(x, "channels", "marker", 7, "Ki-67"),
    "provenance_fields": lambda x: x.replace(provenance={k: v for k, v in x.provenance.items() if k != "counts"}),
    "adjacency_columns": lambda x: drop(x, "adjacency", "method"),
    "adjacency_endpoints": lambda x: set_table(x, "adjacency", "cell_id_b", 0, "99999"),
    "adjacency_pairs": swap_adjacency_pair,
    "adjacency_values": lambda x: set_table(x, "adjacency", "method", 0, "voronoi"),
}

WARNING = {
    "centroids_within_image": lambda x: set_cell(x, "x", 0, 1001.0),
    "area_range": lambda x: set_cell(x, "area", 0, 20000.0),
    "negative_intensity": lambda x: set_value(x, 0, "nucleus:DAPI:median", -0.5),
    "feature_na_fraction": lambda x: x.replace(measurements=np.where(
        np.arange(x.n_cells)[:, None] < 50, np.nan, x.measurements)),
    "feature_support": flatten_feature_in_image,
    "duplicate_centroids": lambda x: set_cell(set_cell(x, "x", 1, x.cells["x"][0]), "y", 1, x.cells["y"][0]),
}


def test_every_check_of_the_vocabulary_is_implemented_and_nothing_else():
    assert set(implemented_checks()) == {c.name for c in cs.vocabulary().checks}


def test_every_check_has_a_breaking_case_here():
    names = {c.name for c in cs.vocabulary().checks} - {"object_class"}
    assert names == set(FAILING) | set(WARNING)


def test_example_passes_without_failures_or_warnings():
    for x in (cs.example(), base()):
        report = cs.validate(x)
        assert report.ok and not report.failures and not report.warnings, report.format(only_problems=True)


@pytest.mark.parametrize("name", sorted(FAILING))
def test_structure_check_fails(name):
    report = cs.validate(FAILING[name](base()))
    assert report.status(name) == "fail", report.format(only_problems=True)
    assert not report.ok
    with pytest.raises(cs.ValidationError) as err:
        report.raise_if_failed()
    assert name in str(err.value) and err.value.report is report


@pytest.mark.parametrize("name", sorted(WARNING))
def test_semantic_check_warns(name):
    report = cs.validate(WARNING[name](base()))
    assert report.status(name) == "warn", report.format(only_problems=True)
    assert report.ok, "semantic checks never fail"


def test_messages_name_column_rows_and_count():
    report = cs.validate(set_cell(set_cell(base(), "area", 2, -1.0), "area", 9, 0.0))
    result = report.result("cells_area_positive")
    assert result.column == "area" and result.rows == (2, 9) and result.count == 2
    assert "cells.area" in result.message and "2 row(s) (2, 9)" in result.message


def test_not_a_cellspec_reports_object_class_and_skips_the_rest():
    report = cs.validate({"cells": None})
    assert report.status("object_class") == "fail"
    assert {r.status for r in report.results[1:]} == {"skip"}


def test_missing_column_skips_dependent_checks_instead_of_crashing():
    report = cs.validate(drop(base(), "cells", "cell_id"))
    assert report.status("cells_required_columns") == "fail"
    assert report.status("cells_key_unique") == "skip"
    assert report.status("adjacency_endpoints") == "skip"


def test_garbage_components_give_a_report_not_a_traceback():
    x = base()
    broken = cs.CellSpec(cells=x.cells, measurements="not a matrix", dictionary=None, images=x.images,
                         channels=x.channels, provenance=[], adjacency=42)
    report = cs.validate(broken)
    assert report.status("object_components") == "fail"
    assert not report.ok


def test_options_change_semantic_thresholds():
    x = base()
    assert cs.validate(x, area_range=(1, 50)).status("area_range") == "warn"
    m = x.measurements.copy()
    m[:5, 0] = np.nan
    assert cs.validate(x.replace(measurements=m), na_max=0.01).status("feature_na_fraction") == "warn"


def test_source_nonfinite_fails_measurements_finite():
    report = cs.validate(base(), source_nonfinite={"cell:DAPI:mean": 3})
    assert report.status("measurements_finite") == "fail"
    assert "cell:DAPI:mean" in report.result("measurements_finite").message


def test_nan_is_na_in_memory():
    assert cs.validate(set_value(base(), 0, "cell:DAPI:mean", np.nan)).status("measurements_finite") == "pass"


def test_report_orders_failures_first_and_prints():
    report = cs.validate(FAILING["cells_key_unique"](base()))
    assert report.ordered()[0].status == "fail"
    text = report.format()
    assert text.startswith("cellspec validation: FAILED") and "cells_key_unique" in text.splitlines()[1]
    assert "<table>" in report._repr_html_()
    frame = report.to_frame()
    # every check of section 10, then the portability note (values some target format cannot store)
    assert frame.iloc[0]["status"] == "fail" and len(frame) == len(cs.vocabulary().checks) + 1


def test_adjacency_pairs_use_byte_order():
    x = base()
    adj = x.adjacency.copy()
    adj.loc[0, ["cell_id_a", "cell_id_b"]] = ["10", "9"]  # "10" < "9" in byte order: valid order
    adj.loc[1, ["cell_id_a", "cell_id_b"]] = ["9", "10"]
    report = cs.validate(x.replace(adjacency=adj))
    assert report.result("adjacency_pairs").rows == (1,)


def test_validation_is_vectorised_on_a_large_object():
    # a functional check at 200k cells; throughput is measured in benchmarks/
    big = cs.example(n_cells=200_000, n_features=60)
    assert cs.validate(big).ok


@given(st.lists(st.tuples(st.integers(-1, 2), st.sampled_from([0.0, -0.0, 1.5, np.nan, np.inf, 5e-324]),
                          st.sampled_from([0.0, -0.0, 2.0, np.nan, -np.inf])), max_size=40))
def test_duplicated_rows_is_what_pandas_calls_duplicated(rows):
    from cellspec_sc.validation._context import duplicated_rows

    codes = np.array([r[0] for r in rows], dtype=np.int64)
    xs, ys = (np.array([r[k] for r in rows], dtype=np.float64) for k in (1, 2))
    want = pd.DataFrame({"i": codes, "x": xs, "y": ys}).duplicated(keep=False).to_numpy()
    np.testing.assert_array_equal(duplicated_rows(codes, xs, ys), want)


ID_TEXT = st.one_of(st.none(), st.sampled_from(["", "1", "001", "10", "img1", "Zelle ä", "细胞"]))


@given(st.lists(st.tuples(ID_TEXT, ID_TEXT), max_size=40))
def test_cells_key_unique_finds_what_pandas_calls_duplicated(keys):
    """The (image_id, cell_id) check counts pairs of codes; the rows it reports are those of pandas'
    duplicated(keep=False) of the two text columns, NA equal to NA."""
    from cellspec_sc.model import first_seen_code_array, first_seen_codes
    from cellspec_sc.spec import PANDAS_DTYPES
    from cellspec_sc.validation import duplicated_pairs

    images, cells = (pd.Series([k[i] for k in keys], dtype=PANDAS_DTYPES["character"]) for i in (0, 1))
    want = pd.DataFrame({"image_id": images, "cell_id": cells}).duplicated(keep=False).to_numpy()
    got = duplicated_pairs(first_seen_codes(images)[0], first_seen_code_array(cells))
    np.testing.assert_array_equal(got, want)
    chunked = pd.concat([cells[:len(cells) // 2], cells[len(cells) // 2:]], ignore_index=True)  # two Arrow chunks
    np.testing.assert_array_equal(first_seen_code_array(chunked), first_seen_codes(cells)[0])


def test_repeated_is_what_pandas_calls_duplicated():
    """The sort behind both duplicate checks: no repeat, one repeat far apart, many repeats, 64-bit keys."""
    from cellspec_sc.validation._context import repeated

    rng = np.random.default_rng(7)
    for values in (np.arange(5000), np.r_[np.arange(5000), 3], rng.integers(0, 50, 2000),
                   rng.integers(0, 2**63, 3000, dtype=np.int64).view(np.uint64), np.zeros(0, dtype=np.int64)):
        np.testing.assert_array_equal(repeated(values), pd.Series(values).duplicated(keep=False).to_numpy())


def test_text_with_a_lone_surrogate_fails_column_types_naming_column_and_row():
    # os.fsdecode turns a file name that is not UTF-8 into such a string; no UTF-8 file can store it
    x = cs.example(n_cells=20)
    ids = x.cells["image_id"].astype(object)
    ids.iloc[7] = "slide\udce9"
    report = cs.validate(with_cells(x, image_id=ids))
    result = {r.name: r for r in report.results}["cells_column_types"]
    assert result.status == "fail"
    assert "image_id row 7 holds text that is not Unicode ('slide\\udce9': a lone surrogate" in result.message
    with pytest.raises(cs.ValidationError, match="cells_column_types"):
        report.raise_if_failed()


@pytest.mark.parametrize("name", sorted({**FAILING, **WARNING}))
def test_a_validation_through_pandas_public_api_alone_gives_the_same_report(name, monkeypatch):
    """Validation takes the tables' columns from pandas' blocks; without them (another pandas), from a Series each:
    every breaking case gives the same report either way."""
    x = {**FAILING, **WARNING}[name](base())
    fast = cs.validate(x)
    monkeypatch.setattr(context_module, "column_values", public_column_values)
    public = cs.validate(x.replace() if isinstance(x, cs.CellSpec) else x)  # a copy: no memo of the first report
    assert public is not fast
    assert [(r.name, r.status, r.message, r.column, r.rows, r.count) for r in public.results] == \
        [(r.name, r.status, r.message, r.column, r.rows, r.count) for r in fast.results]
