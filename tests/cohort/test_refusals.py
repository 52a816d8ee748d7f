"""What open_cohort and write_dataset refuse, and how they name it (no cluster: dask's local threads)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import cellspec_sc as cs
from cellspec_sc.cohort import CohortError
from cellspec_sc.io._refusals import IncompleteDirectory
from dirhelpers import reseal


def test_open_refuses_what_read_refuses_naming_every_directory(slides, tmp_path):
    (slides[0] / "DONE").unlink()
    (slides[2] / "cellspec.json").write_text("{}")
    with pytest.raises(CohortError) as err:
        cs.open_cohort(slides)
    assert [(f.directory, f.check) for f in err.value.failures] == \
           [(str(slides[0]), "IncompleteDirectory"), (str(slides[2]), "ChecksumMismatch")]
    with pytest.raises(IncompleteDirectory):
        cs.read(slides[0])
    with pytest.raises(CohortError, match="no cellspec directories"):
        cs.open_cohort(tmp_path / "slides" / "nothing*")
    with pytest.raises(CohortError, match="named twice"):
        cs.open_cohort([slides[1], slides[1].parent / ".." / "slides" / slides[1].name])


def test_open_refuses_the_tsv_variant_and_says_how_to_convert(tmp_path):
    path = cs.write(cs.example(), tmp_path / "tsv", format="tsv")
    with pytest.raises(CohortError, match="cellspec convert"):
        cs.open_cohort([path])


def test_dictionaries_that_give_a_feature_two_meanings_are_refused(slides):
    document = json.loads((slides[1] / "cellspec.json").read_text())
    document["dictionary"][0]["unit"] = "photons"
    (slides[1] / "cellspec.json").write_text(json.dumps(document))
    reseal(slides[1])
    for mode in ("strict", "union", "intersection"):
        with pytest.raises(CohortError, match=r"cell:DAPI:mean|describes"):
            cs.open_cohort(slides, features=mode)
    with pytest.raises(CohortError, match="features must be one of"):
        cs.open_cohort(slides, features="some")


def test_write_dataset_refuses_an_existing_target_and_non_character_partitions(slides, tmp_path):
    cohort = cs.open_cohort(slides)
    with pytest.raises(cs.FormatError, match="already exists"):
        cohort.write_dataset(slides[0])
    with pytest.raises(CohortError, match="partition columns are character"):
        cohort.write_dataset(tmp_path / "out", partition_by=["x"])
    out = cohort.write_dataset(tmp_path / "out", partition_by=["image_id", "classification"])
    assert (out / "cells" / "image_id=slide01_img1").is_dir()
    back = cs.open_cohort(out)
    assert back.partition_by == ("image_id", "classification") and back.n_cells == 180
    frame = pd.concat([cs.read(p).cells for p in slides], ignore_index=True)
    cells = back.to_anndata().obs.sort_values(["image_id", "cell_id"])
    expected = frame.sort_values(["image_id", "cell_id"])
    assert cells["classification"].tolist() == expected["classification"].tolist()
