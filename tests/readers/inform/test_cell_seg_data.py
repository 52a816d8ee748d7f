"""inForm cell_seg_data.txt tables as inForm writes them: values compared with pandas' parse of the same file,
the layout rules (fields from Sample Name, pixel or micron positions and how the unit is known, #N/A, percentages
as text, phenotypes as cells columns) and a round trip of generated tables."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cellspec_sc as cs
from cellspec_sc.readers import ReaderWarning
from exports import export_markers, measured_values, number_text
from tool_layouts import INFORM_HEAD, INFORM_ROWS, tsv, write_inform

MEASURED = ["Total Cells", "Cell Density (per megapixel)", "Nucleus Area (pixels)", "Nucleus Compactness",
            "Nucleus Major Axis", "Nucleus DAPI Mean (Normalized Counts, Total Weighting)",
            "Nucleus DAPI Std Dev (Normalized Counts, Total Weighting)", "Entire Cell Area (pixels)",
            "Entire Cell CD8 (Opal 570) Mean (Normalized Counts, Total Weighting)",
            "Entire Cell CD8 (Opal 570) Total (Normalized Counts, Total Weighting)"]


def test_an_inform_table_matches_pandas_column_by_column(tmp_path):
    path = write_inform(tmp_path)
    frame = pd.read_csv(path, sep="\t", na_values=["#N/A"], keep_default_na=False)
    x = cs.read_inform(path, pixel_size=0.5)
    cells = x.cells
    assert cells["image_id"].tolist() == frame["Sample Name"].tolist()
    assert cells["cell_id"].tolist() == frame["Cell ID"].astype(str).tolist()
    assert np.array_equal(cells["x_px"], frame["Cell X Position"].to_numpy(dtype=float))
    assert np.array_equal(cells["y"], frame["Cell Y Position"].to_numpy(dtype=float) * 0.5)
    assert np.array_equal(cells["area"], frame["Entire Cell Area (pixels)"].to_numpy() * 0.25)
    assert cells["phenotype"].tolist() == frame["Phenotype"].tolist()
    assert cells["tissue_category"].tolist() == frame["Tissue Category"].tolist()
    assert cells["annotation_id"].isna().all()
    assert cells["confidence"].tolist() == [95.0, 0.01, 87.5]  # "95.00%", "0.01 %", "87.5%"
    assert x.dictionary["source_name"].tolist() == MEASURED
    assert x.feature_ids == ["other:total_cells", "other:cell_density_per_megapixel", "nucleus:area",
                             "other:nucleus_compactness", "nucleus:major_axis_length", "nucleus:DAPI:mean",
                             "nucleus:DAPI:sd", "cell:area", "cell:CD8 (Opal 570):mean", "cell:CD8 (Opal 570):sum"]
    assert x.dictionary.set_index("feature_id").loc[["nucleus:area", "nucleus:major_axis_length"], "unit"].tolist() \
        == ["px2", "px"]
    raw = frame[MEASURED].to_numpy(dtype=np.float64)
    assert np.array_equal(x.measurements, raw, equal_nan=True)
    assert x.provenance["counts"]["missing_in_source"] == int(np.isnan(raw).sum())
    assert x.provenance["parameters"]["position_unit"] == "pixels"
    assert "Cell Density (per megapixel)" in x.provenance["parameters"]["position_unit_source"]


def micron_table(tmp_path, head=None):
    head = [h.replace("(pixels)", "(square microns)").replace("per megapixel", "per square mm")
            for h in (head or INFORM_HEAD)]
    path = tmp_path / "field_cell_seg_data.txt"
    path.write_text(tsv(head, INFORM_ROWS))
    return path


def test_micron_positions_are_kept_as_written(tmp_path):
    path = micron_table(tmp_path)
    frame = pd.read_csv(path, sep="\t", na_values=["#N/A"], keep_default_na=False)
    x = cs.read_inform(path, pixel_size=0.5)
    assert np.array_equal(x.cells["x"], frame["Cell X Position"].to_numpy(dtype=float))
    assert np.array_equal(x.cells["x_px"], frame["Cell X Position"].to_numpy(dtype=float) / 0.5)
    assert np.array_equal(x.cells["area"], frame["Entire Cell Area (square microns)"].to_numpy())
    assert x.dictionary.set_index("feature_id").loc["nucleus:area", "unit"] == "um2"


def test_a_position_unit_that_contradicts_the_headers_is_refused(tmp_path):
    with pytest.raises(cs.InputError, match="the two unit systems must agree"):
        cs.read_inform(micron_table(tmp_path), pixel_size=0.5, position_unit="pixels")


def test_an_unknown_position_unit_needs_the_argument(tmp_path):
    head = [h for h in INFORM_HEAD if "(" not in h or "Normalized" in h]
    rows = [[v for h, v in zip(INFORM_HEAD, r, strict=True) if "(" not in h or "Normalized" in h] for r in INFORM_ROWS]
    path = tmp_path / "bare_cell_seg_data.txt"
    path.write_text(tsv(head, rows))
    with pytest.raises(cs.InputError, match="pass position_unit='pixels' or 'microns'"):
        cs.read_inform(path, pixel_size=0.5)
    x = cs.read_inform(path, pixel_size=0.5, position_unit="microns")
    assert x.cells["x"].tolist() == [510.0, 520.0, 12.0]
    assert x.provenance["parameters"]["position_unit_source"] == "argument"


def test_without_a_pixel_size_the_reader_stops(tmp_path):
    with pytest.raises(cs.InputError, match="inForm tables carry no pixel size"):
        cs.read_inform(write_inform(tmp_path))


markers = export_markers.filter(lambda m: m.strip().lower() not in {"area", "major axis", "minor axis"})
STATS = {"Mean": "mean", "Min": "min", "Max": "max", "Std Dev": "sd", "Total": "sum"}
COMPARTMENTS = {"Nucleus": "nucleus", "Cytoplasm": "cytoplasm", "Membrane": "membrane", "Entire Cell": "cell"}


@st.composite
def inform_tables(draw):
    names = draw(st.lists(markers, min_size=1, max_size=3, unique_by=str.lower))
    combos = draw(st.lists(st.tuples(st.sampled_from(sorted(COMPARTMENTS)), st.sampled_from(names),
                                     st.sampled_from(sorted(STATS))), min_size=1, max_size=5, unique=True))
    n = draw(st.integers(1, 10))
    fields = [draw(st.sampled_from(["f1.im3", "f2.im3"])) for _ in range(n)]
    positions = [(draw(st.integers(0, 1868)), draw(st.integers(0, 1400))) for _ in range(n)]
    values = [[draw(st.one_of(measured_values(infinities=False), st.none())) for _ in combos] for _ in range(n)]
    return combos, fields, positions, values


@settings(max_examples=20, deadline=None)
@given(inform_tables())
def test_generated_inform_tables_read_back_exactly(table):
    combos, fields, positions, values = table
    heads = ["Sample Name", "Cell ID", "Cell X Position", "Cell Y Position", "Nucleus Area (pixels)",
             *(f"{c} {m} {s} (Normalized Counts, Total Weighting)" for c, m, s in combos)]
    counter: dict[str, int] = {}
    rows = []
    for field, (px, py), row in zip(fields, positions, values, strict=True):
        counter[field] = counter.get(field, 0) + 1
        rows.append([field, str(counter[field]), str(px), str(py), "100",
                     *("#N/A" if v is None else number_text(v) for v in row)])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cell_seg_data.txt"
        path.write_text(tsv(heads, rows))
        x = cs.read_inform(path, pixel_size=0.496)
        assert x.feature_ids == ["nucleus:area", *(f"{COMPARTMENTS[c]}:{m}:{STATS[s]}" for c, m, s in combos)]
        assert x.cells["image_id"].tolist() == fields
        assert x.cells["x"].tolist() == [px * 0.496 for px, _ in positions]
        raw = np.array([[np.nan if v is None else v for v in row] for row in values], dtype=np.float64)
        got = x.measurements[:, 1:]
        assert np.array_equal(np.isnan(got), np.isnan(raw))
        assert np.array_equal(got.view(np.int64)[~np.isnan(raw)], raw.view(np.int64)[~np.isnan(raw)])
        assert x.provenance["counts"]["missing_in_source"] == sum(v is None for row in values for v in row)
        back = cs.read(cs.write(x, Path(tmp) / "out"))
        assert back.equals(x), back.differences(x)


def test_a_percentage_column_with_another_text_is_refused_naming_line_and_column(tmp_path):
    path = write_inform(tmp_path)
    path.write_text(path.read_text().replace("0.01 %", "high"))
    with pytest.raises(cs.InputError, match=r"line 3, column 'Confidence': cannot parse 'high' as a percentage"):
        cs.read_inform(path, pixel_size=0.5)


def test_a_measurement_column_holding_percentages_is_a_cells_column_with_a_warning(tmp_path):
    path = write_inform(tmp_path)
    frame = pd.read_csv(path, sep="\t", na_values=["#N/A"], keep_default_na=False, dtype=str)
    column = "Nucleus DAPI Mean (Normalized Counts, Total Weighting)"
    written = [None if pd.isna(v) else f"{v} %" for v in frame[column]]
    frame[column] = written
    frame.to_csv(path, sep="\t", index=False, na_rep="#N/A")
    with pytest.warns(ReaderWarning, match=r"'Nucleus DAPI Mean \(Normalized Counts, Total Weighting\)' is named "
                      r"as an intensity measurement but holds percentages written as text; it is read as the cells "
                      r"column 'nucleus_dapi_mean_normalized_counts_total_weighting'"):
        x = cs.read_inform(path, pixel_size=0.5)
    target = x.provenance["parameters"]["percent_columns"][column]
    expected = [np.nan if v is None else float(v.rstrip(" %")) for v in written]
    assert not np.isnan(expected).all()
    assert np.array_equal(x.cells[target].to_numpy(dtype=float), expected, equal_nan=True)
    assert "nucleus:DAPI:mean" not in x.feature_ids


def test_a_percentage_column_named_as_no_measurement_reads_without_a_warning(tmp_path, recwarn):
    x = cs.read_inform(write_inform(tmp_path), pixel_size=0.5)
    assert x.cells["confidence"].tolist() == [95.0, 0.01, 87.5]
    assert not [w for w in recwarn if issubclass(w.category, ReaderWarning)]
