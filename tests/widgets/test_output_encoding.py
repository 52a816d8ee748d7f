"""Nothing runs from the data: names are text in every page the package writes or shows (escaped in HTML,
JSON inside <script> with <, >, & and U+2028/2029 escaped), labels are drawn without math parsing and with a
capped length, and the terminal gets no control characters from the data."""

from __future__ import annotations

import json
import re
import warnings

import pandas as pd
import pytest

import cellspec_sc as cs
from browser import browser_page
from cellspec_sc.bridges.luxar import LuxarViewer
from cellspec_sc.cli.main import main

INJECTED = ["<img src=x onerror=\"window.__ran='img'\">", "</script><script>window.__ran='script'</script>",
            "<!--<script>", "a\u2028b&c>"]


def hostile(tmp_path=None) -> cs.CellSpec:
    """An object whose marker names and classifications are markup, script and mathtext."""
    x = cs.example(markers=["CD3e", *INJECTED[:3]])
    classes = x.cells["classification"].astype(object).to_numpy().copy()
    classes[:4] = ["$\\foo$", "{" * 400 + "}" * 400, "</script><script>window.__ran='class'</script>", "x" * 5000]
    return x.replace(cells=x.cells.assign(classification=pd.array(classes, dtype="string")))


def test_json_in_the_snapshot_page_cannot_end_its_script_and_decodes_to_the_names(tmp_path):
    x = hostile()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = cs.preview(x).save_html(tmp_path / "p.html")
    page = path.read_text(encoding="utf-8")
    embedded = re.search(r"<script type='application/json' id='[^']+'>(.*?)</script>", page, re.S).group(1)
    assert not set(embedded) & {"<", ">", "&", "\u2028", "\u2029"}
    state = json.loads(embedded)
    assert {f for f in x.feature_ids if "onerror" in f} <= set(state["features"])


def test_no_injected_name_runs_script_in_the_written_pages(tmp_path):
    x = hostile()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        snapshot = cs.preview(x).save_html(tmp_path / "p.html")
    stopped = tmp_path / "stopped.html"
    scene = tmp_path / "<img src=x onerror=\"window.__ran='viewer'\">.luxar.zarr"
    scene.mkdir()
    (scene / "zarr.json").write_text("{}")
    stopped.write_text("<!DOCTYPE html><body>" + LuxarViewer(scene)._repr_html_() + x._repr_html_()
                       + x.validate()._repr_html_() + "</body>", encoding="utf-8")
    for page_path in (snapshot, stopped):
        with browser_page(tmp_path / f"profile-{page_path.stem}") as (page, errors):
            page.goto(page_path.as_uri())
            page.wait_for_timeout(500)
            assert page.evaluate("window.__ran === undefined"), page_path.name
            assert not [e for e in errors if "pageerror" in e], errors
            if page_path == snapshot:  # the page's own script ran: choosing a feature shows its summary
                assert page.evaluate("document.querySelectorAll('#feature option').length") > 0


def test_preview_of_mathtext_and_nested_braces_draws_them_as_text(tmp_path, capsys):
    from cellspec_sc.cli._sources import load  # noqa: F401 - the CLI reads the directory written here

    source = cs.write(hostile(), tmp_path / "d")
    assert main(["preview", str(source), "-o", str(tmp_path / "p.html")]) == 0, capsys.readouterr().err
    assert "bug in cellspec_sc" not in capsys.readouterr().err


def test_info_prints_no_control_characters_from_the_data(tmp_path, capsys):
    x = cs.example(markers=["CD3e", "\x1b[31mRED\x1b[0m", "bell\x07"])
    source = cs.write(x, tmp_path / "d")
    assert main(["info", str(source)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "RED" in out or "M002" in out or "CD3e" in out


@pytest.mark.parametrize("length", [100_000])
def test_a_very_long_marker_is_drawn_capped(tmp_path, length):
    from cellspec_sc.widgets._figures import capped_label

    assert len(capped_label("m" * length)) <= 80
    assert capped_label("short") == "short"
