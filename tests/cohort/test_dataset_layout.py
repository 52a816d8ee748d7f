"""How write_dataset lays out and publishes its files: hive folders as pyarrow names them (non-ASCII as text),
rows split by partition in first-seen order, every data file on disk (fsync) before DONE. Local threads, no
cluster."""

from __future__ import annotations

import contextlib
import os
import re
import threading
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import cellspec_sc as cs
import cellspec_sc.cohort._dataset as dataset
from cellspec_sc.cohort._dataset import constants_of, partition_groups
from cellspec_sc.cohort._members import verified
from cellspec_sc.cohort.example import write_example_cohort
from cellspec_sc.io._refusals import ChecksumMismatch, ColumnMismatch
from dirhelpers import reseal

VALUES = ["a b", "x/y=z%", None, "Zürich", "a b", "ü", None, "x/y=z%", "a b"]


def test_partition_groups_name_folders_as_pyarrows_hive_writer_non_ascii_as_text_and_keep_row_order(tmp_path):
    table = pa.table({"sample_id": VALUES, "image_id": ["i1", "i2", "i1", "i1", "i1", "i2", "i2", "i2", "i2"],
                      "row": list(range(len(VALUES)))})
    columns = ("sample_id", "image_id")
    ours = list(partition_groups(table, columns))
    ds.write_dataset(table, tmp_path, format="parquet", basename_template="f-{i}.parquet",
                     partitioning=ds.partitioning(pa.schema([(c, pa.string()) for c in columns]), flavor="hive"))
    theirs = {p.parent.relative_to(tmp_path).as_posix(): pq.read_table(p).column("row").to_pylist()
              for p in tmp_path.rglob("*.parquet")}
    named = {folder: rows.column("row").to_pylist() for folder, rows in ours}
    assert {unquote(f): rows for f, rows in named.items()} == {unquote(f): rows for f, rows in theirs.items()}
    assert {f for f in named if f.isascii()} == {f for f in theirs if unquote(f).isascii()}
    # pyarrow writes Z%C3%BCrich, which Spark reads back as ZÃ¼rich (one character per %XX)
    assert [f for f in named if not f.isascii()] == ["sample_id=Zürich/image_id=i1", "sample_id=ü/image_id=i2"]
    keys = list(zip(VALUES, table.column("image_id").to_pylist(), strict=True))
    first_seen = list(dict.fromkeys(keys))
    assert [tuple(v for _, v in constants_of(f"cells/{folder}/f.parquet")) for folder, _ in ours] == first_seen
    assert all(rows.column_names == ["row"] for _, rows in ours)


def test_a_contiguous_partition_is_a_slice_of_the_part_not_a_copy():
    table = pa.table({"sample_id": ["s1"] * 3 + ["s2"] * 2, "v": [1.0, 2.0, 3.0, 4.0, 5.0]})
    (_, first), (_, second) = partition_groups(table, ("sample_id",))
    values = table.column("v").chunk(0).buffers()[1]
    assert first.column("v").chunk(0).buffers()[1].address == values.address
    assert second.column("v").to_pylist() == [4.0, 5.0]
    [(folder, whole)] = partition_groups(table, ())
    assert folder == "" and whole.equals(table)


def test_every_data_file_is_fsynced_before_done_is_written(tmp_path, monkeypatch):
    cohort = cs.open_cohort(write_example_cohort(tmp_path / "slides", 2, n_cells=40))
    synced = []
    fsync = os.fsync

    def recording(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return fsync(fd)

    monkeypatch.setattr(os, "fsync", recording)
    out = cohort.write_dataset(tmp_path / "dataset", client=None, progress=False)
    data = sorted(str(p.resolve()).replace(str(out.resolve()), "") for p in (out / "cells").rglob("*.parquet"))
    assert len(data) == 4  # 2 directories x 2 samples
    done = next(i for i, p in enumerate(synced) if p.endswith("/DONE"))
    before_done = {p.split(".cellspec-staging-", 1)[-1].split("/", 1)[-1] for p in synced[:done]}
    assert {f"dataset{name}" for name in data} <= before_done


def test_parts_store_cells_columns_with_snappy_text_in_dictionaries_and_measured_doubles_uncompressed(tmp_path):
    paths = write_example_cohort(tmp_path / "slides", 2, n_cells=300, n_features=6)
    cohort = cs.open_cohort(paths)
    out = cohort.write_dataset(tmp_path / "dataset", client=None, progress=False)
    files = sorted((out / "cells").rglob("*.parquet"))
    assert len(files) == 4
    features = set(cohort.feature_ids)
    for file in files:
        meta = pq.ParquetFile(file).metadata
        codecs = {meta.schema.column(j).name: meta.row_group(0).column(j).compression for j in range(meta.num_columns)}
        assert {c for c, codec in codecs.items() if codec == "UNCOMPRESSED"} == features
        assert {c for c, codec in codecs.items() if codec == "SNAPPY"} == set(codecs) - features and len(features) == 6
        dictionary = {meta.schema.column(j).name for j in range(meta.num_columns)
                      if "RLE_DICTIONARY" in meta.row_group(0).column(j).encodings}
        assert dictionary == {"cell_id", "image_id", "classification"}  # not the doubles x, y, area
    for i, path in enumerate(paths):  # each directory's files (part-<directory>-<row group>-0) hold its cells
        x = cs.read(path)
        mine = pa.concat_tables(pq.read_table(f) for f in files if f.name.startswith(f"part-{i:05d}-"))
        assert mine.num_rows == x.n_cells == 300
        keys = zip(mine.column("image_id").to_pylist(), mine.column("cell_id").to_pylist(), strict=True)
        row_of = {key: r for r, key in enumerate(keys)}
        rows = [row_of[key] for key in zip(x.cells["image_id"], x.cells["cell_id"], strict=True)]
        assert len(row_of) == 300
        for j, feature in enumerate(x.feature_ids):
            got = mine.column(feature).to_numpy(zero_copy_only=False)[rows]
            assert np.array_equal(got, x.measurements[:, j], equal_nan=True)


def test_one_task_per_directory_each_hashing_its_files_before_writing_any_part(tmp_path, monkeypatch):
    paths = write_example_cohort(tmp_path / "slides", 3, n_cells=50, n_features=4)
    cohort = cs.open_cohort(paths)
    graphs, order = [], []
    run = dataset.run

    def spying(tasks, *args, **kwargs):
        graphs.extend(dict(t.__dask_graph__()) for t in tasks)
        return run(tasks, *args, **kwargs)

    @contextlib.contextmanager
    def verifying(member):
        order.append(("verify", member.index))
        with verified(member):
            yield

    write_part = dataset.write_part

    def writing(member, k, *args):
        order.append(("part", member.index, k))
        return write_part(member, k, *args)

    monkeypatch.setattr(dataset, "run", spying)
    monkeypatch.setattr(dataset, "verified", verifying)
    monkeypatch.setattr(dataset, "write_part", writing)
    out = cohort.write_dataset(tmp_path / "dataset", client=None, progress=False)
    assert [len(g) for g in graphs] == [1, 1, 1]  # one task per directory, nothing to gather between tasks
    for m in cohort.members:
        mine = [step for step in order if step[1] == m.index]
        assert mine == [("verify", m.index)] + [("part", m.index, k) for k in range(len(m.parts))]
    assert cs.open_cohort(out).n_cells == 150

    # a file whose bytes no longer match the manifest (size, time and inode kept): nothing of it is written
    data = paths[1] / "cells.parquet"
    info = data.stat()
    raw = bytearray(data.read_bytes())
    raw[300] ^= 0xFF
    data.write_bytes(bytes(raw))
    os.utime(data, ns=(info.st_atime_ns, info.st_mtime_ns))
    stage = tmp_path / "stage"
    stage.mkdir()
    member = cs.open_cohort(paths).members[1]
    monkeypatch.setattr(dataset, "verified", verified)
    with pytest.raises(ChecksumMismatch, match="cells.parquet"):
        dataset.write_member(member, str(stage), cohort.feature_ids, ("sample_id",))
    assert not any(stage.rglob("*"))


def test_each_directorys_files_are_fsynced_as_its_result_arrives_before_the_end_of_the_run(tmp_path, monkeypatch):
    cohort = cs.open_cohort(write_example_cohort(tmp_path / "slides", 3, n_cells=40))
    events = []
    fsync, document = os.fsync, dataset.cohort_record

    def recording(fd):
        events.append((threading.current_thread().name, os.readlink(f"/proc/self/fd/{fd}")))
        return fsync(fd)

    def documenting(*args, **kwargs):
        events.append(("document", ""))
        return document(*args, **kwargs)

    monkeypatch.setattr(os, "fsync", recording)
    monkeypatch.setattr(dataset, "cohort_record", documenting)
    out = cohort.write_dataset(tmp_path / "dataset", client=None, progress=False)
    names = sorted(str(p.relative_to(out)) for p in (out / "cells").rglob("*.parquet"))
    assert len(names) == 6  # 3 directories x 2 samples
    end = events.index(("document", ""))  # the serial end on the client starts here
    early = [path.split(".cellspec-staging-", 1)[-1].split("/", 1)[-1] for who, path in events[:end]]
    # every part once, in the fsync thread, before the end, then the folders that hold them
    assert sorted(e for e in early if e.endswith(".parquet")) == [f"dataset/{name}" for name in names]
    assert sorted(e for e in early if not e.endswith(".parquet")) == \
        sorted({f"dataset/{name.rsplit('/', 1)[0]}" for name in names})  # 6 sample folders, each once
    assert {who for who, _ in events[:end]} == {"cellspec-fsync_0"}
    late = [path for who, path in events[end:] if path.endswith(".parquet")]
    assert len(set(late)) == 6  # and again with the whole tree at publication (clean by then)


def test_run_hands_each_result_to_on_result_as_it_arrives_failures_included():
    import dask

    from cellspec_sc.cohort._run import Failure, run

    seen = []
    tasks = [dask.delayed(len)("ab"), dask.delayed(int)("not a number"), dask.delayed(len)("abc")]
    results = run(tasks, ["a", "b", "c"], "x", client=None, progress_bar=False,
                  on_result=lambda i, result: seen.append((i, result)))
    assert sorted(seen, key=lambda pair: pair[0]) == list(enumerate(results))
    assert results[0] == 2 and results[2] == 3
    assert isinstance(results[1], Failure) and results[1].directory == "b" and results[1].check == "ValueError"


def test_a_dataset_part_that_is_no_parquet_is_refused_naming_it_when_the_dataset_is_opened(tmp_path):
    # pyarrow's bare OSError escaped from its footer once; the dataset is now checked against its manifest as it
    # opens, so the part is refused by its hash first, by name
    out = cs.open_cohort(write_example_cohort(tmp_path / "slides", 1, n_cells=60)).write_dataset(
        tmp_path / "dataset", client=None, progress=False)
    part = sorted((out / "cells").rglob("*.parquet"))[0]
    part.write_bytes(b"PAR1" + bytes(100) + b"PAR1")
    name = part.relative_to(out).as_posix()
    with pytest.raises(ChecksumMismatch, match=f"dataset: {re.escape(name)}: SHA-256 is "):
        cs.open_cohort(out)


@pytest.mark.parametrize(("change", "refusal"), [
    (lambda t: t.rename_columns(["X" if n == "x" else n for n in t.column_names]),
     "column 'x' listed in column_types is missing from the file"),
    (lambda t: t.set_column(t.num_columns - 1, t.column_names[-1], t.column(t.num_columns - 1).cast(pa.string())),
     "is stored as string, not double")])
def test_a_dataset_part_whose_columns_differ_from_cohort_json_is_refused_when_the_dataset_is_opened(
        tmp_path, change, refusal):
    # a resealed part: pyarrow raised KeyError ('Field "x" does not exist in schema') from the first task reading it
    out = cs.open_cohort(write_example_cohort(tmp_path / "slides", 1, n_cells=60)).write_dataset(
        tmp_path / "dataset", client=None, progress=False)
    part = sorted((out / "cells").rglob("*.parquet"))[0]
    pq.write_table(change(pq.read_table(part, partitioning=None)), part)
    reseal(out)
    with pytest.raises(ColumnMismatch, match=f"dataset: {re.escape(part.relative_to(out).as_posix())}: .*{refusal}"):
        cs.open_cohort(out)
