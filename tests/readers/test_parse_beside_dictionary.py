"""The pipeline parses an export on another thread while it builds the dictionary of the plan: the refusals still come
in the order of the steps (the parse's first), and the dictionary is that of the plan the parse settled on."""

from __future__ import annotations

import pytest

import cellspec_sc as cs
from cellspec_sc._background import in_background
from cellspec_sc.readers import _pipeline as pipeline
from tool_layouts import write_halo, write_qupath

SAME_NAME = {"DAPI": "X", "CD8 (Opal 570)": "X"}  # two markers given one name: the dictionary refuses them


@pytest.fixture(autouse=True, params=[0, 1 << 40], ids=["parsed beside the dictionary", "parsed first"])
def background_parse(request, monkeypatch):
    """Every export parsed on another thread while the dictionary is built (its files are small), or none."""
    monkeypatch.setattr(pipeline, "BACKGROUND_PARSE_BYTES", request.param)
    started = []
    monkeypatch.setattr(pipeline, "in_background", lambda *args, **kwargs: started.append(1) or in_background(
        *args, **kwargs))
    yield
    assert bool(started) == (request.param == 0)


def test_a_refusal_of_the_parse_comes_before_one_of_the_dictionary(tmp_path):
    path = write_halo(tmp_path)
    with pytest.raises(cs.InputError, match="would both be called 'X'"):
        cs.read_halo(path, pixel_size=0.5, marker_map=SAME_NAME)
    text = path.read_bytes().decode("utf-8-sig").splitlines()
    fields = text[1].split(",")
    fields[-1] = "round"  # Nucleus Roundness, a measurement, holds text
    path.write_bytes("\r\n".join([text[0], ",".join(fields), *text[2:]]).encode("utf-8-sig") + b"\r\n")
    with pytest.raises(cs.InputError, match=r"line 2, column 'Nucleus Roundness': cannot parse 'round'"):
        cs.read_halo(path, pixel_size=0.5, marker_map=SAME_NAME)
    with pytest.raises(cs.InputError, match=r"line 2, column 'Nucleus Roundness': cannot parse 'round'"):
        cs.read_halo(path, pixel_size=0.5)


def test_the_dictionary_is_that_of_the_plan_the_parse_settled_on(tmp_path):
    path = write_qupath(tmp_path)
    x = cs.read_qupath(path)
    assert x.dictionary["source_name"].tolist() == ["Cell: Area µm^2", "Nucleus: CD3: Mean"]
    path.write_text(path.read_text().replace("450.25", "high").replace("\t8.5", "\tlow"))
    with pytest.warns(cs.CellspecWarning, match="Nucleus: CD3: Mean"):  # read as text: a cells column
        y = cs.read_qupath(path)
    assert y.dictionary["source_name"].tolist() == ["Cell: Area µm^2"]
    assert y.feature_ids == ["cell:area"] and y.measurements.shape == (2, 1)
    assert y.cells.filter(like="cd3").iloc[:, 0].tolist() == ["high", "low"]
