"""`cellspec preview`: a standalone HTML preview (and PNG) of the example, a directory or an .h5ad."""

from __future__ import annotations

import re

import cellspec_sc as cs

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _feature_options(page: str) -> list[str]:
    select = re.search(r"<select id='feature'>(.*?)</select>", page, re.S).group(1)
    return re.findall(r"<option value='([^']*)'>", select)


def test_cli_preview(tmp_path, capsys):
    from cellspec_sc.cli.main import main

    out = tmp_path / "report.html"
    assert main(["preview", "example", "-o", str(out), "--feature", "cell:area", "--colour-by", "classification",
                 "--png", str(tmp_path / "view.png"), "--max-features", "3"]) == 0
    text = out.read_text()
    assert _feature_options(text) == ["cell:area", "cell:DAPI:mean", "cell:DAPI:median"]
    assert (tmp_path / "view.png").read_bytes()[:8] == PNG_MAGIC
    assert main(["preview", "example", "-o", str(out), "--image", "img7"]) == 2
    assert "unknown image_id 'img7'" in capsys.readouterr().err
    assert main(["preview", str(tmp_path / "missing"), "-o", str(out)]) == 2


def test_cli_preview_of_a_directory(tmp_path):
    from cellspec_sc.cli.main import main

    x = cs.example(region_layers=("tissue",))
    cs.write(x, tmp_path / "slide")
    out = tmp_path / "report.html"
    assert main(["preview", str(tmp_path / "slide"), "-o", str(out), "--features", "cell:area", "--image", "img2"]) == 0
    text = out.read_text()
    assert _feature_options(text) == ["cell:area"] and "Space: img2" in text and "region__tissue" in text


def test_cli_preview_of_an_h5ad(tmp_path):
    from cellspec_sc.bridges.anndata import to_anndata
    from cellspec_sc.cli.main import main

    to_anndata(cs.example()).write_h5ad(tmp_path / "slide.h5ad")
    out = tmp_path / "report.html"
    assert main(["preview", str(tmp_path / "slide.h5ad"), "-o", str(out), "--features", "nucleus:FOXP3:mean"]) == 0
    assert _feature_options(out.read_text()) == ["nucleus:FOXP3:mean"]
