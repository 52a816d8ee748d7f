"""Where a cellspec directory lives: a local path, or a URL on object storage (``s3://``, ``gs://``, ``az://``).

A :class:`Location` is the one home of "a place to read from or write to": local paths keep the package's
file-system code (atomic renames, fsync), URLs go through fsspec (``s3fs``, ``gcsfs``, ``adlfs``, installed
with the ``cloud`` extra) with ``storage_options`` for endpoints and credentials, else the environment's usual
credential chain. Every request to a store runs through :func:`storage_call`: transient failures (a dropped
connection, a timeout) are retried a bounded number of times with backoff, and what still fails becomes one
:class:`StorageError` subclass naming the URL and the cause, never a library's traceback.

>>> is_url("s3://bucket/run1"), is_url("/data/run1"), is_url("C:/data/run1")
(True, False, False)
>>> Location.of("s3://bucket/cohort/", {"anon": True}).child("run1/DONE")
's3://bucket/cohort/run1/DONE'
>>> print(StorageUnreachable("s3://bucket/run1", "reading DONE", "connection refused"))
s3://bucket/run1: reading DONE: connection refused [the store could not be reached; check the endpoint \
and the network]
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from cellspec_sc.errors import CellspecError, InputError, MissingExtraError

_URL = re.compile(r"^(?P<protocol>[a-zA-Z][a-zA-Z0-9+.-]+)://")
ATTEMPTS = 2  # tries of one operation (each request inside is retried by the store client too)
BACKOFF_SECONDS = 0.25  # the wait before the second try; doubled before each further one
CONNECT_TIMEOUT_SECONDS = 10
READ_TIMEOUT_SECONDS = 60
_EXTRA = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs",
          "abfss": "adlfs"}


class StorageError(CellspecError):
    """A request to object storage failed; ``.url`` is the object or prefix, ``.doing`` what was asked of it
    and ``.cause`` what the store (or the network) answered."""

    hint = "the store refused the request"

    def __init__(self, url: str, doing: str, cause: str):
        self.url, self.doing, self.cause = url, doing, cause
        super().__init__(f"{url}: {doing}: {cause} [{self.hint}]")

    def __reduce__(self):  # picklable (dask workers send errors back)
        return type(self), (self.url, self.doing, self.cause)


class MissingCredentials(StorageError):
    """No credentials were found for the store (storage_options, environment, config files, instance role)."""

    hint = ("no credentials were found; pass them in storage_options= or set the store's usual environment "
            "variables or configuration")


class BucketNotFound(StorageError):
    """The bucket (or container) named by the URL does not exist."""

    hint = "the bucket does not exist; check its name and the endpoint"


class AccessDenied(StorageError):
    """The store refused the request: the credentials were not accepted or lack the permission."""

    hint = "access denied; check the credentials and their permissions on this bucket"


class StorageUnreachable(StorageError):
    """The store could not be reached or did not answer in time, after bounded retries."""

    hint = "the store could not be reached; check the endpoint and the network"


def is_url(path: object) -> bool:
    """Whether ``path`` is a URL fsspec should open (``file://`` and local paths are not)."""
    if not isinstance(path, str):
        return False
    match = _URL.match(path)
    return bool(match) and match["protocol"].lower() != "file"


def _default_options(protocol: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The caller's storage options, with timeouts and bounded retries where the caller set none."""
    merged = dict(options)
    if protocol in ("s3", "s3a"):
        config = dict(merged.get("config_kwargs") or {})
        config.setdefault("connect_timeout", CONNECT_TIMEOUT_SECONDS)
        config.setdefault("read_timeout", READ_TIMEOUT_SECONDS)
        config.setdefault("retries", {"max_attempts": 1})  # s3fs retries itself, with backoff
        merged["config_kwargs"] = config
    elif protocol in ("gs", "gcs"):
        merged.setdefault("timeout", READ_TIMEOUT_SECONDS)
    return merged


def _own_gcs_endpoint(protocol: str, options: Mapping[str, Any]) -> bool:
    """A gs:// URL served by another endpoint than Google's (an emulator, a GCS-compatible server)."""
    return protocol in ("gs", "gcs") and bool(options.get("endpoint_url") or os.environ.get("STORAGE_EMULATOR_HOST"))


def _filesystem(protocol: str, options: Mapping[str, Any]) -> Any:
    import fsspec

    if _own_gcs_endpoint(protocol, options):
        # gcsfs's default class first asks Google's Storage Control API (gRPC) for the bucket's layout,
        # retrying for a minute before every operation: an endpoint of one's own has no such API, so
        # its plain JSON-API class is used
        from gcsfs.core import GCSFileSystem

        return GCSFileSystem(**options)
    return fsspec.filesystem(protocol, **options)


@dataclass(frozen=True)
class Location:
    """A directory (prefix) on object storage and the options to reach it.

    ``url`` has no trailing slash; :meth:`child` names an object below it; :attr:`fs` is the fsspec file
    system (fsspec keeps one instance per protocol and options, so opening the same store again is free).
    """

    url: str
    storage_options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, url: str, storage_options: Mapping[str, Any] | None = None) -> Location:
        if not is_url(url):
            raise InputError(f"{url!r} is not a URL (s3://, gs://, az:// ...)")
        return cls(url.rstrip("/"), dict(storage_options or {}))

    @property
    def protocol(self) -> str:
        match = _URL.match(self.url)
        return match["protocol"].lower() if match else ""

    @property
    def fs(self) -> Any:
        try:
            return _filesystem(self.protocol, _default_options(self.protocol, self.storage_options))
        except ImportError as err:
            package = _EXTRA.get(self.protocol, getattr(err, "name", None) or "fsspec")
            raise MissingExtraError(f"cellspec_sc ({self.protocol}:// URLs)", "cloud", package) from None
        except ValueError as err:
            raise InputError(f"{self.url}: {err}") from None

    @property
    def bucket(self) -> str:
        """The bucket (or container) of the URL."""
        return self.url.split("://", 1)[1].split("/", 1)[0]

    def bucket_missing(self) -> bool:
        """Whether the store says the bucket does not exist (False when it cannot tell)."""
        try:
            return not self.fs.exists(self.bucket)
        except Exception:  # noqa: BLE001 - only the explanation of a refusal depends on it
            return False

    def child(self, name: str) -> str:
        return f"{self.url}/{name}"

    def relative(self, full: str) -> str:
        """The name below this prefix of an object path fsspec lists (without the protocol)."""
        bare = self.fs._strip_protocol(self.url).rstrip("/")
        return full[len(bare) + 1:] if full.startswith(bare + "/") else full


# -- the errors of the store as CellspecErrors ---------------------------------------------------------
_CREDENTIALS = ("NoCredentialsError", "PartialCredentialsError", "DefaultCredentialsError",
                "CredentialRetrievalError", "ClientAuthenticationError")
_DENIED_CODES = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AuthorizationFailure",
                 "AllAccessDisabled", "InvalidToken", "ExpiredToken", "403"}
_NO_BUCKET_CODES = {"NoSuchBucket", "ContainerNotFound"}
_NETWORK = ("EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError", "ConnectionClosedError",
            "ClientConnectorError", "ServerDisconnectedError", "ClientOSError", "ClientPayloadError",
            "ServerTimeoutError", "ResponseStreamingError", "IncompleteReadError", "ProtocolError")


def _chain(err: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    while err is not None and err not in seen and len(seen) < 10:
        seen.append(err)
        err = err.__cause__ or err.__context__
    return seen


def _code(err: BaseException) -> str | None:
    """The store's error code: botocore's ``response["Error"]["Code"]``, the Azure SDK's ``error_code``."""
    response = getattr(err, "response", None)
    if isinstance(response, dict) and response.get("Error", {}).get("Code"):
        return str(response["Error"]["Code"])
    azure = getattr(err, "error_code", None)
    return str(getattr(azure, "value", azure)) if azure else None


def _cause_text(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0][:300]


def classify(err: BaseException) -> type[StorageError] | None:
    """The StorageError subclass for a library's exception, None when it is not a failure of the store
    (a missing object, for instance, which the caller turns into a format refusal)."""
    chain = _chain(err)
    names = {type(e).__name__ for e in chain}
    codes = {c for e in chain if (c := _code(e))}
    if names & set(_CREDENTIALS) or any("Unable to locate credentials" in str(e) for e in chain):
        return MissingCredentials
    if codes & _NO_BUCKET_CODES or any("NoSuchBucket" in str(e) or "bucket does not exist" in str(e).lower()
                                       for e in chain):
        return BucketNotFound
    if codes & _DENIED_CODES or any(isinstance(e, PermissionError) for e in chain):
        return AccessDenied
    if names & set(_NETWORK) or any(isinstance(e, ConnectionError | TimeoutError) for e in chain):
        return StorageUnreachable
    return None


def storage_call[T](url: str, doing: str, call: Callable[[], T], *, attempts: int = ATTEMPTS,
                 backoff: float = BACKOFF_SECONDS) -> T:
    """``call()``, retried on a network failure up to ``attempts`` times in all (waiting ``backoff``
    seconds, then twice as long each time); a failure of the store is raised as its StorageError naming
    ``url`` and ``doing``. Other exceptions (a missing object: FileNotFoundError) pass unchanged."""
    for attempt in range(attempts):
        try:
            return call()
        except StorageError:
            raise
        except Exception as err:  # noqa: BLE001 - classified: store failures become StorageErrors
            kind = classify(err)
            if kind is None:
                raise
            if kind is not StorageUnreachable or attempt == attempts - 1:
                raise kind(url, doing, _cause_text(err)) from None
            time.sleep(backoff * 2 ** attempt)
    raise AssertionError("unreachable")  # pragma: no cover


class Transfer:
    """Bytes fetched from a store by one operation (``cellspec info -v`` reports them)."""

    def __init__(self) -> None:
        self.bytes = 0
        self.requests = 0
        self.total = 0  # the size of what was read from, when the operation knows it

    def add(self, count: int) -> None:
        self.bytes += count
        self.requests += 1


@dataclass(frozen=True)
class FetchedFile:
    """A file of a directory on object storage, its bytes in memory: fetched in one pass, hashed on the way
    (:func:`cellspec_sc.io._remote.fetch_listed`), then decoded by the same readers as a local file."""

    name: str
    data: Any  # a pyarrow Buffer

    @property
    def size(self) -> int:
        return self.data.size

    def open(self) -> Any:
        return pa.BufferReader(self.data)


def info_stamp(info: Mapping[str, Any]) -> tuple[int, str]:
    """(size, ETag or modification time) of an object from fsspec's ``info``: what tells a rewritten object from
    the one listed."""
    return int(info.get("size") or 0), str(info.get("ETag") or info.get("etag") or info.get("mtime") or "")


@dataclass(frozen=True)
class RemoteFile:
    """An object on a store opened for ranged reads (a Parquet footer, one row group): only the bytes read are
    fetched. ``size`` is the size listed when the directory was opened."""

    url: str
    size: int
    storage_options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.url.rsplit("/", 1)[-1]

    def open(self) -> Any:
        """A file object whose reads fetch exactly the bytes asked for: no read-ahead cache, which would fetch the
        store client's block size (s3fs: 50 MiB) at each seek between a Parquet file's column chunks; readers of
        whole row groups coalesce their ranges with pyarrow's ``pre_buffer=True``."""
        location = Location.of(self.url, self.storage_options)
        return storage_call(self.url, "opening", lambda: location.fs.open(self.url, "rb", cache_type="none"))

    def stamp(self) -> tuple[int, str] | None:
        """(size, ETag or modification time) of the object now (one request); None when it is gone."""
        fs = Location.of(self.url, self.storage_options).fs
        fs.invalidate_cache(self.url)
        try:
            return info_stamp(storage_call(self.url, f"looking at {self.name}", lambda: fs.info(self.url)))
        except FileNotFoundError:
            return None


def readable(path: Any) -> Any:
    """What pyarrow opens for ``path``: the path itself, or a reader over a fetched file's bytes or a remote
    object."""
    return path.open() if isinstance(path, FetchedFile | RemoteFile) else path


def size_of(path: Any) -> int:
    """The size in bytes of a local file, a fetched one or a remote object."""
    return path.size if isinstance(path, FetchedFile | RemoteFile) else os.stat(path).st_size
