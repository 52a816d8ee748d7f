"""A real S3 API on 127.0.0.1 for the tests: moto's server mode, started in this process on a free port.

``LocalS3.start()`` gives the endpoint and the ``storage_options`` that point s3fs at it; each test makes its
own bucket (:meth:`LocalS3.bucket`). :meth:`LocalS3.denying` makes the server check credentials (moto accepts
any otherwise), so a request with keys it does not know gets a real ``InvalidAccessKeyId`` answer.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

KEY, SECRET, REGION = "testing-key", "testing-secret", "us-east-1"


@dataclass
class LocalS3:
    server: Any = None
    endpoint: str = ""
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def start(cls) -> LocalS3:
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        options = {"key": KEY, "secret": SECRET, "client_kwargs": {"endpoint_url": endpoint, "region_name": REGION}}
        return cls(server, endpoint, options)

    def stop(self) -> None:
        self.server.stop()

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                            region_name=REGION)

    def bucket(self, prefix: str = "cellspec") -> str:
        """A new, empty bucket; returns its name."""
        name = f"{prefix}-{secrets.token_hex(4)}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        listed = self.client().list_objects_v2(Bucket=bucket, Prefix=prefix)
        return sorted(o["Key"] for o in listed.get("Contents", []))

    @contextlib.contextmanager
    def denying(self) -> Iterator[None]:
        """Requests are checked against the server's IAM users while the block runs."""
        from moto import settings

        before = settings.INITIAL_NO_AUTH_ACTION_COUNT
        settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
        try:
            yield
        finally:
            settings.INITIAL_NO_AUTH_ACTION_COUNT = before
