"""Hypothesis strategies for valid cellspec objects, shared by every round-trip test.

Generated objects pass structure validation and are built to break lossy code:
NA wherever the spec allows it, -0.0, subnormals, the largest double, non-ASCII
text, ids that look numeric ("001", "1e3") or like NA ("NA"), ids with tabs and
quotes, ids that sort differently as bytes and as numbers ("10" < "9"), zero
features, one cell, several images, optional adjacency and region layers.

>>> from strategies import cellspecs
>>> # @given(cellspecs()) def test_round_trip(x): ...
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from cellspec_sc import CellSpec
from cellspec_sc.model import new_provenance
from cellspec_sc.spec import canonical_frame, vocabulary

VOC = vocabulary()
NASTY_IDS = ["001", "1", "10", "9", "1e3", "NA", "-0", "0x1F", "Zelle ä", "細胞", "img 1", "a\tb", 'q"uote',
             "back\\slash", "é", "e\u0301", "line\nbreak", " lead", "µm²"]
SPECIAL_DOUBLES = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                   -1.7976931348623157e308, 1.0 / 3.0, 0.1, 1e-300, 123456789.123456789]
NASTY_MARKERS = ["CD3e", "Pan-Cytokeratin", "FOXP3", "Ki-67", "β-Catenin", "HLA DR", "CD45RO", "αSMA", "001"]

text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=8)
ids = st.one_of(st.sampled_from(NASTY_IDS), text)
doubles = st.one_of(st.sampled_from(SPECIAL_DOUBLES), st.floats(allow_nan=False, allow_infinity=False))
doubles_or_na = st.one_of(st.just(float("nan")), doubles)
positive_or_na = st.one_of(st.just(float("nan")),
                           st.sampled_from([5e-324, 1e-300, 1.0, 150.25, 1.7976931348623157e308]),
                           st.floats(min_value=1e-3, max_value=1e6))
markers = st.one_of(st.sampled_from(NASTY_MARKERS),
                    text.map(lambda s: s.replace(":", "_").strip()).filter(bool))


@st.composite
def dictionaries(draw, max_features: int = 5) -> tuple[pd.DataFrame, list[str]]:
    """(dictionary, intensity markers): any mix of intensity, shape and other features, possibly none."""
    n = draw(st.integers(0, max_features))
    rows, seen = [], set()
    for _ in range(n):
        kind = draw(st.sampled_from(VOC.kinds))
        marker = draw(markers) if kind == "intensity" else None
        compartment = draw(st.sampled_from(VOC.compartments)) if kind != "other" else None
        if kind == "intensity":
            statistic, unit = draw(st.sampled_from(VOC.intensity_statistics)), "a.u."
        elif kind == "shape":
            statistic, unit = (draw(st.sampled_from(VOC.shape_statistics)),
                               draw(st.sampled_from(("um", "um2", "px", "1"))))
        else:
            statistic, unit = draw(st.sampled_from(["detection_probability", "ünïcode_score", "n"])), "1"
        fid = VOC.feature_id_rule(kind).format(compartment=compartment, marker=marker, statistic=statistic)
        if fid in seen:
            continue
        seen.add(fid)
        rows.append({"feature_id": fid, "kind": kind, "marker": marker, "compartment": compartment,
                     "statistic": statistic, "unit": unit, "source_name": draw(text) + " µm",
                     "marker_source": draw(st.one_of(st.none(), markers)) if marker else None})
    columns = ["feature_id", "kind", "marker", "compartment", "statistic", "unit", "source_name", "marker_source"]
    frame = pd.DataFrame(rows, columns=columns)
    if not draw(st.booleans()):
        frame = frame.drop(columns="marker_source")
    intensity_markers = list(dict.fromkeys(r["marker"] for r in rows if r["kind"] == "intensity"))
    return canonical_frame(frame, "dictionary"), intensity_markers


@st.composite
def images_tables(draw, max_images: int = 3) -> pd.DataFrame:
    image_ids = draw(st.lists(ids, min_size=1, max_size=max_images, unique=True))
    n = len(image_ids)
    frame = pd.DataFrame({
        "image_id": image_ids,
        "sample_id": [draw(ids) for _ in range(n)],
        "pixel_size": [draw(st.sampled_from([0.5, 0.325, 1.0, 5e-324, 0.2125000000000001])) for _ in range(n)],
    })
    if draw(st.booleans()):
        frame["subject_id"] = [draw(st.one_of(st.none(), ids)) for _ in range(n)]
    if draw(st.booleans()):
        frame["pixel_size_y"] = [draw(st.one_of(st.just(float("nan")), st.just(0.5000000000000001))) for _ in range(n)]
    if draw(st.booleans()):
        frame["width_px"] = pd.array([draw(st.one_of(st.none(), st.integers(1, 2**31 - 1))) for _ in range(n)],
                                     dtype="Int32")
        frame["height_px"] = pd.array([draw(st.one_of(st.none(), st.integers(1, 2**31 - 1))) for _ in range(n)],
                                      dtype="Int32")
    return canonical_frame(frame, "images")


def _channels(images: pd.DataFrame, intensity_markers: list[str], extra: list[str]) -> pd.DataFrame:
    names = intensity_markers + [m for m in extra if m not in intensity_markers]
    if not names:
        names = ["DAPI"]
    rows = [{"image_id": img, "channel_index": i + 1, "channel_name": f"ch{i + 1}_{m}", "marker": m}
            for img in images["image_id"] for i, m in enumerate(names)]
    return canonical_frame(pd.DataFrame(rows), "channels")


@st.composite
def cells_tables(draw, images: pd.DataFrame, min_cells: int, max_cells: int,
                 region_layers: list[str]) -> pd.DataFrame:
    n = draw(st.integers(min_cells, max_cells))
    image_ids = list(images["image_id"])
    sample_of = dict(zip(images["image_id"], images["sample_id"], strict=True))
    image_col = [draw(st.sampled_from(image_ids)) for _ in range(n)]
    cell_ids: list[str] = []
    used: dict[str, set[str]] = {}
    for img in image_col:
        taken = used.setdefault(img, set())
        cid = draw(ids.filter(lambda c, taken=taken: c not in taken))
        used[img].add(cid)
        cell_ids.append(cid)
    frame = pd.DataFrame({
        "cell_id": cell_ids, "image_id": image_col, "sample_id": [sample_of[i] for i in image_col],
        "x": [draw(doubles) for _ in range(n)], "y": [draw(doubles) for _ in range(n)],
    }, columns=["cell_id", "image_id", "sample_id", "x", "y"])
    if draw(st.booleans()):
        frame["area"] = [draw(positive_or_na) for _ in range(n)]
    if draw(st.booleans()):
        frame["classification"] = [draw(st.one_of(st.none(), st.sampled_from(["Tumor", "T cell", "NA", "ä"])))
                                   for _ in range(n)]
    for layer in region_layers:
        frame[f"region__{layer}"] = [draw(st.one_of(st.none(), ids)) for _ in range(n)]
        frame[f"boundary_distance__{layer}"] = [draw(doubles_or_na) for _ in range(n)]
    if draw(st.booleans()):
        frame["n_neighbours"] = pd.array([draw(st.one_of(st.none(), st.integers(-2**31, 2**31 - 1)))
                                          for _ in range(n)], dtype="Int32")
    if draw(st.booleans()):
        frame["on_border"] = pd.array([draw(st.one_of(st.none(), st.booleans())) for _ in range(n)], dtype="boolean")
    return canonical_frame(frame, "cells")


@st.composite
def adjacency_tables(draw, cells: pd.DataFrame) -> pd.DataFrame:
    pairs = set()
    for img, group in cells.groupby("image_id", sort=False):
        members = sorted(group["cell_id"], key=lambda s: s.encode())
        for a_i in range(len(members)):
            for b_i in range(a_i + 1, len(members)):
                if draw(st.booleans()):
                    pairs.add((img, members[a_i], members[b_i]))
    rows = [{"image_id": i, "cell_id_a": a, "cell_id_b": b,
             "shared_boundary": draw(st.sampled_from([0.0, -0.0, 5e-324, 1.5, 12.345678901234567, 1e300])),
             "method": draw(st.sampled_from(VOC.adjacency_methods))} for i, a, b in sorted(pairs)]
    columns = [c.name for c in VOC.tables["adjacency"]]
    return canonical_frame(pd.DataFrame(rows, columns=columns), "adjacency")


def _measurements(draw, n_cells: int, n_features: int) -> np.ndarray:
    values = [draw(doubles_or_na) for _ in range(n_cells * n_features)]
    return np.array(values, dtype=np.float64).reshape(n_cells, n_features)


@st.composite
def provenances(draw) -> dict:
    prov = new_provenance(producer={"tool": draw(st.sampled_from(["QuPath", "mcquant", "Zellzähler"])),
                                    "version": "0.5.1"},
                          adapter=draw(st.sampled_from(["qupath", "test"])), adapter_version="1",
                          inputs=[{"path_basename": "export ä.tsv", "bytes": 12345, "sha256": "0" * 64}],
                          counts={"rows_read": 3, "rows_kept": 3, "na_converted": 1, "nonfinite_converted": 0},
                          parameters={"pixel_size": draw(st.sampled_from([0.5, -0.0, 5e-324])),
                                      "pixel_size_source": "argument", "note": draw(st.one_of(st.none(), text)),
                                      "nested": {"list": [1, "zwei", None, True], "empty": {}}})
    prov["created_utc"] = "2026-12-02T12:00:00Z"
    if draw(st.booleans()):
        prov["history"] = [{"step": "subset", "function": "cellspec_sc.CellSpec.subset",
                            "time_utc": "2026-12-02T12:00:01Z", "details": {"cells_before": 4, "cells_after": 3}}]
    return prov


@st.composite
def cellspecs(draw, *, min_cells: int = 1, max_cells: int = 6, max_images: int = 3, max_features: int = 5,
              adjacency: bool | None = None, region_layers: bool | None = None) -> CellSpec:
    """A valid CellSpec (structure checks pass) full of edge cases; see the module docstring."""
    dictionary, intensity_markers = draw(dictionaries(max_features))
    images = draw(images_tables(max_images))
    extra_markers = draw(st.lists(st.sampled_from(["DAPI", "Hoechst"]), max_size=2, unique=True))
    layers = draw(st.lists(st.sampled_from(["tissue", "Tumour.core-1", "0"]), max_size=2, unique=True)) \
        if region_layers is None else (["tissue"] if region_layers else [])
    cells = draw(cells_tables(images, min_cells, max_cells, layers))
    with_adjacency = draw(st.booleans()) if adjacency is None else adjacency
    return CellSpec(
        cells=cells,
        measurements=_measurements(draw, len(cells), len(dictionary)),
        dictionary=dictionary,
        images=images,
        channels=_channels(images, intensity_markers, extra_markers),
        provenance=draw(provenances()),
        adjacency=draw(adjacency_tables(cells)) if with_adjacency else None,
    )
