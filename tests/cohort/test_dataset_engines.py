"""write_dataset's output read by DuckDB, Polars and Spark, with the reading options docs/cohorts.md gives, from a
local folder and from a bucket (moto's S3 server on 127.0.0.1), each engine through its own S3 support: Polars'
object store, Spark's ``s3a://`` (tests/s3a_jars.py) and DuckDB's ``httpfs``, which PyPI carries for DuckDB 1.5.5
only (tests/duckdb_httpfs.py); the test environment's DuckDB 2 reads the bucket through fsspec, as docs/cohorts.md
shows.

Every value checked comes from the engine (its row counts, sums, NA counts, cells); every expected value from
``cs.read`` of the source directories, never from the dataset under test. Sample ids include ``"001"`` (an engine
that infers partition types reads it as the integer 1), one spanning two directories, and a non-ASCII id with
``/``, ``=``, ``%`` and a space; one feature has NA; two markers differ only in case (``CD3e``, ``CD3E``), which
DuckDB and Spark compare case-insensitively. Spark runs one local JVM for the module (tests/spark.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cellspec_sc as cs
from cellspec_sc.cohort.example import prefixed, with_samples
from duckdb_httpfs import sql_over_s3
from s3a_jars import OLD_CLIENT_SETTINGS, s3a_jars
from spark import bounded, local_spark

SAMPLES = {"slide01": ["001", "Zürich ä/b=c%"], "slide02": ["010", "001"]}
MARKERS = ("DAPI", "CD3e", "CD3E", "FOXP3")
FEATURE = "cell:CD3e:mean"  # has NA
TWIN = "cell:CD3E:mean"  # FEATURE's id but for case


@dataclass(frozen=True)
class Read:
    """What an engine read from a dataset's cells folder."""

    columns: list[str]
    per_sample: dict[str, tuple[int, float, int, float]]  # sample_id: (rows, sum and NA of FEATURE, sum of TWIN)
    cells: dict[tuple[str, str], tuple[str, float | None]]  # (image_id, cell_id): (sample_id, FEATURE)
    n_rows: int


def _slide(seed: int, name: str) -> cs.CellSpec:
    x = with_samples(prefixed(cs.example(seed, n_cells=60, n_images=2, markers=MARKERS), f"{name}_"), SAMPLES[name])
    m = x.measurements.copy()
    m[seed::7, x.feature_ids.index(FEATURE)] = np.nan
    return x.replace(measurements=m)


@pytest.fixture(scope="module")
def slides(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("engines")
    return [cs.write(_slide(i, name), root / "slides" / name) for i, name in enumerate(SAMPLES, 1)]


@pytest.fixture(scope="module")
def sources(slides) -> tuple[pd.DataFrame, list[str]]:
    """The cells of every source with FEATURE's and TWIN's values (NaN for NA), and the feature ids: by cs.read."""
    objects = [cs.read(p) for p in slides]
    assert all(x.feature_ids == objects[0].feature_ids for x in objects)
    cells = pd.concat([x.cells.assign(value=x.measurements[:, x.feature_ids.index(FEATURE)],
                                      twin=x.measurements[:, x.feature_ids.index(TWIN)]) for x in objects],
                      ignore_index=True)
    return cells, objects[0].feature_ids


@pytest.fixture(scope="module")
def datasets(slides) -> dict[str, Path]:
    """The whole cohort, and the samples that look like numbers only (``001``, ``010``)."""
    c = cs.open_cohort(slides)
    root = slides[0].parent.parent
    return {"all": c.write_dataset(root / "dataset", partition_by=("sample_id",), progress=False) / "cells",
            "numbered": c.select(samples=["001", "010"]).write_dataset(root / "numbered", progress=False) / "cells"}


@pytest.fixture(scope="module")
def in_bucket(s3, slides) -> str:
    """The whole cohort's dataset written to a bucket by write_dataset; the URL of its cells folder."""
    url = f"s3://{s3.bucket()}/dataset"
    cs.open_cohort(slides).write_dataset(url, partition_by=("sample_id",), progress=False,
                                         storage_options=s3.options)
    return f"{url}/cells"


def check(read: Read, cells: pd.DataFrame, feature_columns: list[str], samples: set[str]) -> None:
    cells = cells[cells["sample_id"].isin(samples)]
    assert read.n_rows == len(cells)
    assert [c for c in read.columns if c not in cells.columns] == feature_columns
    assert read.columns[-1] == "sample_id" and set(cells.columns) - {"value", "twin"} <= set(read.columns)
    assert set(read.per_sample) == samples  # "001" stays the text "001"
    for sample, rows in cells.groupby("sample_id"):
        n, total, na, twin = read.per_sample[sample]
        assert (n, na) == (len(rows), int(rows["value"].isna().sum())), sample
        assert math.isclose(total, np.nansum(rows["value"]), rel_tol=1e-12), sample
        assert math.isclose(twin, rows["twin"].sum(), rel_tol=1e-12), sample
    assert len(read.cells) == read.n_rows  # (image_id, cell_id) unique: no file read twice
    for row in cells.itertuples():
        sample, value = read.cells[(row.image_id, row.cell_id)]
        assert sample == row.sample_id
        assert value is None if np.isnan(row.value) else value == row.value


def test_the_slides_have_what_the_engines_must_get_right(sources):
    cells, feature_ids = sources
    assert TWIN in feature_ids and TWIN.lower() == FEATURE.lower()
    assert not np.isclose(cells["value"].sum(), cells["twin"].sum())
    assert cells["value"].isna().sum() > 10
    assert set(cells.loc[cells["sample_id"] == "001", "image_id"]) == {"slide01_img1", "slide02_img2"}
    assert (cells["sample_id"] == "Zürich ä/b=c%").sum() == 30


# DuckDB ---------------------------------------------------------------------------------------------------------

def duckdb_queries(cells: Path | str) -> list[str]:
    """The column names, the per-sample figures and the cells, in DuckDB's SQL; DuckDB names a column that equals
    an earlier one but for case ``<id>_1`` (docs/cohorts.md)."""
    source = f"read_parquet('{cells}/**/*.parquet', hive_partitioning = true, hive_types = {{'sample_id': VARCHAR}})"
    return [f"DESCRIBE SELECT * FROM {source}",
            f'SELECT sample_id, count(*), sum("{FEATURE}"), count(*) - count("{FEATURE}"), sum("{TWIN}_1") '
            f"FROM {source} GROUP BY sample_id",
            f'SELECT image_id, cell_id, sample_id, "{FEATURE}" FROM {source}']


def duckdb_answers(results: list) -> Read:
    described, per_sample, rows = results
    return _read([name for name, *_ in described], per_sample, rows)


def duckdb_read(cells: Path | str, fs=None) -> Read:
    """The queries run by the test environment's DuckDB; ``fs``: an fsspec file system it reads ``cells`` through."""
    import duckdb

    with duckdb.connect() as con:
        if fs is not None:
            con.register_filesystem(fs)
        return duckdb_answers([con.sql(query).fetchall() for query in duckdb_queries(cells)])


def duckdb_names(feature_ids: list[str]) -> list[str]:
    """The column names DuckDB gives features: ``_1`` after an id equal to an earlier one but for case."""
    seen: set[str] = set()
    names = []
    for f in feature_ids:
        names.append(f"{f}_1" if f.lower() in seen else f)
        seen.add(f.lower())
    return names


def _read(columns, per_sample, rows) -> Read:
    return Read(list(columns), {s: (n, total, na, twin) for s, n, total, na, twin in per_sample},
                {(image, cell): (sample, value) for image, cell, sample, value in rows}, len(rows))


@pytest.mark.parametrize("name", ["all", "numbered"])
def test_duckdb_reads_the_dataset(datasets, sources, name):
    cells, feature_ids = sources
    assert duckdb_names(feature_ids).count(f"{TWIN}_1") == 1
    check(duckdb_read(datasets[name]), cells, duckdb_names(feature_ids), _samples(name))


def test_duckdb_reads_the_dataset_from_the_bucket(s3, in_bucket, sources):
    import fsspec

    cells, feature_ids = sources
    read = duckdb_read(in_bucket, fsspec.filesystem("s3", **s3.options))
    check(read, cells, duckdb_names(feature_ids), _samples("all"))


def test_duckdb_reads_the_dataset_from_the_bucket_through_its_own_httpfs(s3, in_bucket, sources):
    cells, feature_ids = sources
    results = sql_over_s3(duckdb_queries(in_bucket), endpoint=s3.endpoint, key=s3.options["key"],
                          secret=s3.options["secret"])
    check(duckdb_answers(results), cells, duckdb_names(feature_ids), _samples("all"))


def _samples(name: str) -> set[str]:
    return {s for ids in SAMPLES.values() for s in ids} if name == "all" else {"001", "010"}


# Polars ---------------------------------------------------------------------------------------------------------

def polars_read(cells: Path | str, storage_options: dict[str, str] | None = None) -> Read:
    import polars as pl

    frame = pl.scan_parquet(f"{cells}/**/*.parquet", hive_partitioning=True, hive_schema={"sample_id": pl.String},
                            storage_options=storage_options)
    value = pl.col(FEATURE)
    per_sample = frame.group_by("sample_id").agg(pl.len(), value.sum().alias("sum"), value.null_count().alias("na"),
                                                 pl.col(TWIN).sum()).collect().rows()
    rows = frame.select("image_id", "cell_id", "sample_id", FEATURE).collect().rows()
    return _read(frame.collect_schema().names(), per_sample, rows)


@pytest.mark.parametrize("name", ["all", "numbered"])
def test_polars_reads_the_dataset(datasets, sources, name):
    check(polars_read(datasets[name]), *sources, _samples(name))


def test_polars_reads_the_dataset_from_the_bucket_through_its_own_object_store(s3, in_bucket, sources):
    own_words = {"aws_endpoint_url": s3.endpoint, "aws_access_key_id": s3.options["key"],
                 "aws_secret_access_key": s3.options["secret"], "aws_region": "us-east-1", "aws_allow_http": "true"}
    check(polars_read(in_bucket, own_words), *sources, _samples("all"))


# Spark ----------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def spark(s3):
    """One JVM for the module, which also reads the bucket: s3a:// through hadoop-aws, pointed at the S3 server."""
    jars = s3a_jars()
    s3a = {"spark.jars": ",".join(map(str, jars)), "spark.driver.extraClassPath": ":".join(map(str, jars)),
           "spark.hadoop.fs.s3a.endpoint": s3.endpoint,
           "spark.hadoop.fs.s3a.path.style.access": "true",
           "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
           "spark.hadoop.fs.s3a.access.key": s3.options["key"],
           "spark.hadoop.fs.s3a.secret.key": s3.options["secret"],
           "spark.hadoop.fs.s3a.attempts.maximum": "2",
           **OLD_CLIENT_SETTINGS}
    with local_spark("cellspec-engines", own_jvm=True, **s3a) as session:  # a JVM started with the jars
        yield session


def spark_read(spark, cells: Path | str) -> Read:
    from pyspark.sql import functions as F

    frame = bounded(lambda: spark.read.parquet(str(cells)), "listing the dataset")
    value = F.col(f"`{FEATURE}`")
    per_sample = bounded(lambda: frame.groupBy("sample_id").agg(
        F.count("*"), F.sum(value), F.count_if(value.isNull()), F.sum(F.col(f"`{TWIN}`"))).collect(),
        "grouping by sample")
    rows = bounded(lambda: frame.select("image_id", "cell_id", "sample_id", value).collect(), "reading the cells")
    return _read(frame.columns, per_sample, rows)


@pytest.mark.parametrize("name", ["all", "numbered"])
def test_spark_reads_the_dataset(spark, datasets, sources, name):
    check(spark_read(spark, datasets[name]), *sources, _samples(name))


def test_spark_reads_the_dataset_from_the_bucket_through_s3a(spark, in_bucket, sources):
    check(spark_read(spark, "s3a://" + in_bucket.removeprefix("s3://")), *sources, _samples("all"))


def test_open_cohort_reads_the_folders_back_with_every_sample_id(datasets, sources):
    """The same folder names as the engines read: cs.open_cohort of the dataset gives each cell its sample id."""
    cells, _ = sources
    reopened = cs.open_cohort(datasets["all"].parent)
    assert reopened.validate().ok
    obs = reopened.to_anndata().obs
    got = dict(zip(zip(obs["image_id"], obs["cell_id"], strict=True), obs["sample_id"], strict=True))
    assert got == dict(zip(zip(cells["image_id"], cells["cell_id"], strict=True), cells["sample_id"], strict=True))
