"""Shared fixtures. Property-based strategies live in tests/strategies.py, browser helpers in tests/browser.py."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", max_examples=20, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def x():
    """The spec's example object."""
    import cellspec_sc as cs

    return cs.example()


@pytest.fixture(scope="session")
def s3():
    """A real S3 API on 127.0.0.1 (moto's server mode, tests/s3server.py), shared by the session; each test
    makes its own bucket with ``s3.bucket()``."""
    from s3server import LocalS3

    server = LocalS3.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def gcs():
    """Google Cloud Storage's JSON API on 127.0.0.1 (gcp-storage-emulator, tests/stores.py), shared by the
    session; each test makes its own bucket with ``gcs.bucket()``."""
    from stores import LocalGCS

    server = LocalGCS.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def azure():
    """Azure Blob Storage on 127.0.0.1 (Azurite, tests/stores.py), shared by the session; each test makes its
    own container with ``azure.bucket()``."""
    from stores import AZURITE_INSTALL, LocalAzure

    if not LocalAzure.installed():
        pytest.skip(f"Azurite is not installed (node and `{AZURITE_INSTALL}`; .ci/run installs it)")
    server = LocalAzure.start()
    yield server
    server.stop()
