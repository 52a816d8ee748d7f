"""Google Cloud Storage and Azure Blob Storage on 127.0.0.1 for the tests, beside moto's S3 (tests/s3server.py).

- :class:`LocalGCS`: gcp-storage-emulator (pure Python, the test extra), started in this process on a free
  port; gcsfs reaches it with ``endpoint_url`` and ``token="anon"``. It ignores ``ifGenerationMatch``, so the
  conditional create that makes one of two writers lose on real GCS is not tested against it.
- :class:`LocalAzure`: Azurite (npm, pinned in .ci/azurite/package.json and installed there by ``npm ci``),
  started as a child process on a free port with its data in a temporary folder; adlfs reaches it with the
  emulator's well-known account in a connection string.

Each gives ``options`` (the ``storage_options`` of its fsspec implementation), ``bucket()`` (a new, empty
bucket or container: its name), and ``keys``/``put``/``get``/``delete`` through the store's own Python client,
so that what a test looks at or changes does not go through the code under test.
"""

from __future__ import annotations

import ctypes
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
AZURITE = ROOT / ".ci" / "azurite" / "node_modules" / "azurite" / "dist" / "src" / "blob" / "main.js"
AZURITE_INSTALL = "npm ci --prefix .ci/azurite"
# Azurite's documented development account (the same in every Azurite installation; not a secret)
AZURE_ACCOUNT = "devstoreaccount1"
AZURE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
START_SECONDS = 60


def new_name(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


@dataclass
class LocalGCS:
    server: Any = None
    endpoint: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    scheme: str = "gs"

    @classmethod
    def start(cls) -> LocalGCS:
        from gcp_storage_emulator.server import create_server

        server = create_server("127.0.0.1", 0, in_memory=True)
        server.start()
        host, port = server._api._httpd.server_address
        endpoint = f"http://{host}:{port}"
        return cls(server, endpoint, {"endpoint_url": endpoint, "token": "anon", "project": "cellspec-tests"})

    def stop(self) -> None:
        self.server.stop()

    def client(self) -> Any:
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        return storage.Client(project="cellspec-tests", credentials=AnonymousCredentials(),
                              client_options={"api_endpoint": self.endpoint})

    def bucket(self, prefix: str = "cellspec") -> str:
        name = new_name(prefix)
        self.client().create_bucket(name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        return sorted(b.name for b in self.client().list_blobs(bucket, prefix=prefix))

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self.client().bucket(bucket).blob(key).upload_from_string(data)

    def get(self, bucket: str, key: str) -> bytes:
        return self.client().bucket(bucket).blob(key).download_as_bytes()

    def delete(self, bucket: str, key: str) -> None:
        self.client().bucket(bucket).blob(key).delete()


@dataclass
class LocalAzure:
    process: Any = None
    folder: Path | None = None
    endpoint: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    scheme: str = "az"

    @classmethod
    def installed(cls) -> bool:
        return AZURITE.is_file() and shutil.which("node") is not None

    @classmethod
    def start(cls) -> LocalAzure:
        folder = Path(tempfile.mkdtemp(prefix="azurite-"))
        # --skipApiVersionCheck: the Azure SDK may speak a newer API version than this Azurite knows;
        # --disableTelemetry: no request leaves the machine
        process = subprocess.Popen(
            ["node", str(AZURITE), "--blobHost", "127.0.0.1", "--blobPort", "0", "--location", str(folder),
             "--silent", "--disableTelemetry", "--skipApiVersionCheck", "--loose"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        try:
            endpoint = f"{_listening_address(process)}/{AZURE_ACCOUNT}"
        except BaseException:
            process.kill()
            process.wait(10)
            shutil.rmtree(folder, ignore_errors=True)
            raise
        connection = (f"DefaultEndpointsProtocol=http;AccountName={AZURE_ACCOUNT};AccountKey={AZURE_KEY};"
                      f"BlobEndpoint={endpoint};")
        return cls(process, folder, endpoint, {"connection_string": connection})

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(10)
        shutil.rmtree(self.folder, ignore_errors=True)

    def client(self) -> Any:
        from azure.storage.blob import BlobServiceClient

        return BlobServiceClient.from_connection_string(self.options["connection_string"])

    def bucket(self, prefix: str = "cellspec") -> str:
        name = new_name(prefix)
        self.client().create_container(name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        return sorted(b.name for b in self.client().get_container_client(bucket).list_blobs(name_starts_with=prefix))

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self.client().get_blob_client(bucket, key).upload_blob(data, overwrite=True)

    def get(self, bucket: str, key: str) -> bytes:
        return self.client().get_blob_client(bucket, key).download_blob().readall()

    def delete(self, bucket: str, key: str) -> None:
        self.client().get_blob_client(bucket, key).delete_blob()


def _listening_address(process: subprocess.Popen) -> str:
    """``http://127.0.0.1:PORT`` from Azurite's start-up lines, within START_SECONDS."""
    found: list[str] = []

    def watch() -> None:
        for line in process.stdout:
            if "successfully listens on" in line:
                found.append(line.rsplit(" ", 1)[-1].strip())
                break
        else:
            found.append("")
        threading.Thread(target=process.stdout.read, daemon=True).start()  # keep draining what it prints

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    watcher.join(START_SECONDS)
    if not found or not found[0]:
        raise RuntimeError(f"Azurite did not start within {START_SECONDS} s")
    return found[0]


def _die_with_parent() -> None:
    """In the Azurite child, before it starts: the kernel ends it when the test process ends, even killed."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


def assert_one_of_two_writers_wins(url: str, options: dict[str, Any]) -> None:
    """Two threads write different objects to ``url`` at once with ``overwrite=False``: exactly one wins, the other
    gets ``TargetExists``, and ``url`` reads back as the winner's object (on any store)."""
    import cellspec_sc as cs
    from cellspec_sc.io import TargetExists

    objects = [cs.example(seed) for seed in (1, 2)]
    outcomes: list[object] = [None, None]
    start = threading.Barrier(2)

    def write(k: int) -> None:
        start.wait()
        try:
            outcomes[k] = cs.write(objects[k], url, storage_options=options)
        except TargetExists as err:
            outcomes[k] = err

    threads = [threading.Thread(target=write, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    winners = [k for k in (0, 1) if outcomes[k] == url]
    assert len(winners) == 1, outcomes
    assert isinstance(outcomes[1 - winners[0]], TargetExists)
    assert cs.read(url, storage_options=options).equals(objects[winners[0]])


# a writer process that stops after its first uploaded file until killed: argv = URL, storage options as JSON
KILLED_WRITER = """
import json, sys
import cellspec_sc as cs
import cellspec_sc.io._remote as remote
url, options = sys.argv[1], json.loads(sys.argv[2])
upload = remote._upload
def slow_upload(location, source, name):
    upload(location, source, name)
    print("uploaded", name, flush=True)
    sys.stdin.readline()  # the test kills this process here, after the first file
remote._upload = slow_upload
cs.write(cs.example(4, n_cells=3000), url, storage_options=options)
"""


def upload_example_cohort(root: Path, prefix: str, options: dict[str, Any]) -> tuple[Path, str]:
    """Three simulated directories of 120 cells in ``root`` and the same three under ``prefix`` on a store."""
    import cellspec_sc as cs
    from cellspec_sc.cohort.example import write_example_cohort

    write_example_cohort(root, 3, n_cells=120)
    for directory in sorted(root.iterdir()):
        cs.write(cs.read(directory), f"{prefix}/{directory.name}", storage_options=options)
    return root, prefix


def without_directory(frame: Any) -> Any:
    """A summary frame without its ``directory`` column (a local and a remote cohort name them differently)."""
    return frame.drop(columns=["directory"]).reset_index(drop=True)
