"""open_image reads OME-TIFF (flat, tiled, SubIFD and multi-series pyramids, BigTIFF) and OME-Zarr (NGFF 0.4 and
0.5) lazily; the simulated images carry the cells' intensities where the cells are."""

import json

import numpy as np
import pytest
import tifffile
import zarr

import cellspec_sc as cs
from cellspec_sc.images import checked_images
from image_oracle import correlations


def test_simulated_images_carry_each_cells_mean_intensity_at_its_centroid(imaged):
    x, folder = imaged
    for image_id in ("img1", "img2"):
        image = cs.open_image(folder / f"{image_id}.ome.tiff")
        planes = image.levels[0].compute()
        found = correlations(x, image_id, planes, image.channel_names, (image.pixel_size, image.pixel_size))
        assert min(found.values()) > 0.9, found
        swapped = correlations(x, image_id, planes, image.channel_names, (image.pixel_size, image.pixel_size),
                               swap=True)
        assert max(swapped.values()) < 0.9, swapped


def test_simulated_image_matches_its_row_and_names_its_channels(imaged):
    x, folder = imaged
    image = cs.open_image(folder / "img1.ome.tiff")
    row = x.images.set_index("image_id").loc["img1"]
    assert image.shape == (4, row["height_px"], row["width_px"])
    assert image.pixel_size == row["pixel_size"] and image.format == "ome-tiff"
    assert image.channel_names == ("DAPI", "CD3e", "Pan-Cytokeratin", "FOXP3")
    assert checked_images(x, {"img1": folder / "img1.ome.tiff"})["img1"].shape == image.shape


def test_a_cells_disc_holds_its_rounded_measurement_exactly(imaged):
    x, folder = imaged
    image = cs.open_image(folder / "img2.ome.tiff")
    cell = x.cells[x.cells["image_id"] == "img2"].iloc[3]
    row = int(np.flatnonzero((x.cells["image_id"] == "img2").to_numpy())[3])
    column = list(x.dictionary["feature_id"]).index("cell:CD3e:mean")
    i, j = int(cell["y"] / image.pixel_size), int(cell["x"] / image.pixel_size)
    assert int(image.levels[0][1, i, j].compute()) == round(float(x.measurements[row, column]))


def test_opening_reads_no_pixels_until_asked(tmp_path):
    data = np.arange(2 * 64 * 80, dtype=np.uint16).reshape(2, 64, 80)
    tifffile.imwrite(tmp_path / "a.ome.tif", data, metadata={"axes": "CYX"})
    image = cs.open_image(tmp_path / "a.ome.tif")
    (tmp_path / "a.ome.tif").write_bytes(b"")  # the pixels are gone: only reading them now would fail
    assert image.shape == (2, 64, 80) and image.channel_names == ("image_0", "image_1")


def _written_pyramid(path, data, **options):
    with tifffile.TiffWriter(path, ome=True, **options) as tif:
        tif.write(data, subifds=2, tile=(16, 16), metadata={"axes": "CYX", "Channel": {"Name": ["a", "b", "c"]},
                                                            "PhysicalSizeX": 0.65, "PhysicalSizeY": 0.65})
        tif.write(data[:, ::2, ::2], subfiletype=1, tile=(16, 16))
        tif.write(data[:, ::4, ::4], subfiletype=1, tile=(16, 16))


@pytest.mark.parametrize("bigtiff", [False, True])
def test_subifd_pyramids_are_levels_with_the_written_pixels(tmp_path, bigtiff):
    data = np.random.default_rng(0).integers(0, 4000, (3, 96, 128), dtype=np.uint16)
    _written_pyramid(tmp_path / "p.ome.tif", data, bigtiff=bigtiff)
    image = cs.open_image(tmp_path / "p.ome.tif")
    assert [lv.shape for lv in image.levels] == [(3, 96, 128), (3, 48, 64), (3, 24, 32)]
    assert image.channel_names == ("a", "b", "c") and image.pixel_size == pytest.approx(0.65)
    np.testing.assert_array_equal(image.levels[0].compute(), data)
    np.testing.assert_array_equal(image.levels[2].compute(), data[:, ::4, ::4])
    assert image.level_for(60) == 1 and image.downsampling(2) == (4.0, 4.0)


def test_pyramids_stored_as_further_series_are_levels(tmp_path):
    data = np.random.default_rng(1).integers(0, 255, (2, 64, 64), dtype=np.uint8)
    with tifffile.TiffWriter(tmp_path / "s.tif") as tif:
        for step in (1, 2, 4):
            tif.write(data[:, ::step, ::step], metadata={"axes": "CYX"})
    image = cs.open_image(tmp_path / "s.tif")
    assert [lv.shape for lv in image.levels] == [(2, 64, 64), (2, 32, 32), (2, 16, 16)]
    np.testing.assert_array_equal(image.levels[1].compute(), data[:, ::2, ::2])


def test_a_single_channel_and_an_rgb_file_are_c_y_x(tmp_path):
    plane = np.arange(12, dtype=np.uint8).reshape(3, 4)
    tifffile.imwrite(tmp_path / "g.tif", plane)
    assert cs.open_image(tmp_path / "g.tif").levels[0].compute().tolist() == [plane.tolist()]
    rgb = np.random.default_rng(2).integers(0, 255, (5, 6, 3), dtype=np.uint8)
    tifffile.imwrite(tmp_path / "rgb.tif", rgb, photometric="rgb")
    np.testing.assert_array_equal(cs.open_image(tmp_path / "rgb.tif").levels[0].compute(), rgb.transpose(2, 0, 1))


def _ngff(path, data, version):
    """An OME-Zarr image written here by hand: levels 0 and 1, axes c, y, x, scale 0.5 um."""
    multiscales = [{"version": "0.4", "axes": [{"name": "c", "type": "channel"},
                                                {"name": "y", "type": "space", "unit": "micrometer"},
                                                {"name": "x", "type": "space", "unit": "micrometer"}],
                    "datasets": [{"path": str(k), "coordinateTransformations": [
                        {"type": "scale", "scale": [1.0, 0.5 * 2**k, 0.5 * 2**k]}]} for k in (0, 1)]}]
    omero = {"channels": [{"label": "DNA"}, {"label": "CD8"}]}
    group = zarr.open_group(str(path), mode="w", zarr_format=2 if version == "0.4" else 3)
    if version == "0.4":
        group.attrs.update({"multiscales": multiscales, "omero": omero})
    else:
        del multiscales[0]["version"]
        group.attrs.update({"ome": {"version": "0.5", "multiscales": multiscales, "omero": omero}})
    for k in (0, 1):
        level = data[:, ::2**k, ::2**k]
        group.create_array(str(k), shape=level.shape, dtype=level.dtype, chunks=(1, 16, 16))[:] = level


@pytest.mark.parametrize("version", ["0.4", "0.5"])
def test_ome_zarr_images_open_with_names_levels_and_pixel_size(tmp_path, version):
    data = np.random.default_rng(3).integers(0, 999, (2, 40, 50), dtype=np.uint16)
    _ngff(tmp_path / "i.ome.zarr", data, version)
    image = cs.open_image(tmp_path / "i.ome.zarr")
    assert image.format == "ome-zarr" and image.channel_names == ("DNA", "CD8") and image.pixel_size == 0.5
    assert [lv.shape for lv in image.levels] == [(2, 40, 50), (2, 20, 25)]
    np.testing.assert_array_equal(image.levels[1].compute(), data[:, ::2, ::2])


def test_given_channel_names_replace_the_files_and_unnamed_files_take_the_objects(imaged, tmp_path):
    x, folder = imaged
    data = cs.open_image(folder / "img1.ome.tiff").levels[0].compute()
    tifffile.imwrite(tmp_path / "ashlar.tif", data, photometric="minisblack")  # no channel names, as Ashlar
    alone = cs.open_image(tmp_path / "ashlar.tif")
    assert alone.channel_names == ("image_0", "image_1", "image_2", "image_3") and not alone.names_from_file
    named = checked_images(x, {"img1": tmp_path / "ashlar.tif"}, verify=False)["img1"]
    assert named.channel_names == ("DAPI", "CD3e", "Pan-Cytokeratin", "FOXP3")
    renamed = cs.open_image(tmp_path / "ashlar.tif", channel_names=["w", "x", "y", "z"])
    assert renamed.channel_names == ("w", "x", "y", "z") and json.dumps(renamed.channel_names)


def test_the_same_example_writes_the_same_image_files(imaged, tmp_path):
    x, folder = imaged
    again = cs.example(n_cells=400, image_dir=tmp_path)
    assert again.images["source_image_sha256"].tolist() == x.images["source_image_sha256"].tolist()
    assert (tmp_path / "img1.ome.tiff").read_bytes() == (folder / "img1.ome.tiff").read_bytes()


def test_drawing_reads_the_coarsest_level_that_still_gives_the_size_asked(tmp_path):
    from cellspec_sc.images import read_downsampled

    # each level holds its own number, so the pixels read say which level they came from
    with tifffile.TiffWriter(tmp_path / "p.ome.tif", ome=True) as tif:
        tif.write(np.zeros((1, 256, 256), np.uint8), subifds=2, tile=(16, 16), metadata={"axes": "CYX"})
        tif.write(np.full((1, 128, 128), 1, np.uint8), subfiletype=1, tile=(16, 16))
        tif.write(np.full((1, 64, 64), 2, np.uint8), subfiletype=1, tile=(16, 16))
    image = cs.open_image(tmp_path / "p.ome.tif")
    coarse, covered = read_downsampled(image, 50)
    assert coarse.max() == 2 and coarse.shape == (1, 32, 32) and covered == (0, 0, 256, 256)  # 64 px, every 2nd
    assert read_downsampled(image, 100)[0].max() == 1
    assert read_downsampled(image, 200)[0].max() == 0
    # a region of a quarter of the width needs four times the resolution: the full-resolution level
    pixels, covered = read_downsampled(image, 60, region_px=(0, 0, 64, 64))
    assert pixels.max() == 0 and covered == (0, 0, 64, 64)


def test_drawing_reads_only_the_channels_asked_in_their_order(tmp_path):
    from cellspec_sc.images import read_downsampled

    data = np.stack([np.full((40, 60), 10 * (k + 1), np.uint16) for k in range(5)])  # channel k holds 10 (k + 1)
    tifffile.imwrite(tmp_path / "five.ome.tif", data, metadata={"axes": "CYX"})
    image = cs.open_image(tmp_path / "five.ome.tif")
    pixels, _ = read_downsampled(image, 30, channels=[3, 0])
    assert pixels.shape == (2, 20, 30) and pixels[:, 0, 0].tolist() == [40.0, 10.0]
    assert read_downsampled(image, 30)[0][:, 0, 0].tolist() == [10.0, 20.0, 30.0, 40.0, 50.0]
