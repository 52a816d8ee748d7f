"""Shared fixtures of the cohort tests."""

from __future__ import annotations

import pytest

from cellspec_sc.cohort.example import write_example_cohort


@pytest.fixture
def slides(tmp_path):
    """Three simulated cellspec directories of 60 cells (tmp_path/slides/slide01 ...)."""
    return write_example_cohort(tmp_path / "slides", 3, n_cells=60)


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of 2 worker processes (1 GiB each) and its client, shared by a module's tests."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit="1GiB") as cluster, Client(cluster) as c:
        yield c

