"""Spark's S3 support for the tests: the ``hadoop-aws`` jar and the AWS SDK bundle it calls.

Spark reads ``s3a://`` URLs through these two jars, which Spark does not ship and usually fetches from Maven
(``spark.jars.packages``). The tests take them from the PyPI source distribution of ``sagemaker_pyspark``, which
carries Apache's ``hadoop-aws-3.3.1.jar`` and AWS's ``aws-java-sdk-bundle-1.11.901.jar``: each is checked against
its SHA-256 below before it is used. ``make test`` runs this module once per environment
(``python tests/s3a_jars.py FOLDER``); :func:`s3a_jars` hands the jars to a test, or fails it saying how to get them.

hadoop-aws 3.3.1 is older than the Hadoop client inside pyspark 4: :data:`OLD_CLIENT_SETTINGS` gives it the
settings it reads as plain numbers (the newer client writes its defaults as ``60s``) and a credential provider of
its own SDK.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

SOURCE = "sagemaker_pyspark==1.4.5"
SOURCE_SHA256 = "05ca2d5081d7138ce29a8fb0a9cba077f28c825288ed07aed46a82e63c0bf1fb"
JARS = {
    "hadoop-aws-3.3.1.jar": "6be50ad8a8b445d2802381b085b2a3ede5c29d353450a6a21f16b2fefa962b6e",
    "aws-java-sdk-bundle-1.11.901.jar": "b87175b32a16544cc1b37cf40390eb375833e62bed67f8ce6cde4b7ad6429ead",
}
COMPLETE = ".complete"
OLD_CLIENT_SETTINGS = {
    "spark.hadoop.fs.s3a.threads.keepalivetime": "60",
    "spark.hadoop.fs.s3a.connection.timeout": "200000",
    "spark.hadoop.fs.s3a.connection.establish.timeout": "30000",
    "spark.hadoop.fs.s3a.connection.ttl": "300000",
    "spark.hadoop.fs.s3a.multipart.purge.age": "86400",
    "spark.hadoop.fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
}


def default_folder() -> Path:
    """Where ``make test`` puts the jars: inside the environment running the tests."""
    return Path(sys.prefix) / "s3a-jars"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(folder: Path) -> list[Path]:
    """Download :data:`SOURCE` with pip, take the two jars out, check them and move them into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                        "--dest", scratch, SOURCE], check=True, timeout=900)
        (archive,) = Path(scratch).glob("*.tar.gz")
        if _sha256(archive) != SOURCE_SHA256:
            raise SystemExit(f"{archive.name} does not have the SHA-256 this module expects")
        with tarfile.open(archive) as tar:
            for member in tar:
                name = Path(member.name).name
                if name in JARS and member.isfile():
                    tar.extract(member, scratch, filter="data")
                    extracted = Path(scratch) / member.name
                    if _sha256(extracted) != JARS[name]:
                        raise SystemExit(f"{name} in {archive.name} does not have the expected SHA-256")
                    extracted.replace(folder / name)
    missing = [name for name in JARS if not (folder / name).is_file()]
    if missing:
        raise SystemExit(f"{SOURCE} no longer holds {', '.join(missing)}")
    (folder / COMPLETE).touch()
    return [folder / name for name in JARS]


def s3a_jars(folder: Path | None = None) -> list[Path]:
    """The two jars for ``spark.jars``; a test failure saying how to fetch them when they are not there."""
    folder = folder or default_folder()
    if not (folder / COMPLETE).exists():
        pytest.fail(f"Spark's S3 jars are not in {folder}: run `make test` (or "
                    f"`{Path(sys.executable).name} tests/s3a_jars.py {folder}`) once to fetch them")
    return [folder / name for name in JARS]


if __name__ == "__main__":
    for jar in fetch(Path(sys.argv[1]) if len(sys.argv) > 1 else default_folder()):
        print(jar)
