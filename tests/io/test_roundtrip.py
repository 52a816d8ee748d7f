"""Round trips through cellspec directories: bit-exact Parquet, 15-digit TSV, on generated objects."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings

import cellspec_sc as cs
from strategies import cellspecs

SCHEMA = json.loads((Path(cs.__file__).parent / "spec" / "schema" / "cellspec-1.0.0.schema.json").read_text())


def _fifteen(v: float) -> float:
    """A double as it reads back from 15 significant digits (stays finite, like the writer promises)."""
    if math.isnan(v) or math.isinf(v):
        return v
    rounded = float(f"{v:.15g}")
    return v if math.isinf(rounded) else rounded


def at_tsv_precision(x: cs.CellSpec) -> cs.CellSpec:
    """``x`` with every double of the cells/adjacency files rounded to 15 significant digits."""
    def frame(f):
        if f is None:
            return None
        f = f.copy()
        for name in f.columns:
            if f[name].dtype == np.float64:
                f[name] = [_fifteen(v) for v in f[name]]
        return f
    m = np.vectorize(_fifteen, otypes=[np.float64])(x.measurements) if x.measurements.size else x.measurements
    return x.replace(cells=frame(x.cells), adjacency=frame(x.adjacency), measurements=m.reshape(x.measurements.shape),
                     provenance=x.provenance)


def _check_schema(path: Path) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads((path / "cellspec.json").read_text("utf-8")))


@given(cellspecs())
def test_parquet_round_trip_is_bit_exact(x):
    with tempfile.TemporaryDirectory() as tmp:
        path = cs.write(x, Path(tmp) / "obj")
        _check_schema(path)
        y = cs.read(path)
        assert y.differences(x) == []


@settings(max_examples=15)  # three writes and reads per example; Parquet carries the bit-exact load
@given(cellspecs())
def test_tsv_round_trip_to_15_digits(x):
    with tempfile.TemporaryDirectory() as tmp:
        path = cs.write(x, Path(tmp) / "obj", format="tsv")
        _check_schema(path)
        y = cs.read(path)
        assert y.differences(at_tsv_precision(x)) == []
        # 15-digit values survive further TSV round trips unchanged
        assert cs.read(cs.write(y, Path(tmp) / "again", format="tsv")).differences(y) == []


# -- layout, as other tools see it ----------------------------------------------------------------
def test_layout_readable_by_plain_tools(tmp_path):
    x = cs.example(n_cells=40, adjacency=True, region_layers=("tumor",))
    m = x.measurements.copy()
    m[3, 2] = np.nan  # NA
    x = x.replace(measurements=m, provenance=x.provenance)
    x.cells.loc[5, "area"] = np.nan
    path = cs.write(x, tmp_path / "obj")
    assert sorted(p.name for p in path.iterdir()) == ["DONE", "MANIFEST.sha256", "adjacency.parquet",
                                                     "cells.parquet", "cellspec.json"]
    check = subprocess.run(["sha256sum", "-c", "MANIFEST.sha256"], cwd=path, capture_output=True, text=True)
    assert check.returncode == 0 and check.stdout.count(": OK") == 3
    import hashlib
    assert (path / "DONE").read_text() == hashlib.sha256((path / "MANIFEST.sha256").read_bytes()).hexdigest() + "\n"

    table = pq.read_table(path / "cells.parquet")
    assert table.column_names == list(x.cells.columns) + x.feature_ids
    assert table.schema.field("cell_id").type == pa.string()
    assert table.schema.field("x").type == pa.float64()
    assert all(table.schema.field(f).type == pa.float64() for f in x.feature_ids)
    assert table.column(x.feature_ids[2]).null_count == 1 and table.column(x.feature_ids[2])[3].as_py() is None
    assert table.column("area").null_count == 1
    assert np.array_equal(table.column(x.feature_ids[0]).to_numpy(), x.measurements[:, 0])
    frame = pd.read_parquet(path / "adjacency.parquet")
    assert list(frame.columns) == ["image_id", "cell_id_a", "cell_id_b", "shared_boundary", "method"]


def test_cellspec_json_contents(tmp_path):
    x = cs.example(n_cells=10, adjacency=True)
    doc = json.loads((cs.write(x, tmp_path / "obj") / "cellspec.json").read_text("utf-8"))
    assert list(doc) == ["spec_version", "column_types", "dictionary", "images", "channels", "provenance"]
    assert doc["spec_version"] == "1.0.0"
    assert doc["column_types"]["cells"][:3] == [{"name": n, "type": "character"}
                                                for n in ("cell_id", "image_id", "sample_id")]
    assert doc["column_types"]["cells"][-1] == {"name": x.feature_ids[-1], "type": "double"}
    assert [c["name"] for c in doc["column_types"]["adjacency"]] == list(x.adjacency.columns)
    first = x.images.iloc[0]
    assert doc["images"][0] == {"image_id": "img1", "sample_id": "s1", "pixel_size": 0.5,
                                "width_px": int(first["width_px"]), "height_px": int(first["height_px"]),
                                "platform": "simulated", "source_image": "img1.ome.tiff"}
    assert doc["dictionary"][0]["marker"] is None or isinstance(doc["dictionary"][0]["marker"], str)
    assert len(doc["channels"]) == len(x.channels)
    assert doc["provenance"] == x.provenance


def test_integer_and_logical_cells_columns(tmp_path):
    x = cs.example(n_cells=5)
    cells = x.cells.assign(n_px=pd.array([1, None, -2**31, 2**31 - 1, 0], dtype="Int32"),
                           edge=pd.array([True, None, False, True, False], dtype="boolean"))
    x = x.replace(cells=cells)
    assert cs.read(cs.write(x, tmp_path / "parquet")).differences(x) == []
    assert cs.read(cs.write(x, tmp_path / "tsv", format="tsv")).differences(at_tsv_precision(x)) == []
    schema = pq.read_schema(tmp_path / "parquet" / "cells.parquet")
    assert schema.field("n_px").type == pa.int32() and schema.field("edge").type == pa.bool_()


def test_absent_keys_and_nulls_both_read_as_na(tmp_path):
    from dirhelpers import edit_json
    x = cs.example(n_cells=5)
    path = cs.write(x, tmp_path / "o")
    edit_json(path, lambda d: (d["images"][0].pop("platform"), d["images"][1].update(platform=None)))
    assert cs.read(path).images["platform"].isna().tolist() == [True, True]


def test_without_column_types_for_json_tables(tmp_path):
    """Another implementation writes column_types for the data files only; types come from the spec."""
    from dirhelpers import edit_json
    x = cs.example(n_cells=5)
    path = cs.write(x, tmp_path / "o")
    edit_json(path, lambda d: [d["column_types"].pop(t) for t in ("dictionary", "images", "channels")])
    assert cs.read(path).differences(x) == []


def test_unknown_top_level_keys_kept_and_written_back(tmp_path):
    from dirhelpers import edit_json
    path = cs.write(cs.example(n_cells=5), tmp_path / "o")
    edit_json(path, lambda d: d.update(vendor_extension={"tool": "other", "list": [1, 2.5, None]}))
    y = cs.read(path)
    assert y.extensions == {"vendor_extension": {"tool": "other", "list": [1, 2.5, None]}}
    again = json.loads((cs.write(y, tmp_path / "again") / "cellspec.json").read_text())
    assert again["vendor_extension"] == {"tool": "other", "list": [1, 2.5, None]}


def test_cell_ids_compare_in_byte_order(tmp_path):
    x = cs.example(n_cells=4, n_images=1)
    cells = x.cells.assign(cell_id=pd.array(["10", "9", "001", "1e3"], dtype="string"))
    pair = pd.DataFrame({"image_id": ["img1"], "cell_id_a": ["10"], "cell_id_b": ["9"], "shared_boundary": [1.5],
                         "method": ["delaunay"]}).astype({c: "string" for c in ("image_id", "cell_id_a", "cell_id_b",
                                                                               "method")})
    good = x.replace(cells=cells, adjacency=pair)
    y = cs.read(cs.write(good, tmp_path / "good", format="tsv"))
    assert y.adjacency["cell_id_a"].tolist() == ["10"] and y.cells["cell_id"].tolist() == ["10", "9", "001", "1e3"]
    swapped = pair.assign(cell_id_a=pair["cell_id_b"], cell_id_b=pair["cell_id_a"])  # numeric order: wrong
    with pytest.raises(cs.ValidationError):
        cs.write(good.replace(adjacency=swapped), tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


def test_tsv_quoting_and_precision(tmp_path):
    x = cs.example(n_cells=6, n_images=1)
    odd = ["NA", "", 'say "hi"', "tab\there", "back\\slash", "new\nline"]
    x = x.replace(cells=x.cells.assign(classification=pd.array(odd, dtype="string")))
    m = x.measurements.copy()
    m[0, 0] = 0.1 + 0.2
    m[1, 0] = 1.7976931348623157e308
    m[2, 0] = -0.0
    x = x.replace(measurements=m, provenance=x.provenance)
    path = cs.write(x, tmp_path / "t", format="tsv")
    y = cs.read(path)
    assert y.cells["classification"].tolist() == odd
    assert y.measurements[0, 0] == 0.3 and y.measurements[1, 0] == 1.7976931348623157e308
    assert np.signbit(y.measurements[2, 0])
    import gzip
    text = gzip.decompress((path / "cells.tsv.gz").read_bytes()).decode()
    assert '\t"NA"\t' in text and '\t""\t' in text and '"say ""hi"""' in text


def test_parquet_keeps_every_bit(tmp_path):
    x = cs.example(n_cells=8, n_images=1)
    specials = [-0.0, 5e-324, -5e-324, 1.7976931348623157e308, 2.2250738585072014e-308, np.nan, 0.1 + 0.2, 1e-300]
    m = x.measurements.copy()
    m[:, 0] = specials
    x = x.replace(measurements=m, provenance=x.provenance)
    y = cs.read(cs.write(x, tmp_path / "p"))
    assert np.array_equal(y.measurements.view(np.uint64)[[0, 1, 2, 3, 4, 6, 7], 0],
                          np.array(specials, dtype=np.float64).view(np.uint64)[[0, 1, 2, 3, 4, 6, 7]])
    assert np.isnan(y.measurements[5, 0])


def test_zero_features_and_zero_adjacency_rows(tmp_path):
    x = cs.example(n_cells=3, adjacency=True)
    x = x.subset(features=[]).replace(adjacency=x.adjacency.iloc[:0])
    assert cs.read(cs.write(x, tmp_path / "parquet")).differences(x) == []
    assert cs.read(cs.write(x, tmp_path / "tsv", format="tsv")).differences(at_tsv_precision(x)) == []


def test_write_method_and_returned_path(tmp_path):
    x = cs.example(n_cells=5)
    out = x.write(tmp_path / "deep" / "er" / "obj")
    assert out == tmp_path / "deep" / "er" / "obj" and (out / "DONE").is_file()
    y = cs.read(str(out))
    assert y.source_dir == out.resolve()


# -- memory --------------------------------------------------------------------------------------
DECODE_CHILD = """
import json, sys, tracemalloc
from pathlib import Path
import pyarrow as pa
import cellspec_sc as cs
from cellspec_sc.io import _parquet as parquet_io, _parquet as parquet_matrix
parquet_matrix._DECODE_BYTES = 1 << 20  # small pieces for a small matrix
path = Path(sys.argv[1])
doc = json.loads((path / "cellspec.json").read_text())
types, ids = doc["column_types"]["cells"], [row["feature_id"] for row in doc["dictionary"]]
tracemalloc.start()
_, matrix, nan, _ = parquet_io.read_parquet(path / "cells.parquet", types, ids, path)
print(json.dumps({"numpy_peak": tracemalloc.get_traced_memory()[1], "arrow_peak": pa.default_memory_pool().max_memory(),
                  "matrix": matrix.nbytes, "shape": list(matrix.shape), "nan": nan}))
"""


def test_decoding_does_not_hold_two_copies_of_the_matrix(tmp_path, monkeypatch):
    """Feature columns are decoded into the final matrix piece by piece.

    Measured in a fresh process on the decoding step of read(): numpy allocations
    (tracemalloc) and Arrow's pool. Validation, which read() runs next, allocates
    per cells row and per 32768-row block, not per matrix.
    """
    from cellspec_sc.io import _parquet as parquet_io
    monkeypatch.setattr(parquet_io, "_ROW_GROUP_BYTES", 1 << 22)  # ~5,000-row groups
    cs.write(cs.example(n_cells=50_000, n_features=100), tmp_path / "big")  # wide: the cells table is small
    out = subprocess.run([sys.executable, "-c", DECODE_CHILD, str(tmp_path / "big")], capture_output=True,
                         text=True, check=True)
    m = json.loads(out.stdout)
    assert m["shape"] == [50_000, 100] and m["nan"] == {}
    assert m["numpy_peak"] < 1.25 * m["matrix"], m  # one matrix plus piece-sized temporaries
    assert m["arrow_peak"] < 0.35 * m["matrix"], m  # Arrow's buffers: one piece (iter_batches held ~1.4x)
