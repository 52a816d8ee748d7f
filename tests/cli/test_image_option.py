"""`--image ID=PATH` on `cellspec preview`, `convert` and `luxar`: the images go with the cells after their checks;
a mismatch exits 2 naming the image."""

from __future__ import annotations

import base64
import io
import re

import matplotlib.image as mpimg
import numpy as np
import pytest
import spatialdata as sd

import cellspec_sc as cs
from cellspec_sc.cli.main import main


@pytest.fixture(scope="module")
def slide(tmp_path_factory):
    """A cellspec directory of the example with its images beside it: (directory, images folder, object)."""
    folder = tmp_path_factory.mktemp("slide")
    x = cs.example(image_dir=folder / "images")
    cs.write(x, folder / "slide.cellspec")
    return folder / "slide.cellspec", folder / "images", x


def test_preview_embeds_the_composite_of_the_image_given(slide, tmp_path):
    directory, images, _ = slide
    out = tmp_path / "report.html"
    assert main(["preview", str(directory), "-o", str(out), "--image", f"img2={images / 'img2.ome.tiff'}",
                 "--channels", "Pan-Cytokeratin", "--png", str(tmp_path / "view.png")]) == 0
    text = out.read_text()
    assert "Space: img2" in text  # the image given is the one shown
    uri = re.search(r"alt='composite of channels with cells' src='data:image/png;base64,([^']+)'", text).group(1)
    composite = mpimg.imread(io.BytesIO(base64.b64decode(uri)), format="png")
    lit = composite[..., 1] > 0.5
    assert lit.mean() > 0.05 and np.median(composite[..., 0][lit]) < 0.1  # Pan-Cytokeratin alone: cyan discs
    assert mpimg.imread(tmp_path / "view.png").shape[0] > composite.shape[0]


def test_convert_to_spatialdata_writes_the_image_element(slide, tmp_path):
    directory, images, x = slide
    target = tmp_path / "x.spatialdata.zarr"
    assert main(["convert", str(directory), str(target), "--image", f"img1={images / 'img1.ome.tiff'}"]) == 0
    element = sd.read_zarr(str(target)).images["img1_image"]
    np.testing.assert_array_equal(element["scale0"]["image"].values,
                                  cs.open_image(images / "img1.ome.tiff").levels[0].compute())


def test_an_image_that_does_not_fit_exits_2_naming_it(slide, tmp_path, capsys):
    directory, images, _ = slide
    assert main(["convert", str(directory), str(tmp_path / "x.h5ad"), "--image", f"img1={images / 'img2.ome.tiff'}"
                 ]) == 2
    err = capsys.readouterr().err
    assert "image 'img1'" in err and "img2.ome.tiff" in err and "source_image_sha256" in err
    assert not (tmp_path / "x.h5ad").exists()
    assert main(["convert", str(directory), str(tmp_path / "x.h5ad"), "--no-verify",
                 "--image", f"img1={images / 'img2.ome.tiff'}"]) == 0
    assert main(["convert", str(directory), str(tmp_path / "copy"), "--image", f"img1={images / 'img1.ome.tiff'}"
                 ]) == 2
    assert "a cellspec directory holds no images" in capsys.readouterr().err
    assert main(["preview", str(directory), "-o", str(tmp_path / "r.html"), "--image", "img9=x.tif"]) == 2
    assert "its images are img1, img2" in capsys.readouterr().err


def test_luxar_puts_the_image_under_the_cells(slide, tmp_path):
    import zarr

    directory, images, _ = slide
    out = tmp_path / "s.luxar.zarr"
    assert main(["luxar", str(directory), str(out), "--layer", "cells", "--layer", "image:CD3e,FOXP3",
                 "--image", f"img2={images / 'img2.ome.tiff'}"]) == 0
    root = zarr.open_group(str(out), mode="r")
    assert "img2.image" in root and "img1.image" not in root
    assert dict(root["img2.image/pixels"].attrs)["has_texture"]
