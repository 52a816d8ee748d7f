"""Cohorts on a real dask.distributed LocalCluster (2 worker processes, 1 thread each, shared by the module).

Every result is compared with what ``cs.read`` of each directory gives, computed here with numpy.
"""

from __future__ import annotations

import hashlib
import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from distributed import Client, LocalCluster

import cellspec_sc as cs
from cellspec_sc.cohort import CohortError
from cellspec_sc.cohort.example import prefixed
from dirhelpers import reseal

ROW_GROUPS = {"slide01": None, "slide02": 40, "slide03": 64}  # None: as written (one row group)


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit="1GiB") as cluster, Client(cluster) as c:
        yield c


def _slide(seed: int, name: str, **options) -> cs.CellSpec:
    x = prefixed(cs.example(seed, n_cells=150, n_images=2, **options), f"{name}_")
    m = x.measurements.copy()
    m[seed::9, 2] = np.nan  # NA in one feature
    m[:, 5][m[:, 5] > np.nanmedian(m[:, 5])] *= -0.0  # signed zeros survive untouched
    return x.replace(measurements=m)


def write_slide(x: cs.CellSpec, path, row_group_size: int | None):
    cs.write(x, path)
    if row_group_size:
        pq.write_table(pq.read_table(path / "cells.parquet"), path / "cells.parquet", row_group_size=row_group_size)
        reseal(path)
    return path


@pytest.fixture(scope="module")
def slides(tmp_path_factory):
    root = tmp_path_factory.mktemp("cohort") / "slides"
    return [write_slide(_slide(i, name), root / name, size) for i, (name, size) in enumerate(ROW_GROUPS.items(), 1)]


@pytest.fixture(scope="module")
def cohort(slides):
    return cs.open_cohort(slides)


def test_open_reads_metadata_only_and_stacks_the_tables(slides, cohort):
    objects = [cs.read(p) for p in slides]
    assert len(cohort) == 3 and cohort.n_cells == sum(x.n_cells for x in objects) == 450
    assert cohort.directories == [str(p) for p in slides]
    pd.testing.assert_frame_equal(cohort.dictionary, objects[0].dictionary)
    images = cohort.images
    assert images["image_id"].tolist() == [i for x in objects for i in x.images["image_id"]]
    assert images["directory"].tolist() == [str(p) for p, x in zip(slides, objects, strict=True)
                                            for _ in range(len(x.images))]
    assert len(cohort.channels) == sum(len(x.channels) for x in objects)
    assert [len(m.parts) for m in cohort.members] == [1, 4, 3]
    # a folder and a glob find the same directories, in name order
    assert cs.open_cohort(slides[0].parent).directories == cohort.directories
    assert cs.open_cohort(str(slides[0].parent / "slide0[12]")).directories == cohort.directories[:2]


def test_validate_on_the_cluster_gives_every_check_of_cs_validate(client, slides, cohort):
    report = cohort.validate()
    assert report.ok and report.failures == []
    for path in slides:
        ours = report.directory(path)
        theirs = cs.validate(cs.read(path))
        assert [(r.name, r.status, r.message) for r in ours.results] == \
               [(r.name, r.status, r.message) for r in theirs.results]
    assert {c.name: c.status for c in report.checks} == {
        "cohort_image_id_unique": "pass", "cohort_sample_consistent": "pass",
        "cohort_dictionaries_compatible": "pass", "cohort_spec_versions": "pass"}


def test_summary_equals_numpy_on_each_directory(client, slides, cohort):
    summary = cohort.summary()
    assert len(summary) == 6 * 19
    for path in slides:
        x = cs.read(path)
        for image in x.images["image_id"]:
            rows = x.measurements[(x.cells["image_id"] == image).to_numpy()]
            got = summary[summary["image_id"] == image].set_index("feature_id").loc[x.feature_ids]
            assert (got["directory"] == str(path)).all()
            present = ~np.isnan(rows)
            assert got["n"].tolist() == present.sum(axis=0).tolist()
            assert got["na"].tolist() == (~present).sum(axis=0).tolist()
            for j, f in enumerate(x.feature_ids):
                values = rows[present[:, j], j]
                assert got.loc[f, "min"] == values.min() and got.loc[f, "max"] == values.max()
                assert got.loc[f, "mean"] == pytest.approx(values.mean(), rel=1e-13, abs=1e-300)
                assert got.loc[f, "sd"] == pytest.approx(values.std(ddof=1), rel=1e-12, abs=1e-300)
                expected = np.quantile(values, [0.01, 0.25, 0.5, 0.75, 0.99])
                assert got.loc[f, ["q01", "q25", "median", "q75", "q99"]].tolist() == expected.tolist()


def test_to_anndata_x_computes_bit_equal_to_the_concatenated_measurements(client, slides, cohort):
    adata = cohort.to_anndata()
    objects = [cs.read(p) for p in slides]
    expected = np.concatenate([x.measurements for x in objects])
    assert adata.X.chunks[0] == (150, 40, 40, 40, 30, 64, 64, 22)
    computed = adata.X.compute()
    assert computed.view(np.uint64).tolist() == expected.view(np.uint64).tolist()  # NaN payloads and -0.0 too
    assert adata.obs["cell_id"].tolist() == [c for x in objects for c in x.cells["cell_id"]]
    assert adata.obs["directory"].tolist() == [str(p) for p, x in zip(slides, objects, strict=True)
                                               for _ in range(x.n_cells)]
    assert adata.var_names.tolist() == objects[0].feature_ids
    assert adata.obs_names.is_unique


def test_write_dataset_reads_back_with_pyarrow_dataset_and_open_cohort(client, slides, cohort, tmp_path):
    out = cohort.write_dataset(tmp_path / "dataset")
    objects = [cs.read(p) for p in slides]
    cells = pd.concat([x.cells for x in objects], ignore_index=True)
    values = np.concatenate([x.measurements for x in objects])
    partitioning = ds.partitioning(pa.schema([("sample_id", pa.string())]), flavor="hive")
    table = ds.dataset(out / "cells", format="parquet", partitioning=partitioning).to_table()
    assert table.num_rows == 450
    back = table.to_pandas().set_index(["image_id", "cell_id"])
    keys = list(zip(cells["image_id"], cells["cell_id"], strict=True))
    back = back.loc[keys]
    assert back["sample_id"].tolist() == cells["sample_id"].tolist()
    stored = back[objects[0].feature_ids].to_numpy(dtype=np.float64, na_value=np.nan)
    assert stored.view(np.uint64).tolist() == values.view(np.uint64).tolist()
    folders = sorted(p.name for p in (out / "cells").iterdir())
    assert folders == sorted(f"sample_id={s}" for s in cells["sample_id"].unique())
    for folder in folders:  # each file's rows hold its folder's sample
        sample = folder.split("=", 1)[1]
        for file in (out / "cells" / folder).iterdir():
            assert "sample_id" not in pq.read_schema(file).names
            ids = set(pq.read_table(file, columns=["image_id"]).column(0).to_pylist())
            assert ids <= set(cells.loc[cells["sample_id"] == sample, "image_id"])
    manifest = (out / "MANIFEST.sha256").read_text()
    assert (out / "DONE").read_text().strip() == hashlib.sha256(manifest.encode()).hexdigest()
    listed = dict(reversed(line.split("  ", 1)) for line in manifest.splitlines())
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert set(listed) == on_disk - {"MANIFEST.sha256", "DONE"} and len(listed) == len(manifest.splitlines())
    for name, digest in listed.items():  # the digests hashed on the workers while writing, read back here
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    reopened = cs.open_cohort(out)
    assert reopened.directories == cohort.directories and reopened.n_cells == 450
    pd.testing.assert_frame_equal(reopened.dictionary, cohort.dictionary)
    pd.testing.assert_frame_equal(reopened.images, cohort.images)
    assert reopened.validate().ok
    pd.testing.assert_frame_equal(reopened.summary(), cohort.summary())
    again = reopened.to_anndata()
    order = again.obs_names.get_indexer(cohort.to_anndata().obs_names)
    assert again.X.compute()[order].view(np.uint64).tolist() == values.view(np.uint64).tolist()


def test_one_tampered_directory_is_reported_by_name_while_the_others_pass(client, slides, tmp_path):
    copies = [shutil.copytree(p, tmp_path / p.name) for p in slides]
    opened = cs.open_cohort(copies)
    data = copies[1] / "cells.parquet"
    raw = bytearray(data.read_bytes())
    raw[200] ^= 0xFF  # one flipped byte inside the data, same size
    data.write_bytes(bytes(raw))
    report = opened.validate()
    assert not report.ok
    assert [(f.directory, f.check) for f in report.failures] == [(str(copies[1]), "ChangedSinceRead")]
    assert report.directory(copies[0]).ok and report.directory(copies[2]).ok
    with pytest.raises(CohortError, match="slide02"):
        report.directory(copies[1])
    with pytest.raises(CohortError, match="slide02") as err:
        opened.summary()
    assert set(err.value.result["directory"]) == {str(copies[0]), str(copies[2])}
    # opened after the change: the manifest check (hash) names the file
    report = cs.open_cohort(copies).validate()
    assert [(f.directory, f.check) for f in report.failures] == [(str(copies[1]), "ChecksumMismatch")]
    assert "cells.parquet" in report.failures[0].message
    with pytest.raises(CohortError, match="nothing was written"):
        cs.open_cohort(copies).write_dataset(tmp_path / "never")
    assert not (tmp_path / "never").exists() and not list(tmp_path.glob(".never*"))


def test_a_directory_rewritten_during_the_operation_is_reported_not_mixed(client, slides, tmp_path):
    copies = [shutil.copytree(p, tmp_path / p.name) for p in slides[:2]]
    opened = cs.open_cohort(copies)
    cs.write(_slide(7, "slide02"), copies[1], overwrite=True)  # a complete, valid, different directory
    report = opened.validate()
    assert report.directory(copies[0]).ok
    assert [f.directory for f in report.failures] == [str(copies[1])]
    assert report.failures[0].check in ("ChangedSinceRead", "ChecksumMismatch")
    with pytest.raises(CohortError, match="slide02"):
        opened.map(lambda x: x.n_cells)


def test_strict_intersection_and_union_on_different_dictionaries(client, tmp_path):
    small = write_slide(_slide(1, "a"), tmp_path / "a", None)
    big = write_slide(_slide(2, "b", n_features=23), tmp_path / "b", 50)
    with pytest.raises(CohortError, match=r"(?s)b: has extra 'cell:M005:mean'.*intersection"):
        cs.open_cohort([small, big])
    x_small, x_big = cs.read(small), cs.read(big)
    inter = cs.open_cohort([small, big], features="intersection")
    assert inter.feature_ids == x_small.feature_ids
    X = inter.to_anndata().X.compute()
    positions = [x_big.feature_ids.index(f) for f in x_small.feature_ids]
    expected = np.concatenate([x_small.measurements, x_big.measurements[:, positions]])
    assert X.view(np.uint64).tolist() == expected.view(np.uint64).tolist()
    union = cs.open_cohort([small, big], features="union")
    extra = [f for f in x_big.feature_ids if f not in x_small.feature_ids]
    assert union.feature_ids == x_small.feature_ids + extra and len(extra) == 4
    assert union.provenance["missing_features"] == {str(small): extra}
    X = union.to_anndata().X.compute()
    assert np.isnan(X[:150, -4:]).all()
    assert X[150:].view(np.uint64).tolist() == x_big.measurements[:, [x_big.feature_ids.index(f) for f in
                                                                      union.feature_ids]].view(np.uint64).tolist()
    summary = union.summary().set_index(["image_id", "feature_id"])
    assert (summary.loc[("a_img1", extra[0]), ["n", "na"]].tolist() ==
            [0, int((x_small.cells["image_id"] == "a_img1").sum())])
    assert union.validate().ok


def test_map_runs_on_workers_in_order_and_names_the_failing_directory(client, slides, cohort):
    assert cohort.map(lambda x: (x.n_cells, x.images["image_id"].tolist())) == \
           [(150, [f"{p.name}_img1", f"{p.name}_img2"]) for p in slides]

    def picky(x):
        if x.images["image_id"][0].startswith("slide02"):
            raise ValueError("no slide02 please")
        return x.n_cells

    with pytest.raises(CohortError, match="slide02.*ValueError: no slide02 please") as err:
        cohort.map(picky)
    assert err.value.result == [150, None, 150]


def test_select_keeps_the_rows_of_the_chosen_images(client, slides, cohort):
    part = cohort.select(images=["slide02_img2", "slide03_img1"])
    objects = {p.name: cs.read(p) for p in slides}
    masks = {n: (x.cells["image_id"] == f"{n}_img{2 if n == 'slide02' else 1}").to_numpy()
             for n, x in objects.items() if n != "slide01"}
    assert len(part) == 2 and part.n_cells == sum(int(m.sum()) for m in masks.values())
    expected = np.concatenate([objects[n].measurements[m] for n, m in masks.items()])
    assert part.to_anndata().X.compute().view(np.uint64).tolist() == expected.view(np.uint64).tolist()
    assert part.validate().ok
    by_sample = cohort.select(samples=["slide01_s1"])
    assert by_sample.images["image_id"].tolist() == ["slide01_img1"]
    with pytest.raises(CohortError, match="unknown image_id"):
        cohort.select(images=["nope"])


def test_cli_runs_on_the_scheduler_address_it_is_given(client, slides, tmp_path, capsys):
    from cellspec_sc.cli.main import main

    address = client.scheduler.address
    assert main(["cohort", "validate", *map(str, slides), "--scheduler", address]) == 0
    assert "cohort validation: OK (3 directories, 0 failures)" in capsys.readouterr().out
    assert main(["cohort", "dataset", *map(str, slides), str(tmp_path / "ds"), "--scheduler", address]) == 0
    assert cs.open_cohort(tmp_path / "ds").n_cells == 450


def test_run_on_the_cluster_hands_each_result_to_on_result_failures_included(client):
    import dask

    from cellspec_sc.cohort._run import Failure, run

    seen = []
    tasks = [dask.delayed(len, pure=False)("ab"), dask.delayed(int, pure=False)("x"), dask.delayed(len)("abcd")]
    results = run(tasks, ["a", "b", "c"], "x", client=client, progress_bar=False,
                  on_result=lambda i, result: seen.append((i, result)))
    assert sorted(seen, key=lambda pair: pair[0]) == list(enumerate(results))
    assert results[0] == 2 and results[2] == 4
    assert isinstance(results[1], Failure) and results[1].directory == "b" and results[1].check == "ValueError"
