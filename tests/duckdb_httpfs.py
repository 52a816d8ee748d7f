"""DuckDB's own S3 support for the tests: its ``httpfs`` extension, which DuckDB downloads from its own extension
repository on first use.

No package index here carries ``httpfs`` for the DuckDB the project tests with (2.x); PyPI carries DuckDB 1.5.5 and
its ``httpfs`` build (``duckdb-extension-httpfs``, the extension binary for exactly that version). ``make test``
installs the pair into a folder of their own (``python tests/duckdb_httpfs.py FOLDER``), apart from the test
environment's DuckDB, and :func:`sql_over_s3` runs queries in a separate Python with that folder first on its
path: DuckDB 1.5.5 reading ``s3://`` URLs through ``httpfs``, pointed at a given endpoint.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGES = ("duckdb==1.5.5", "duckdb-extension-httpfs==1.5.5")
COMPLETE = ".complete"

QUERIES = """
import json, pathlib, sys
import duckdb, duckdb_extension_httpfs
job = json.loads(sys.stdin.read())
extension = next(pathlib.Path(duckdb_extension_httpfs.__file__).parent.rglob("httpfs.duckdb_extension"))
con = duckdb.connect()
con.load_extension(str(extension))
def text(value):
    return "'" + value.replace("'", "''") + "'"
con.execute(f"CREATE SECRET (TYPE s3, KEY_ID {text(job['key'])}, SECRET {text(job['secret'])}, "
            f"ENDPOINT {text(job['endpoint'])}, URL_STYLE 'path', USE_SSL false, REGION {text(job['region'])})")
print(json.dumps({"version": duckdb.__version__,
                  "results": [[list(row) for row in con.sql(query).fetchall()] for query in job["queries"]]}))
"""


def default_folder() -> Path:
    """Where ``make test`` installs the pair: inside the environment running the tests."""
    return Path(sys.prefix) / "duckdb-httpfs"


def install(folder: Path) -> Path:
    """``pip install --target folder`` of :data:`PACKAGES` (no dependencies: DuckDB needs none)."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--upgrade", "--target",
                    str(folder), *PACKAGES], check=True, timeout=900)
    (folder / COMPLETE).touch()
    return folder


def sql_over_s3(queries: list[str], *, endpoint: str, key: str, secret: str, region: str = "us-east-1",
                folder: Path | None = None) -> list[list[list]]:
    """The rows of each query, run by DuckDB 1.5.5 with ``httpfs`` against the S3 API at ``endpoint``
    (``http://host:port``); a test failure saying how to install it when it is not there."""
    folder = folder or default_folder()
    if not (folder / COMPLETE).exists():
        pytest.fail(f"DuckDB's httpfs is not in {folder}: run `make test` (or "
                    f"`{Path(sys.executable).name} tests/duckdb_httpfs.py {folder}`) once to install it")
    job = {"queries": queries, "endpoint": endpoint.removeprefix("http://"), "key": key, "secret": secret,
           "region": region}
    env = {**os.environ, "PYTHONPATH": str(folder)}
    done = subprocess.run([sys.executable, "-c", QUERIES], input=json.dumps(job), capture_output=True, text=True,
                          env=env, timeout=300)
    if done.returncode != 0:
        pytest.fail(f"DuckDB with httpfs failed:\n{done.stderr[-3000:]}")
    answer = json.loads(done.stdout)
    assert answer["version"] == PACKAGES[0].split("==")[1], answer["version"]  # not the environment's DuckDB
    return answer["results"]


if __name__ == "__main__":
    print(install(Path(sys.argv[1]) if len(sys.argv) > 1 else default_folder()))
