"""``cellspec info``, ``validate`` and ``convert`` on URLs, against moto's S3 server on 127.0.0.1 (``s3``)."""

from __future__ import annotations

import json
import re

import cellspec_sc as cs
from cellspec_sc.cli.main import main


def options_arg(s3) -> list[str]:
    return ["--storage-options", json.dumps(s3.options)]


def test_convert_to_a_bucket_then_validate_and_info_from_it(s3, tmp_path, capsys):
    x = cs.example(3, n_cells=500, adjacency=True)
    local = cs.write(x, tmp_path / "run1")
    url = f"s3://{s3.bucket()}/run1"
    assert main(["convert", str(local), url, *options_arg(s3)]) == 0
    assert f"wrote {url} (cellspec directory): 500 cells" in capsys.readouterr().out
    assert cs.read(url, storage_options=s3.options).equals(x)
    assert main(["validate", url, *options_arg(s3)]) == 0
    assert "cellspec validation: OK" in capsys.readouterr().out
    assert main(["info", url, *options_arg(s3)]) == 0
    remote = capsys.readouterr().out
    assert main(["info", str(local)]) == 0
    assert remote == capsys.readouterr().out  # the same summary as from disk
    back = tmp_path / "back"
    assert main(["convert", url, str(back), *options_arg(s3)]) == 0
    assert cs.read(back).equals(x)


def test_verbose_info_reports_the_bytes_it_fetched_a_small_share_of_the_directory(s3, capsys):
    url = f"s3://{s3.bucket()}/big"
    cs.write(cs.example(1, n_cells=20_000), url, storage_options=s3.options)
    bucket, key = url.removeprefix("s3://").split("/", 1)
    listed = s3.client().list_objects_v2(Bucket=bucket, Prefix=key + "/")["Contents"]
    sizes = {o["Key"].rsplit("/", 1)[1]: o["Size"] for o in listed}
    total = sum(sizes.values())
    assert main(["-v", "info", url, *options_arg(s3)]) == 0
    line = next(v for v in capsys.readouterr().out.splitlines() if v.startswith("transferred"))
    fetched = int(re.search(r"transferred ([\d,]+) bytes", line).group(1).replace(",", ""))
    # DONE, the manifest and cellspec.json whole, and no more than the end of the Parquet file
    small = sizes["DONE"] + sizes["MANIFEST.sha256"] + sizes["cellspec.json"]
    assert small < fetched < small + sizes["cells.parquet"] // 20
    assert f"of the directory's {total:,} bytes" in line


def test_convert_refuses_an_existing_bucket_target_before_reading_the_source(s3, capsys):
    url = f"s3://{s3.bucket()}/run1"
    cs.write(cs.example(), url, storage_options=s3.options)
    assert main(["convert", "does-not-exist", url, *options_arg(s3)]) == 2
    assert "already holds a cellspec directory" in capsys.readouterr().err


def test_a_store_failure_is_one_line_naming_the_url(s3, capsys):
    assert main(["info", "s3://no-such-bucket-at-all/run1", *options_arg(s3)]) == 2
    err = capsys.readouterr().err
    assert "s3://no-such-bucket-at-all/run1" in err and "the bucket does not exist" in err
    assert "Traceback" not in err


def test_bad_storage_options_are_a_usage_error(capsys):
    assert main(["info", "s3://b/run1", "--storage-options", "[1]"]) == 2
    assert "must be a JSON object" in capsys.readouterr().err


def test_cohort_commands_on_a_bucket_prefix(s3, tmp_path, capsys):
    prefix = f"s3://{s3.bucket()}/slides"
    objects = [cs.example(k, n_cells=40) for k in (1, 2)]
    for k, x in enumerate(objects, start=1):
        # image ids must be unique across a cohort
        images = x.images.assign(image_id=x.images["image_id"] + f"-s{k}")
        x = x.replace(images=images, channels=x.channels.assign(image_id=x.channels["image_id"] + f"-s{k}"),
                      cells=x.cells.assign(image_id=x.cells["image_id"].astype(str) + f"-s{k}"))
        cs.write(x, f"{prefix}/slide{k}", storage_options=s3.options)
    assert main(["cohort", "validate", f"{prefix}/*", "--scheduler", "threads", *options_arg(s3)]) == 0
    assert "cohort validation: OK (2 directories" in capsys.readouterr().out
    out = tmp_path / "summary.csv"
    assert main(["cohort", "summary", prefix, "-o", str(out), "--scheduler", "threads", *options_arg(s3)]) == 0
    assert f"{prefix}/slide1" in out.read_text()
