"""The example's images are written a strip at a time: each level holds exactly the discs and 2 x 2 means computed
here on whole arrays, the file is the one tifffile writes from those arrays, and no scratch file is left."""

import hashlib

import numpy as np
import pytest
import tifffile

import cellspec_sc as cs
from cellspec_sc.errors import InputError


def _painted(x, image_id, shape, pixel_size):
    """The full-resolution planes painted cell by cell: every pixel whose centre lies within the disc of the
    cell's area takes its rounded ``cell:<marker>:mean`` (clipped to 16 bits)."""
    cells = x.cells[x.cells["image_id"] == image_id]
    rows = np.flatnonzero((x.cells["image_id"] == image_id).to_numpy())
    features = list(x.dictionary["feature_id"])
    channels = x.channels[x.channels["image_id"] == image_id].sort_values("channel_index")["marker"]
    planes = np.zeros(shape, np.uint16)
    centre_y = (np.arange(shape[1]) + 0.5) * pixel_size
    centre_x = (np.arange(shape[2]) + 0.5) * pixel_size
    for k, (cx, cy, area) in enumerate(zip(cells["x"], cells["y"], cells["area"], strict=True)):
        radius = np.sqrt(area / np.pi)
        ys = np.flatnonzero(np.abs(centre_y - cy) <= radius + pixel_size)
        xs = np.flatnonzero(np.abs(centre_x - cx) <= radius + pixel_size)
        disc = (centre_x[None, xs] - cx) ** 2 + (centre_y[ys, None] - cy) ** 2 <= radius**2
        for c, marker in enumerate(channels):
            value = np.clip(np.round(x.measurements[rows[k], features.index(f"cell:{marker}:mean")]), 0, 65535)
            block = planes[c, ys[0]:ys[-1] + 1, xs[0]:xs[-1] + 1]
            block[disc] = value
    return planes


def _halvings(planes):
    """2 x 2 means (float, rounded half to even) until the longest side is at most 256 pixels."""
    levels = [planes]
    while max(levels[-1].shape[1:]) > 256:
        above = levels[-1]
        h, w = above.shape[1] // 2, above.shape[2] // 2
        means = above[:, :2 * h, :2 * w].astype(np.float64).reshape(above.shape[0], h, 2, w, 2).mean(axis=(2, 4))
        levels.append(np.round(means).astype(np.uint16))
    return levels


@pytest.fixture(scope="module")
def slide(tmp_path_factory):
    """One image of 2,500 cells at 0.45 um a pixel: 1,789 x 1,294 pixels, four levels (odd sides halved on the way)."""
    folder = tmp_path_factory.mktemp("slide")
    x = cs.example(n_cells=2_500, n_images=1, pixel_size=0.45, image_dir=folder)
    return x, folder / "img1.ome.tiff"


def test_every_level_holds_the_discs_and_their_2x2_means(slide):
    x, path = slide
    row = x.images.iloc[0]
    shape = (4, int(row["height_px"]), int(row["width_px"]))
    expected = _halvings(_painted(x, "img1", shape, 0.45))
    with tifffile.TiffFile(path) as tif:
        found = [level.asarray() for level in tif.series[0].levels]
    assert [f.shape for f in found] == [e.shape for e in expected]
    assert [f.shape[1:] for f in found][1:] == [(647, 894), (323, 447), (161, 223)]
    for level, (f, e) in enumerate(zip(found, expected, strict=True)):
        np.testing.assert_array_equal(f, e, err_msg=f"level {level}")
    assert (found[0] > 0).mean() > 0.5  # the discs cover most of the tissue


def test_the_file_is_what_tifffile_writes_from_the_whole_arrays(slide, tmp_path):
    x, path = slide
    with tifffile.TiffFile(path) as tif:
        levels = [level.asarray() for level in tif.series[0].levels]
        description = tif.pages[0].description
    assert 'PhysicalSizeX="0.45"' in description and 'Name="Pan-Cytokeratin"' in description
    uuid = description.split('UUID="', 1)[1].split('"', 1)[0]
    metadata = {"axes": "CYX", "UUID": uuid, "Channel": {"Name": ["DAPI", "CD3e", "Pan-Cytokeratin", "FOXP3"]},
                "PhysicalSizeX": 0.45, "PhysicalSizeXUnit": "µm", "PhysicalSizeY": 0.45, "PhysicalSizeYUnit": "µm"}
    with tifffile.TiffWriter(tmp_path / "whole.ome.tiff", ome=True) as tif:
        tif.write(levels[0], subifds=len(levels) - 1, tile=(256, 256), metadata=metadata, compression="zlib")
        for level in levels[1:]:
            tif.write(level, subfiletype=1, tile=(256, 256) if max(level.shape[1:]) > 256 else None,
                      compression="zlib")
    assert (tmp_path / "whole.ome.tiff").read_bytes() == path.read_bytes()
    assert sorted(p.name for p in path.parent.iterdir()) == ["img1.ome.tiff"]  # no scratch file left


def test_uncompressed_images_hold_the_same_pixels_and_their_hash(slide, tmp_path):
    x, path = slide
    y = cs.example(n_cells=2_500, n_images=1, pixel_size=0.45, image_dir=tmp_path, image_compression=None)
    plain = tmp_path / "img1.ome.tiff"
    with tifffile.TiffFile(plain) as tif, tifffile.TiffFile(path) as zipped:
        assert tif.pages[0].compression == tifffile.COMPRESSION.NONE
        for a, b in zip(tif.series[0].levels, zipped.series[0].levels, strict=True):
            np.testing.assert_array_equal(a.asarray(), b.asarray())
    assert plain.stat().st_size > 4 * 1_789 * 1_294 * 2  # every pixel stored
    assert y.images["source_image_sha256"].iloc[0] == hashlib.sha256(plain.read_bytes()).hexdigest()


def test_an_unknown_compression_is_refused_by_name(tmp_path):
    with pytest.raises(InputError, match="image_compression"):
        cs.example(n_cells=10, image_dir=tmp_path, image_compression="jpeg")
