"""Images that do not fit the object, and files that are not images, are refused by name (ImageError), never a
crash, a hang or an unbounded read."""

import os
import shutil
import struct
import threading

import numpy as np
import pytest
import tifffile

import cellspec_sc as cs
from cellspec_sc.errors import CellspecError, ImageError
from cellspec_sc.images import checked_images


def _copy_without_names(imaged, tmp_path, data=None, **metadata):
    x, folder = imaged
    data = cs.open_image(folder / "img1.ome.tiff").levels[0].compute() if data is None else data
    path = tmp_path / "other.ome.tif"
    tifffile.imwrite(path, data, photometric="minisblack", metadata={"axes": "CYX", **metadata})
    return x, path


def test_an_image_of_another_size_is_refused_naming_id_file_and_both_sizes(imaged, tmp_path):
    x, path = _copy_without_names(imaged, tmp_path, np.zeros((4, 146, 200), np.uint16))
    width = int(x.images.set_index("image_id").loc["img1", "width_px"])
    with pytest.raises(ImageError) as err:
        checked_images(x, {"img1": path})
    assert "'img1'" in str(err.value) and str(path) in str(err.value)
    assert f"width_px is {width} in the object, the file has 200" in str(err.value)


def test_an_image_with_another_channel_count_is_refused(imaged, tmp_path):
    x, path = _copy_without_names(imaged, tmp_path, np.zeros((3, *cs.open_image(imaged[1] / "img1.ome.tiff").shape[1:]),
                                                                np.uint16))
    with pytest.raises(ImageError, match="channels table has 4 channels for this image, the file has 3"):
        checked_images(x, {"img1": path}, verify=False)


def test_an_image_with_another_pixel_size_is_refused(imaged, tmp_path):
    x, path = _copy_without_names(imaged, tmp_path, PhysicalSizeX=0.325, PhysicalSizeY=0.325)
    with pytest.raises(ImageError, match=r"pixel_size is 0.5 um in the object, the file states 0.325 um"):
        checked_images(x, {"img1": path}, verify=False)


def test_a_file_with_another_hash_is_refused_unless_verify_is_false(imaged, tmp_path):
    x, path = _copy_without_names(imaged, tmp_path)  # same pixels, another file
    expected = x.images.set_index("image_id").loc["img1", "source_image_sha256"]
    with pytest.raises(ImageError) as err:
        checked_images(x, {"img1": path})
    assert f"source_image_sha256 is {expected} in the object" in str(err.value) and str(path) in str(err.value)
    assert checked_images(x, {"img1": path}, verify=False)["img1"].n_channels == 4


def test_an_unknown_image_id_is_refused_listing_the_known_ones(imaged):
    x, folder = imaged
    with pytest.raises(ImageError, match="image 'slide9': the object has no such image_id; its images are img1, img2"):
        checked_images(x, {"slide9": folder / "img1.ome.tiff"})


def test_a_truncated_tiff_is_refused(imaged, tmp_path):
    _, folder = imaged
    whole = (folder / "img1.ome.tiff").read_bytes()
    for cut in (len(whole) // 2, 200, 9):
        (tmp_path / "cut.tif").write_bytes(whole[:cut])
        with pytest.raises(ImageError, match="cut.tif: (truncated|damaged) TIFF"):
            cs.open_image(tmp_path / "cut.tif")


def test_wrong_ifd_offsets_are_refused(tmp_path):
    tifffile.imwrite(tmp_path / "a.tif", np.zeros((2, 8, 8), np.uint8), photometric="minisblack")
    data = bytearray((tmp_path / "a.tif").read_bytes())
    for offset in (len(data) + 1000, 3, 2**32 - 8):
        data[4:8] = struct.pack("<I", offset)
        (tmp_path / "bad.tif").write_bytes(bytes(data))
        with pytest.raises(ImageError, match="bad.tif: (damaged|truncated) TIFF"):
            cs.open_image(tmp_path / "bad.tif")


def test_a_file_that_is_no_image_and_a_missing_path_are_refused(tmp_path):
    (tmp_path / "cells.csv").write_text("x,y\n1,2\n")
    with pytest.raises(ImageError, match=r"cells.csv: not an image.*b'x,y\\n'"):
        cs.open_image(tmp_path / "cells.csv")
    (tmp_path / "folder").mkdir()
    with pytest.raises(ImageError, match="not an OME-Zarr image"):
        cs.open_image(tmp_path / "folder")
    with pytest.raises(ImageError, match="cannot open the image"):
        cs.open_image(tmp_path / "absent.tif")
    with pytest.raises(FileNotFoundError):
        cs.open_image(tmp_path / "absent.tif")


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    os.mkfifo(tmp_path / "pipe.tif")
    outcome = []
    worker = threading.Thread(target=lambda: outcome.append(_raised(tmp_path / "pipe.tif")), daemon=True)
    worker.start()
    worker.join(timeout=20)
    if worker.is_alive():  # unblock the opener before failing, so the test run does not hang either
        with open(tmp_path / "pipe.tif", "wb"):
            pass
        pytest.fail("open_image waited on a FIFO")
    assert isinstance(outcome[0], ImageError) and "FIFO" in str(outcome[0])


def _raised(path):
    try:
        cs.open_image(path)
    except CellspecError as err:
        return err
    return None


def test_the_checks_open_no_file_twice_and_accept_an_opened_image(imaged, tmp_path):
    x, folder = imaged
    shutil.copy(folder / "img2.ome.tiff", tmp_path / "img2.ome.tiff")
    opened = cs.open_image(tmp_path / "img2.ome.tiff")
    assert checked_images(x, {"img2": opened})["img2"] is opened
