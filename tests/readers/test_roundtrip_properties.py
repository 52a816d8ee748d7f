"""Property tests: generated QuPath and mcquant tables read back to exactly what was written, and the
imported objects survive a trip through a cellspec directory bit for bit."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import cellspec_sc as cs
from exports import export_markers, measured_values, number_text

COMPARTMENTS = ("Nucleus", "Cytoplasm", "Membrane", "Cell")
# header word of each style -> spec statistic
STYLE_STATS = {
    "0.4": {"mean": "mean", "std dev": "sd", "min": "min", "max": "max", "sum": "sum"},
    "0.5": {"Mean": "mean", "Median": "median", "Min": "min", "Max": "max", "Std.Dev.": "sd", "Variance": "variance"},
}
STYLE_STATS["0.6"] = STYLE_STATS["0.5"]

markers = export_markers.filter(lambda m: m.lower() not in {c.lower() for c in COMPARTMENTS})
values = measured_values(infinities=True)


MCQUANT_COLUMNS = {"CellID", "X_centroid", "Y_centroid", "Area", "area", "extent", "perimeter"}


def header(style: str, compartment: str, marker: str, word: str) -> str:
    if style == "0.4":
        return f"{compartment}: {marker} {word}"
    if style == "0.5":
        return f"{marker}: {compartment}: {word}"
    return f"{compartment}: {marker}: {word}"


@st.composite
def qupath_tables(draw):
    style = draw(st.sampled_from(["0.4", "0.5", "0.6"]))
    names = draw(st.lists(markers, min_size=1, max_size=3, unique_by=str.lower))
    combos = draw(st.lists(st.tuples(st.sampled_from(COMPARTMENTS), st.sampled_from(names),
                                     st.sampled_from(sorted(STYLE_STATS[style]))),
                           min_size=1, max_size=6, unique=True))
    n = draw(st.integers(1, 12))
    matrix = [[draw(values) for _ in combos] for _ in range(n)]
    xs = [draw(st.floats(0, 1e5, allow_nan=False)) for _ in range(n)]
    return style, combos, matrix, xs


@settings(max_examples=20)
@given(qupath_tables())
def test_generated_qupath_tables_read_back_exactly(table):
    style, combos, matrix, xs = table
    heads = [header(style, *c) for c in combos]
    lines = ["\t".join(["Image", "Object ID", "Centroid X µm", "Centroid Y µm", *heads])]
    lines += ["\t".join(["img", f"id{i}", repr(x), "1.5", *(number_text(v) for v in row)]) for i, (x, row) in
              enumerate(zip(xs, matrix, strict=True))]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "export.tsv"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        x = cs.read_qupath(path, pixel_size=0.5)
        assert cs.validate(x).ok
        expected_ids = [f"{c.lower()}:{m}:{STYLE_STATS[style][w]}" for c, m, w in combos]
        assert x.feature_ids == expected_ids
        raw = np.array(matrix, dtype=np.float64).reshape(len(xs), len(combos))
        want = np.where(np.isfinite(raw), raw, np.nan)
        assert np.array_equal(x.measurements.view(np.int64)[np.isfinite(want)], want.view(np.int64)[np.isfinite(want)])
        assert np.array_equal(np.isnan(x.measurements), np.isnan(want))
        counts = x.provenance["counts"]
        assert counts["na_converted"] == int(np.isnan(raw).sum())
        assert counts["nonfinite_converted"] == int(np.isinf(raw).sum())
        assert x.cells["x"].tolist() == xs
        back = cs.read(cs.write(x, Path(tmp) / "out"))
        assert back.equals(x), back.differences(x)


@st.composite
def mcquant_tables(draw):
    # a marker named like a column mcquant writes itself would be a different table
    names = draw(st.lists(markers.filter(lambda m: m not in MCQUANT_COLUMNS), min_size=1, max_size=4, unique=True))
    n = draw(st.integers(1, 10))
    ids = draw(st.lists(st.integers(1, 10**6), min_size=n, max_size=n, unique=True))
    means = [[draw(values) for _ in names] for _ in range(n)]
    centroids = [(draw(st.floats(0, 5000, allow_nan=False)), draw(st.floats(0, 5000, allow_nan=False)))
                 for _ in range(n)]
    areas = [draw(st.integers(1, 5000)) for _ in range(n)]
    return names, ids, means, centroids, areas


@settings(max_examples=20)
@given(mcquant_tables(), st.sampled_from([0.325, 0.5, 0.65, 1.0]))
def test_generated_mcquant_tables_read_back_exactly(table, pixel_size):
    names, ids, means, centroids, areas = table
    lines = [",".join(["CellID", *names, "X_centroid", "Y_centroid", "Area"])]
    lines += [",".join([str(i), *(number_text(v) for v in row), repr(cx), repr(cy), str(a)])
              for i, row, (cx, cy), a in zip(ids, means, centroids, areas, strict=True)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "img--seg_cell.csv"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        x = cs.read_mcmicro(path, pixel_size=pixel_size)
        assert cs.validate(x).ok
        assert x.cells["cell_id"].tolist() == [str(i) for i in ids]
        assert x.feature_ids == [f"cell:{m}:mean" for m in names] + ["cell:area"]
        assert x.cells["x"].tolist() == [(cx + 0.5) * pixel_size for cx, _ in centroids]
        raw = np.array(means, dtype=np.float64).reshape(len(ids), len(names))
        assert np.array_equal(np.isnan(x.measurements[:, :-1]), ~np.isfinite(raw))
        ok = np.isfinite(raw)
        assert np.array_equal(x.measurements[:, :-1].view(np.int64)[ok], raw.view(np.int64)[ok])
        back = cs.read(cs.write(x, Path(tmp) / "out", format="tsv"))
        assert back.feature_ids == x.feature_ids and back.cells["cell_id"].equals(x.cells["cell_id"])


def mcquant_lines(names, ids, means, centroids, areas):
    lines = [",".join(["CellID", *names, "X_centroid", "Y_centroid", "Area"])]
    lines += [",".join([str(i), *(number_text(v) for v in row), repr(cx), repr(cy), str(a)])
              for i, row, (cx, cy), a in zip(ids, means, centroids, areas, strict=True)]
    return "\n".join(lines) + "\n"


@settings(max_examples=20)
@given(mcquant_tables(), st.data())
def test_generated_cell_and_nuclei_tables_join_by_cell_id_to_the_values_written(table, data):
    names, ids, means, centroids, areas = table
    # at least one nucleus: a table of no rows is refused, as when it is read alone
    nucleated = data.draw(st.lists(st.booleans(), min_size=len(ids), max_size=len(ids)).filter(any))
    order = data.draw(st.permutations([i for i, kept in enumerate(nucleated) if kept]))
    nuclear = [[data.draw(values) for _ in names] for _ in order]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "quantification"
        folder.mkdir()
        (folder / "img--seg_cell.csv").write_text(mcquant_lines(names, ids, means, centroids, areas))
        (folder / "img--seg_nuclei.csv").write_text(mcquant_lines(
            names, [ids[i] for i in order], nuclear, [centroids[i] for i in order], [areas[i] for i in order]))
        x = cs.read_mcmicro(folder, pixel_size=0.5)
        assert cs.validate(x).ok
        assert x.cells["cell_id"].tolist() == [str(i) for i in ids]
        assert x.feature_ids == [f"cell:{m}:mean" for m in names] + ["cell:area"] + \
            [f"nucleus:{m}:mean" for m in names] + ["nucleus:area"]
        written = np.full((len(ids), len(names)), np.nan)
        written[list(order)] = np.array(nuclear, dtype=np.float64).reshape(len(order), len(names))
        read = x.measurements[:, len(names) + 1:-1]
        finite = np.isfinite(written)
        assert np.array_equal(np.isnan(read), ~finite)
        assert np.array_equal(read.view(np.int64)[finite], written.view(np.int64)[finite])
        assert x.provenance["parameters"]["cells_without"] == {"nucleus": len(ids) - len(order)}
        assert cs.read(cs.write(x, Path(tmp) / "out")).equals(x)
