"""The writer copies an object's outline files only from inside its source folder: a symlink that leads out of
it is refused as the SpatialData writer refuses it, and nothing is written."""

from __future__ import annotations

import pytest

import cellspec_sc as cs
from cellspec_sc.io._refusals import UnsafePath


def test_an_outline_file_that_is_a_symlink_out_of_the_source_folder_is_not_copied(tmp_path):
    secret = tmp_path / "elsewhere" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0\n")
    x = cs.example(outlines=True, outline_dir=tmp_path / "D")
    ref = str(x.images["geometry_ref"].dropna().iloc[0])
    outline = tmp_path / "D" / ref
    outline.unlink()
    outline.symlink_to(secret)
    with pytest.raises(UnsafePath, match="leads outside"):
        cs.write(x, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_symlink_to_a_file_inside_the_source_folder_is_copied_as_that_file(tmp_path):
    x = cs.example(outlines=True, outline_dir=tmp_path / "D")
    ref = str(x.images["geometry_ref"].dropna().iloc[0])
    outline = tmp_path / "D" / ref
    kept = outline.with_name("kept.geojson")
    outline.rename(kept)
    outline.symlink_to(kept)
    written = cs.write(x, tmp_path / "out")
    assert (written / ref).read_bytes() == kept.read_bytes() and not (written / ref).is_symlink()
