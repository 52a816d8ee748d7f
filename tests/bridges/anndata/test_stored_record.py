"""The record in ``uns["cellspec"]`` as a versioned codec: records written before versions were (stored examples in
tests/data/records/) decode to the object they were written from and still notice a changed X or column; the record
written now carries its version through h5ad and zarr; a newer major version is refused naming both versions; a
damaged record is refused with a CellspecError naming what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import anndata as ad
import numpy as np
import pytest

import cellspec_sc as cs
from cellspec_sc.bridges.anndata import read_anndata_zarr, read_h5ad, write_h5ad
from cellspec_sc.bridges.anndata._record import MOST_PARTS, RECORD, decode, split_parts, text_fingerprint

RECORDS = Path(__file__).resolve().parents[2] / "data" / "records"
# stored file -> the algorithm of X's fingerprint it holds (see tests/data/records/README.md)
BEFORE_VERSIONS = {"anndata-main.h5ad": "xxh3_128x4", "anndata-main.zarr": "xxh3_128x4",
                   "anndata-main-xxh3_128.h5ad": "xxh3_128", "anndata-main-sha256.h5ad": "sha256"}


def stored(name: str) -> ad.AnnData:
    path = RECORDS / name
    return ad.read_h5ad(path) if path.suffix == ".h5ad" else ad.read_zarr(path)


def with_meta(adata: ad.AnnData, **changes) -> ad.AnnData:
    """``meta`` changed as a crafted record would be: its own fingerprint written to match (version 1.2)."""
    meta = json.loads(adata.uns["cellspec"]["meta"])
    meta.update(changes)
    return with_meta_text(adata, json.dumps({k: v for k, v in meta.items() if v is not None}))


def with_meta_text(adata: ad.AnnData, text: str) -> ad.AnnData:
    adata.uns["cellspec"]["meta"] = text
    adata.uns["cellspec"]["meta_fingerprint"] = text_fingerprint(text)
    return adata


# -- records written before format versions ---------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(BEFORE_VERSIONS))
def test_a_record_written_before_versions_decodes_as_version_1_0_to_the_object_it_holds(name):
    adata = stored(name)
    assert "format_version" not in adata.uns["cellspec"]
    record = decode(adata.uns["cellspec"], where="uns['cellspec']")
    assert record.version == (1, 0) and record.fingerprint.algorithm == BEFORE_VERSIONS[name]
    assert cs.from_anndata(adata).equals(cs.example(adjacency=True))
    read = read_h5ad if name.endswith(".h5ad") else read_anndata_zarr
    assert read(RECORDS / name).equals(cs.example(adjacency=True))


@pytest.mark.parametrize("name", sorted(BEFORE_VERSIONS))
def test_a_record_written_before_versions_still_notices_a_changed_x_and_a_changed_column(name):
    adata = stored(name)
    adata.X[40, 3] = np.nextafter(adata.X[40, 3], np.inf)
    with pytest.raises(cs.CellspecError, match="allow_modified=True"):
        cs.from_anndata(adata)
    adata = stored(name)
    adata.obs["classification"] = adata.obs["classification"].str.lower()
    with pytest.raises(cs.CellspecError, match=r"obs columns \['classification'\]"):
        cs.from_anndata(adata)
    step = cs.from_anndata(adata, allow_modified=["classification"]).provenance["history"][-1]
    assert step["details"] == {"cells_columns_changed": ["classification"]}


# -- the record written now -------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["memory", "h5ad", "zarr"])
def test_the_record_written_now_carries_its_version(x, fmt, tmp_path, write_and_read):
    adata = cs.to_anndata(x)
    if fmt != "memory":
        adata = write_and_read(adata, tmp_path, fmt)
    assert str(adata.uns["cellspec"]["format_version"]) == RECORD.version == "1.2"
    assert "bridge_version" not in json.loads(adata.uns["cellspec"]["meta"])  # format_version replaces it
    assert decode(adata.uns["cellspec"], where="uns['cellspec']").version == (1, 2)
    assert cs.from_anndata(adata).equals(x)


def test_a_newer_major_version_is_refused_naming_both_versions(x, tmp_path):
    adata = cs.to_anndata(x)
    adata.uns["cellspec"]["format_version"] = "2.0"
    with pytest.raises(cs.CellspecError, match=r"version 2\.0, newer than the 1\.2 this cellspec_sc reads"):
        cs.from_anndata(adata)
    path = tmp_path / "x.h5ad"
    adata.write_h5ad(path)
    with pytest.raises(cs.CellspecError, match=r"version 2\.0, newer than the 1\.2") as caught:
        read_h5ad(path)
    assert str(path) in str(caught.value)


def test_a_newer_minor_version_is_read_and_a_version_that_is_no_version_refused(x):
    adata = cs.to_anndata(x)
    adata.uns["cellspec"]["format_version"] = "1.9"  # adds only what this version may pass over
    assert cs.from_anndata(adata).equals(x)
    adata.uns["cellspec"]["format_version"] = "one"
    with pytest.raises(cs.CellspecError, match="which is not MAJOR.MINOR"):
        cs.from_anndata(adata)


def test_a_record_of_version_1_1_or_later_holds_only_the_variants_of_its_version(x):
    """The bare SHA-256 of X and the SHA-256 column fingerprints were written only before versions were."""
    sha = "0" * 64
    with pytest.raises(cs.CellspecError, match=r"lacks \['measurements_fingerprint'\]"):
        cs.from_anndata(with_meta(cs.to_anndata(x), measurements_fingerprint=None, measurements_sha256=sha))
    old_columns = {name: "0" * 32 for name in x.cells.columns}
    with pytest.raises(cs.CellspecError, match="cells_fingerprints.*in no form of version 1.2"):
        cs.from_anndata(with_meta(cs.to_anndata(x), cells_fingerprints=old_columns))


# -- X's fingerprint: the part count of xxh3_128x<N> is bounded ---------------------------------------------------
@pytest.mark.parametrize("parts", [str(MOST_PARTS + 1), "999999999", "9" * 5000, "0", "٤"])
def test_a_crafted_part_count_is_refused_at_once(x, parts):
    """A record naming a billion row parts must not make a list of them (nor an int of 5,000 digits)."""
    algorithm = f"xxh3_128x{parts}"
    assert split_parts(algorithm) == 0
    with pytest.raises(cs.CellspecError, match="which this version of cellspec_sc does not compute"):
        cs.from_anndata(with_meta(cs.to_anndata(x), measurements_fingerprint=f"{algorithm}:00"))


def test_every_part_count_up_to_the_bound_is_computed_by_its_definition():
    assert [split_parts(f"xxh3_128x{n}") for n in (1, 4, MOST_PARTS)] == [1, 4, MOST_PARTS]


# -- damaged records ----------------------------------------------------------------------------------------------
def test_damaged_uns_is_refused_with_a_cellspec_error(x):
    adata = cs.to_anndata(x)
    adata.uns["cellspec"]["meta"] = "{}"
    with pytest.raises(cs.CellspecError, match=r"\['meta'\] does not hold the text to_anndata wrote"):
        cs.from_anndata(adata)
    with pytest.raises(cs.CellspecError, match="lacks"):
        cs.from_anndata(with_meta_text(adata, "{}"))
    adata.uns["cellspec"] = "not a dict"
    with pytest.raises(cs.CellspecError, match="not the dict"):
        cs.from_anndata(adata)
    adata = cs.to_anndata(x)
    adata.uns["cellspec"]["images"] = "[1, 2"
    with pytest.raises(cs.CellspecError, match="images"):
        cs.from_anndata(adata)
    with pytest.raises(cs.CellspecError, match="only apply to an AnnData without"):
        cs.from_anndata(cs.to_anndata(x), pixel_size=0.5)


@pytest.mark.parametrize("part", ["meta", "images", "channels"])
def test_an_unknown_column_type_in_the_record_is_refused_by_name(x, part, tmp_path):
    """One changed byte in an .h5ad turned "character" into "ch`racter" in the record: a KeyError came out of
    the type conversion instead of a refusal. A table of the record is fingerprinted (version 1.2): the change
    is refused as such, naming the table."""
    adata = cs.to_anndata(x)
    text = adata.uns["cellspec"][part]
    assert '"character"' in text
    adata.uns["cellspec"][part] = text.replace('"character"', '"ch`racter"', 1)
    if part == "meta":  # crafted with its fingerprint: refused by the type, not only as changed text
        with_meta_text(adata, adata.uns["cellspec"]["meta"])
    path = tmp_path / "x.h5ad"
    adata.write_h5ad(path)
    expected = r"the type 'ch`racter', which the spec does not have" if part == "meta" else \
        rf"uns\['cellspec'\]\['{part}'\] changed since to_anndata wrote it"
    with pytest.raises(cs.InputError, match=expected) as caught:
        read_h5ad(path)
    assert str(path) in str(caught.value) and "uns['cellspec']" in str(caught.value)
    write_h5ad(x, path, overwrite=True)
    assert read_h5ad(path).equals(x)


@pytest.mark.parametrize("meta, named", [
    ({"measurements_shape": [80]}, "measurements_shape"),
    ({"measurements_shape": "80x19"}, "measurements_shape"),
    ({"feature_ids": "cell:CD3e:mean"}, "feature_ids"),
    ({"cells_fingerprints": ["xxh3:00"]}, "cells_fingerprints"),
    ({"measurements_fingerprint": None, "measurements_sha256": "not hex"}, "measurements"),
])
def test_a_damaged_meta_is_refused_naming_its_key(x, meta, named):
    adata = with_meta(cs.to_anndata(x), **meta)
    if "measurements_sha256" in meta:
        del adata.uns["cellspec"]["format_version"]  # the bare SHA-256 is a version 1.0 variant
    with pytest.raises(cs.InputError, match=named):
        cs.from_anndata(adata)
