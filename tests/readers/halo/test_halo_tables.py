"""HALO object data tables as HALO writes them: values compared with pandas' parse of the same file, the layout
rules (bounding-box centres, images from Image Location, classifications and text as cells columns, units in
the names) and a round trip of generated tables."""

from __future__ import annotations

import csv
import tempfile
from pathlib import Path, PureWindowsPath

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cellspec_sc as cs
from exports import export_markers, measured_values, number_text
from tool_layouts import write_halo


def test_a_halo_table_matches_pandas_column_by_column(tmp_path):
    path = write_halo(tmp_path)
    frame = pd.read_csv(path, encoding="utf-8-sig")
    x = cs.read_halo(path, pixel_size=0.5)
    cells = x.cells
    assert cells["image_id"].tolist() == [PureWindowsPath(p).name for p in frame["Image Location"]]
    assert cells["cell_id"].tolist() == frame["Object Id"].astype(str).tolist()
    centre_x = (frame["XMin"] + frame["XMax"]).to_numpy() / 2
    centre_y = (frame["YMin"] + frame["YMax"]).to_numpy() / 2
    assert np.array_equal(cells["x_px"], centre_x) and np.array_equal(cells["y_px"], centre_y)
    assert np.array_equal(cells["x"], centre_x * 0.5) and np.array_equal(cells["y"], centre_y * 0.5)
    assert np.array_equal(cells["area"], frame["Cell Area (µm²)"].to_numpy())
    assert cells["analysis_region"].tolist() == frame["Analysis Region"].tolist()
    assert cells["algorithm_name"].tolist() == frame["Algorithm Name"].tolist()
    assert cells["cd8_opal_570_positive_classification"].tolist() == \
        frame["CD8 (Opal 570) Positive Classification"].tolist()
    assert cells["dapi_positive_nucleus_classification"].tolist() == \
        frame["DAPI Positive Nucleus Classification"].tolist()
    expected = {"DAPI Nucleus Intensity": "nucleus:DAPI:mean",
                "CD8 (Opal 570) Cytoplasm Intensity": "cytoplasm:CD8 (Opal 570):mean",
                "CD8 (Opal 570) Cell Intensity": "cell:CD8 (Opal 570):mean", "Cell Area (µm²)": "cell:area",
                "Nucleus Area (µm²)": "nucleus:area", "Nucleus Perimeter (µm)": "nucleus:perimeter",
                "Nucleus Roundness": "other:nucleus_roundness"}
    assert x.dictionary["source_name"].tolist() == list(expected)
    assert x.feature_ids == list(expected.values())
    assert x.dictionary.set_index("feature_id").loc["nucleus:area", "unit"] == "um2"
    assert x.dictionary.set_index("feature_id").loc["nucleus:perimeter", "unit"] == "um"
    raw = frame[list(expected)].to_numpy(dtype=np.float64)
    assert np.array_equal(x.measurements, raw, equal_nan=True)
    assert x.provenance["counts"]["na_converted"] == int(np.isnan(raw).sum()) == 1
    assert x.images["pixel_size"].tolist() == [0.5, 0.5]
    assert set(x.channels["marker"]) == {"DAPI", "CD8 (Opal 570)"}


def test_a_halo_table_without_a_pixel_size_is_refused_before_parsing(tmp_path):
    with pytest.raises(cs.InputError, match="carry no pixel size; pass it in micrometres per pixel"):
        cs.read_halo(write_halo(tmp_path))


def test_pixel_sizes_per_image_and_a_single_image_renamed(tmp_path):
    path = write_halo(tmp_path)
    x = cs.read_halo(path, pixel_size={"tumour 1.qptiff": 0.5, "tumour 2.qptiff": 0.25})
    assert x.images["pixel_size"].tolist() == [0.5, 0.25]
    assert x.cells["x"].tolist()[2] == (10 + 21) / 2 * 0.25
    with pytest.raises(cs.InputError, match="names 2 images"):
        cs.read_halo(path, pixel_size=0.5, image_id="one")


@pytest.mark.parametrize("edge", ["XMin", "XMax", "YMin", "YMax"])
def test_a_missing_box_edge_is_refused_naming_that_column_and_line(tmp_path, edge):
    path = write_halo(tmp_path)
    text = path.read_bytes().decode("utf-8-sig")
    lines = text.split("\r\n")
    at = next(csv.reader([lines[0]])).index(edge)
    row = next(csv.reader([lines[2]]))
    row[at] = ""
    lines[2] = ",".join(f'"{v}"' if "," in v else v for v in row)
    path.write_bytes("\r\n".join(lines).encode("utf-8-sig"))
    with pytest.raises(cs.InputError, match=rf"line 3, column '{edge}': centroid is missing or not finite"):
        cs.read_halo(path, pixel_size=0.5)


def test_repeated_object_ids_in_one_image_are_refused_naming_both_lines(tmp_path):
    path = write_halo(tmp_path)
    text = path.read_bytes().decode("utf-8-sig").replace('qptiff,Layer 1,HighPlex FL v4.1.3,1,', 'qptiff,Layer 1,'
                                                         'HighPlex FL v4.1.3,0,')
    path.write_bytes(text.encode("utf-8-sig"))
    with pytest.raises(cs.InputError, match=r"lines 2 and 3, column 'Object Id'"):
        cs.read_halo(path, pixel_size=0.5)


markers = export_markers.filter(lambda m: m.lower() not in {"nucleus", "cytoplasm", "cell", "membrane"})
COMPARTMENTS = ("Nucleus", "Cytoplasm", "Cell", "Membrane")


@st.composite
def halo_tables(draw):
    names = draw(st.lists(markers, min_size=1, max_size=3, unique_by=str.lower))
    combos = draw(st.lists(st.tuples(st.sampled_from(names), st.sampled_from(COMPARTMENTS)), min_size=1, max_size=5,
                           unique=True))
    n = draw(st.integers(1, 10))
    images = [draw(st.sampled_from(["s1.svs", "s2.svs"])) for _ in range(n)]
    boxes = [(draw(st.integers(0, 20000)), draw(st.integers(0, 60)), draw(st.integers(0, 20000)),
              draw(st.integers(0, 60))) for _ in range(n)]
    values = [[draw(measured_values(infinities=False)) for _ in combos] for _ in range(n)]
    areas = [draw(st.floats(0.5, 500, allow_nan=False)) for _ in range(n)]
    return combos, images, boxes, values, areas


@settings(max_examples=20, deadline=None)
@given(halo_tables(), st.sampled_from([0.2485, 0.5, 1.0]))
def test_generated_halo_tables_read_back_exactly(table, pixel_size):
    combos, images, boxes, values, areas = table
    heads = ["Image Location", "Object Id", "XMin", "XMax", "YMin", "YMax",
             *(f"{m} {c} Intensity" for m, c in combos), "Cell Area (µm²)"]
    lines = [",".join(heads)]
    counter: dict[str, int] = {}
    ids = []
    for image, (x0, w, y0, h), row, area in zip(images, boxes, values, areas, strict=True):
        counter[image] = counter.get(image, -1) + 1
        ids.append(str(counter[image]))
        lines.append(",".join([f"D:\\scans\\{image}", ids[-1], str(x0), str(x0 + w), str(y0), str(y0 + h),
                               *(number_text(v) for v in row), repr(area)]))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "objects.csv"
        path.write_bytes(("\r\n".join(lines) + "\r\n").encode("utf-8-sig"))
        x = cs.read_halo(path, pixel_size=pixel_size)
        assert x.feature_ids == [f"{c.lower()}:{m}:mean" for m, c in combos] + ["cell:area"]
        assert x.cells["image_id"].tolist() == images and x.cells["cell_id"].tolist() == ids
        assert x.cells["x_px"].tolist() == [(x0 + x0 + w) / 2 for x0, w, _, _ in boxes]
        assert x.cells["y"].tolist() == [(y0 + y0 + h) / 2 * pixel_size for _, _, y0, h in boxes]
        raw = np.array(values, dtype=np.float64).reshape(len(images), len(combos))
        assert np.array_equal(x.measurements[:, :-1].view(np.int64)[~np.isnan(raw)], raw.view(np.int64)[~np.isnan(raw)])
        assert np.array_equal(np.isnan(x.measurements[:, :-1]), np.isnan(raw))
        assert x.cells["area"].tolist() == areas
        back = cs.read(cs.write(x, Path(tmp) / "out"))
        assert back.equals(x), back.differences(x)
