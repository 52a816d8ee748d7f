"""read_steinbock on folders the tests build with the column layout of steinbock's documentation
(docs/file-types.md: panel, image information, object data indexed by ``Object``, object neighbors
``Object, Neighbor, Distance``; regionprops as scikit-image names them: ``centroid-0`` the row)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cellspec_sc as cs
import cellspec_sc.model._provenance as provenance
import cellspec_sc.readers._table as pieces
from cellspec_sc.cli.main import main
from cellspec_sc.errors import InputError
from cellspec_sc.model import first_seen_codes, matrix_stats
from cellspec_sc.readers import SteinbockAdapter
from cellspec_sc.readers._features import build_dictionary
from cellspec_sc.readers.steinbock import _adapter as steinbock_adapter
from cellspec_sc.readers.steinbock._plan import ADAPTER_VERSION
from exports import export_markers, measured_values, number_text

PANEL = [("Ir191", "DNA1", 1), ("Yb176", "CD3", 1), ("Pt195", "", 0), ("Er168", "CD8a", 1)]
PROPS = ["area", "centroid-0", "centroid-1", "major_axis_length", "minor_axis_length", "eccentricity"]


text = partial(number_text, nan="nan", inf="inf")  # steinbock writes its tables with pandas


def write_steinbock(folder: Path, images: dict[str, dict], *, panel=PANEL, acquisition_um: float | None = 1.0,
                    markers: list[str] | None = None) -> Path:
    """A steinbock output folder: panel.csv, images.csv, intensities/, regionprops/, neighbors/."""
    for sub in ("intensities", "regionprops", "neighbors"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    if panel is not None:
        (folder / "panel.csv").write_text("channel,name,keep,ilastik,deepcell,cellpose\n" + "".join(
            f"{c},{n},{k},{i + 1},,\n" for i, (c, n, k) in enumerate(panel)))
    markers = markers or [n for _, n, k in (panel or PANEL) if k]
    lines = ["image,width_px,height_px,num_channels,acquisition_id,acquisition_width_um,acquisition_height_um"]
    for stem, d in images.items():
        w, h = d.get("size", (100, 80))
        um = "" if acquisition_um is None else f"{w * acquisition_um},{h * acquisition_um}"
        lines.append(f"{stem}.tiff,{w},{h},{len(markers)},1,{um}" if um else f"{stem}.tiff,{w},{h},{len(markers)},1,,")
    (folder / "images.csv").write_text("\n".join(lines) + "\n")
    for stem, d in images.items():
        ids = d["ids"]
        (folder / "intensities" / f"{stem}.csv").write_text(
            "Object," + ",".join(markers) + "\n"
            + "".join(f"{o}," + ",".join(text(v) for v in row) + "\n" for o, row in zip(ids, d["values"], strict=True)))
        (folder / "regionprops" / f"{stem}.csv").write_text(
            "Object," + ",".join(PROPS) + "\n"
            + "".join(f"{o},{a},{r!r},{c!r},5.0,3.0,0.8\n"
                      for o, a, (r, c) in zip(ids, d["areas"], d["centroids"], strict=True)))
        if "neighbors" in d:
            (folder / "neighbors" / f"{stem}.csv").write_text(
                "Object,Neighbor,Distance\n" + "".join(f"{a},{b},{dist}\n" for a, b, dist in d["neighbors"]))
    return folder


def two_images(tmp_path: Path, **options) -> Path:
    return write_steinbock(tmp_path / "steinbock", {
        "Patient1_001": {"ids": [1, 2, 3], "values": [[1.0, 2.0, 3.0], [4.0, float("nan"), 6.0], [7.0, 8.0, 9.0]],
                         "areas": [12, 20, 9], "centroids": [(10.0, 4.0), (0.0, 0.0), (79.0, 99.0)],
                         "neighbors": [(1, 2, 1.0), (2, 1, 1.0), (2, 3, 2.0), (3, 2, 2.0)]},
        "Patient1_002": {"ids": [1, 7], "values": [[0.5, 0.25, 0.125], [1.5, 2.5, 3.5]], "areas": [30, 31],
                         "centroids": [(5.5, 6.5), (1.0, 2.0)], "neighbors": [(1, 7, 3.0), (7, 1, 3.0)]},
    }, **options)


def test_cells_centroids_and_pixel_centre_convention(tmp_path):
    x = cs.read_steinbock(two_images(tmp_path))
    assert cs.validate(x).ok
    assert x.cells["image_id"].tolist() == ["Patient1_001"] * 3 + ["Patient1_002"] * 2
    assert x.cells["cell_id"].tolist() == ["1", "2", "3", "1", "7"]
    # centroid-0 is the row (y), centroid-1 the column (x); pixel i has its centre at i + 0.5
    assert x.cells["x_px"].tolist() == [4.5, 0.5, 99.5, 7.0, 2.5]
    assert x.cells["y_px"].tolist() == [10.5, 0.5, 79.5, 6.0, 1.5]
    assert x.cells["x"].tolist() == [4.5, 0.5, 99.5, 7.0, 2.5]  # 1 um per pixel (acquisition_width_um / width_px)
    assert x.cells["area"].tolist() == [12.0, 20.0, 9.0, 30.0, 31.0]


def test_panel_names_become_markers_and_metal_tags_channel_names(tmp_path):
    x = cs.read_steinbock(two_images(tmp_path))
    assert x.feature_ids == ["cell:DNA1:mean", "cell:CD3:mean", "cell:CD8a:mean", "cell:area",
                             "cell:major_axis_length", "cell:minor_axis_length", "cell:eccentricity"]
    units = dict(zip(x.dictionary["feature_id"], x.dictionary["unit"], strict=True))
    assert units["cell:area"] == "px2" and units["cell:major_axis_length"] == "px" and units["cell:eccentricity"] == "1"
    ch = x.channels[x.channels["image_id"] == "Patient1_001"]
    assert ch["channel_name"].tolist() == ["Ir191", "Yb176", "Er168"]  # keep=0 left out
    assert ch["marker"].tolist() == ["DNA1", "CD3", "CD8a"]
    assert np.isnan(x.measurements[1, 1]) and x.measurements[4, 2] == 3.5
    assert x.provenance["counts"]["na_converted"] == 1


def test_neighbours_become_adjacency_pairs_once_in_byte_order(tmp_path):
    x = cs.read_steinbock(two_images(tmp_path))
    adj = x.adjacency
    assert adj[["image_id", "cell_id_a", "cell_id_b"]].values.tolist() == [
        ["Patient1_001", "1", "2"], ["Patient1_001", "2", "3"], ["Patient1_002", "1", "7"]]
    assert adj["method"].unique().tolist() == ["mask_touching"]
    assert adj["shared_boundary"].tolist() == [0.0, 0.0, 0.0]
    assert x.provenance["parameters"]["neighbors"]["pairs"] == 3
    back = cs.read(cs.write(x, tmp_path / "out"))
    assert back.equals(x), back.differences(x)
    no_adj = cs.read_steinbock(tmp_path / "steinbock", neighbors=False)
    assert no_adj.adjacency is None


def test_byte_order_of_ids_decides_the_pair_order(tmp_path):
    folder = write_steinbock(tmp_path / "s", {"im": {"ids": [9, 10], "values": [[1, 2, 3], [4, 5, 6]],
                                                     "areas": [3, 4], "centroids": [(1.0, 1.0), (2.0, 2.0)],
                                                     "neighbors": [(9, 10, 1.0), (10, 9, 1.0)]}})
    adj = cs.read_steinbock(folder).adjacency
    assert adj[["cell_id_a", "cell_id_b"]].values.tolist() == [["10", "9"]]  # "10" < "9" byte-wise


def test_pairs_keep_the_order_they_are_first_listed_in(tmp_path):
    """steinbock lists each edge twice; the pairs come in the order their first listing appears in the file."""
    rng = np.random.default_rng(7)
    ids = list(range(1, 201))
    edges = [tuple(int(v) for v in rng.choice(ids, 2, replace=False)) for _ in range(400)]
    listed = [e for a, b in edges for e in ((a, b), (b, a))]
    rng.shuffle(listed)
    folder = write_steinbock(tmp_path / "s", {"im": {
        "ids": ids, "values": [[1.0, 2.0, 3.0]] * len(ids), "areas": [5] * len(ids),
        "centroids": [(float(i), float(i)) for i in ids], "neighbors": [(a, b, 1.0) for a, b in listed]}})
    expected = list(dict.fromkeys(tuple(sorted((str(a), str(b)))) for a, b in listed))
    adj = cs.read_steinbock(folder).adjacency
    assert list(map(tuple, adj[["cell_id_a", "cell_id_b"]].values.tolist())) == expected


def test_pixel_size_from_images_csv_argument_and_provenance(tmp_path):
    folder = two_images(tmp_path, acquisition_um=0.5)
    x = cs.read_steinbock(folder)
    assert x.images["pixel_size"].tolist() == [0.5, 0.5]
    assert x.images["width_px"].tolist() == [100, 100]
    assert x.cells["x"].tolist()[0] == 4.5 * 0.5
    assert x.provenance["parameters"]["pixel_size_source"] == "images.csv: acquisition_width_um / width_px"
    y = cs.read_steinbock(folder, pixel_size={"Patient1_001": 2.0, "Patient1_002": 1.0})
    assert y.cells["x"].tolist() == [9.0, 1.0, 199.0, 7.0, 2.5]
    prov = x.provenance
    assert prov["reader"]["adapter"] == "steinbock" and prov["reader"]["adapter_version"] == ADAPTER_VERSION
    names = [i["path_basename"] for i in prov["inputs"]]
    assert names[:3] == ["panel.csv", "images.csv", "intensities/Patient1_001.csv"]
    assert "regionprops/Patient1_002.csv" in names and "neighbors/Patient1_001.csv" in names
    panel = (folder / "panel.csv").read_bytes()
    assert prov["inputs"][0]["sha256"] == hashlib.sha256(panel).hexdigest()


def test_every_file_of_the_folder_is_read_once_and_hashed_from_the_bytes_parsed(tmp_path, monkeypatch):
    folder = two_images(tmp_path)

    def hashed_again(path, *args, **kwargs):
        raise AssertionError(f"{path} was read a second time to hash it")
    monkeypatch.setattr(provenance, "file_digest", hashed_again)
    x = cs.read_steinbock(folder, neighbors_method="mask_touching")
    inputs = {i["path_basename"]: i for i in x.provenance["inputs"]}
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.csv"))
    assert sorted(inputs) == files and len(files) == 8  # panel, images.csv and 3 tables of 2 images
    for name, record in inputs.items():
        data = (folder / name).read_bytes()
        assert record["sha256"] == hashlib.sha256(data).hexdigest() and record["bytes"] == len(data), name


def test_a_small_folder_parses_each_table_from_the_bytes_its_header_read_took(tmp_path, monkeypatch):
    folder = two_images(tmp_path)
    one = cs.read_steinbock(folder, neighbors_method="mask_touching")

    def read_again(*args, **kwargs):
        raise AssertionError("a table was read a second time")
    for name in ("piece_bytes", "_small_file", "data_start", "_estimated_rows"):
        monkeypatch.setattr(pieces, name, read_again)
    again = cs.read_steinbock(folder, neighbors_method="mask_touching")
    assert again.equals(one.replace(provenance=again.provenance)), again.differences(one)
    assert again.provenance["inputs"] == one.provenance["inputs"]


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_folder_or_fifo_in_place_of_a_table_is_refused_as_such(tmp_path, kind):
    for table in ("regionprops", "neighbors"):
        folder = two_images(tmp_path / table)
        path = folder / table / "Patient1_002.csv"
        path.unlink()
        path.mkdir() if kind == "folder" else os.mkfifo(path)
        what = "a directory" if kind == "folder" else r"a FIFO \(named pipe\)"
        with pytest.raises(InputError, match=rf"Patient1_002.csv: is {what}, not a regular file"):
            cs.read_steinbock(folder, neighbors_method="mask_touching")


def test_refusals_name_file_line_column_and_what_to_pass(tmp_path):
    folder = two_images(tmp_path, acquisition_um=None)
    with pytest.raises(InputError, match=r"steinbock/images.csv: line 2, column 'acquisition_width_um': no pixel size "
                                         r"for image 'Patient1_001'.*pixel_size=1.0.*--pixel-size 1.0"):
        cs.read_steinbock(folder)
    assert cs.read_steinbock(folder, pixel_size=1.0).n_cells == 5
    (folder / "regionprops" / "Patient1_002.csv").write_text(
        "Object," + ",".join(PROPS) + "\n1,3,1,1,5,3,0.8\n9,3,1,1,5,3,0.8\n")
    with pytest.raises(InputError, match=r"intensities/Patient1_002.csv: line 3, column 'Object': object '7' has "
                                         r"no row in regionprops/Patient1_002.csv"):
        cs.read_steinbock(folder, pixel_size=1.0)
    (folder / "regionprops" / "Patient1_002.csv").write_text("Object,area,centroid-0,centroid-1\n1,3,1,1\n7,3,1,1\n")
    with pytest.raises(InputError, match=r"regionprops/Patient1_002.csv: line 1: columns differ from "
                                         r"regionprops/Patient1_001.csv \(eccentricity, major_axis_length"):
        cs.read_steinbock(folder, pixel_size=1.0)


def test_refusals_by_name(tmp_path):
    with pytest.raises(InputError, match="no such folder") as missing:
        cs.read_steinbock(tmp_path / "nothing")
    assert isinstance(missing.value, FileNotFoundError)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"no intensities/\*.csv; not a steinbock output folder"):
        cs.read_steinbock(tmp_path / "empty")
    folder = two_images(tmp_path)
    (folder / "neighbors" / "Patient1_002.csv").write_text("Object,Neighbor,Distance\n1,8,2.0\n")
    with pytest.raises(InputError,
                       match=r"neighbors/Patient1_002.csv: line 2, column 'Neighbor': object '8' is not in"):
        cs.read_steinbock(folder)
    with pytest.raises(InputError, match="neighbors_method='touching'"):
        cs.read_steinbock(folder, neighbors_method="touching")
    (folder / "regionprops" / "Patient1_001.csv").write_text("Object,area\n1,3\n")
    with pytest.raises(InputError, match=r"not a steinbock regionprops table: expected column\(s\) not found: "
                                         r"'centroid-1'; 'centroid-0'"):
        cs.read_steinbock(folder)


def test_cli_import_steinbock(tmp_path, capsys, validation_calls):
    folder = two_images(tmp_path)
    out = tmp_path / "out"
    assert main(["import", "steinbock", str(folder), str(out)]) == 0
    assert validation_calls == ["CellSpec"]  # one validation per import, as for the other readers
    assert "5 cells" in capsys.readouterr().out
    back = cs.read(out)
    assert back.adjacency is not None and len(back.adjacency) == 3
    assert main(["import", "steinbock", str(folder), str(out)]) == 2
    assert "pass --overwrite" in capsys.readouterr().err
    assert main(["import", "steinbock", str(folder), str(out), "--overwrite", "--no-neighbors"]) == 0
    assert cs.read(out).adjacency is None


markers = export_markers.filter(lambda m: m not in ("Object",))
values = measured_values(infinities=False)


@st.composite
def steinbock_folders(draw):
    names = draw(st.lists(markers, min_size=1, max_size=4, unique=True))
    images = {}
    for k in range(draw(st.integers(1, 3))):
        n = draw(st.integers(1, 6))
        ids = sorted(draw(st.lists(st.integers(1, 10**6), min_size=n, max_size=n, unique=True)))
        cent = [(draw(st.floats(0, 999, allow_nan=False)), draw(st.floats(0, 999, allow_nan=False))) for _ in ids]
        pairs = draw(st.lists(st.tuples(st.sampled_from(ids), st.sampled_from(ids)), max_size=6))
        images[f"img_{k:03d}"] = {"ids": ids, "values": [[draw(values) for _ in names] for _ in ids],
                                  "areas": [draw(st.integers(1, 500)) for _ in ids], "centroids": cent,
                                  "neighbors": [(a, b, 1.0) for a, b in pairs] + [(b, a, 1.0) for a, b in pairs],
                                  "size": (1000, 1000)}
    return names, images


@settings(max_examples=15, deadline=None)
@given(steinbock_folders(), st.sampled_from([1.0, 0.5]))
def test_generated_steinbock_folders_read_back_exactly(folder_spec, um_per_px):
    names, images = folder_spec
    panel = [(f"M{i}", n, 1) for i, n in enumerate(names)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_steinbock(Path(tmp) / "s", images, panel=panel, acquisition_um=um_per_px)
        x = cs.read_steinbock(folder)
        assert cs.validate(x).ok
        assert x.feature_ids[:len(names)] == [f"cell:{m}:mean" for m in names]
        raw = np.array([row for d in images.values() for row in d["values"]], dtype=np.float64)
        got = x.measurements[:, :len(names)]
        assert np.array_equal(np.isnan(got), np.isnan(raw))
        ok = ~np.isnan(raw)
        assert np.array_equal(got.view(np.int64)[ok], raw.view(np.int64)[ok])  # -0.0 and subnormals bit-exact
        xs = [(c + 0.5) * um_per_px for d in images.values() for _, c in d["centroids"]]
        assert x.cells["x"].tolist() == xs
        expected_pairs = {(s, *sorted((str(a), str(b)))) for s, d in images.items()
                          for a, b, _ in d["neighbors"] if a != b}
        got_pairs = set() if x.adjacency is None else \
            set(map(tuple, x.adjacency[["image_id", "cell_id_a", "cell_id_b"]].values.tolist()))
        assert got_pairs == expected_pairs
        back = cs.read(cs.write(x, Path(tmp) / "out"))
        assert back.equals(x), back.differences(x)


@pytest.mark.parametrize(("file", "line"), [("panel.csv", 4), ("images.csv", 3), ("neighbors/Patient1_001.csv", 2)])
def test_a_side_file_row_with_a_field_missing_is_refused_naming_file_and_line(tmp_path, file, line):
    # a byte sweep over the folder: pyarrow's ArrowInvalid ("CSV parse error: Expected 6 columns, got 5") escaped
    folder = two_images(tmp_path)
    lines = (folder / file).read_text().splitlines()
    fields = lines[line - 1].split(",")
    lines[line - 1] = ",".join(fields[:-2] + [fields[-2] + fields[-1]])
    (folder / file).write_text("\n".join(lines) + "\n")
    name = Path(file).name
    with pytest.raises(InputError, match=rf"^{name}: line {line}: expected {len(fields)} comma-separated fields as "
                                         rf"in the header, found {len(fields) - 1}"):
        cs.read_steinbock(folder)


def test_images_csv_without_a_height_column_reads_without_image_sizes(tmp_path):
    # steinbock writes both; a file that lost one raised TypeError from int(None)
    folder = two_images(tmp_path)
    text = (folder / "images.csv").read_text().replace("height_px", "height")
    (folder / "images.csv").write_text(text)
    x = cs.read_steinbock(folder)
    assert "width_px" not in x.images.columns and x.images["pixel_size"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("value", ["100.5", "-100", "0", "1e400"])
def test_images_csv_sizes_that_are_no_whole_number_of_pixels_are_refused(tmp_path, value):
    folder = two_images(tmp_path)
    lines = (folder / "images.csv").read_text().splitlines()
    lines[2] = lines[2].replace(",100,80,", f",{value},80,", 1)
    (folder / "images.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"images.csv: line 3, column 'width_px': .* is not a positive whole number of "
                                         r"pixels"):
        cs.read_steinbock(folder)


def test_the_folder_parse_hands_validation_the_stats_a_walk_over_the_joined_matrix_gives(tmp_path):
    rng = np.random.default_rng(3)
    images = {}
    for k, n in enumerate((40, 1, 25)):
        values = rng.normal(0, 2, (n, 3))
        values[rng.random((n, 3)) < 0.1] = np.nan
        ids = list(range(1, n + 1))
        images[f"img{k}"] = {"ids": ids, "values": values.tolist(), "areas": rng.integers(1, 50, n).tolist(),
                             "centroids": rng.uniform(0, 70, (n, 2)).tolist()}
    folder = write_steinbock(tmp_path / "steinbock", images)
    props = folder / "regionprops" / "img0.csv"  # the regionprops rows in another order than the intensities'
    header, *lines = props.read_text().splitlines()
    props.write_text("\n".join([header, *lines[::-1]]) + "\n")
    adapter = SteinbockAdapter(aggregation="mean")
    parsed, _ = adapter.parse(adapter.plan(folder))
    x = cs.read_steinbock(folder, aggregation="mean")
    codes, names = first_seen_codes(x.cells["image_id"])
    given = parsed.stats.for_images(codes, names)
    walked = matrix_stats(x.measurements, codes, len(names))
    for name in ("nan", "infinite", "negative", "first_infinite", "low", "high"):
        assert np.array_equal(getattr(given, name), getattr(walked, name)), name
    assert given.nan.sum() > 0 and given.negative.sum() > 0
    fresh = x.replace()
    fresh.validation_memo = None
    assert cs.validate(x) is x.validation_memo[2]  # the report of the read, made with the stats handed over
    assert cs.validate(x) == cs.validate(fresh)
    plan = adapter.plan(folder)
    parsed, plan = adapter.parse(plan)
    dictionary, applied = build_dictionary(plan.features, {})
    handed = adapter.tables(plan, parsed, dictionary, applied).image_codes
    assert np.array_equal(handed[0], codes) and list(handed[1]) == list(names)


def test_images_parsed_ahead_refuse_in_the_order_of_the_images(tmp_path, monkeypatch):
    """The first image's refusal is the one given, although later images' tables are parsed ahead of the join."""
    monkeypatch.setattr(steinbock_adapter, "workers", lambda: 2)
    monkeypatch.setattr(steinbock_adapter, "AHEAD_TABLE_BYTES", 0)  # tables of a few rows are parsed ahead too
    images = {f"img{k}": {"ids": [1, 2, 3], "values": [[1.0, 2.0, 3.0]] * 3, "areas": [5, 6, 7],
                          "centroids": [(1.0, 2.0), (3.0, 4.0), (5.0, 6.0)]} for k in range(4)}
    images["img1"]["ids"] = [1, 2, 2]  # refused at the join of the second image
    folder = write_steinbock(tmp_path / "steinbock", images)
    assert steinbock_adapter._parse_threads(SteinbockAdapter(aggregation="mean").plan(folder).files) == 2
    later = folder / "intensities" / "img3.csv"  # refused by the parse of the fourth image
    later.write_text(later.read_text().replace("1.0", "one", 1))
    with pytest.raises(InputError, match=r"img1\.csv: lines 3 and 4.*object id '2' appears twice"):
        cs.read_steinbock(folder, aggregation="mean")
    for sub in ("intensities", "regionprops"):
        (folder / sub / "img1.csv").write_text((folder / sub / "img0.csv").read_text())
    with pytest.raises(InputError, match=r"img3\.csv: line 2, column 'DNA1': cannot parse 'one'"):
        cs.read_steinbock(folder, aggregation="mean")
