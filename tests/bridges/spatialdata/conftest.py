"""Fixtures of the SpatialData bridge's tests: the example with contacts and a region layer, a zarr round trip and
the bridge's uns record of a SpatialData."""

from __future__ import annotations

import json

import pytest
import spatialdata as sd

import cellspec_sc as cs
from cellspec_sc.bridges.spatialdata import UNS_KEY


@pytest.fixture
def xa():
    return cs.example(adjacency=True, region_layers=("tissue",))


def _through_zarr(sdata, path):
    sdata.write(path)
    return sd.read_zarr(path)


def _uns_record(sdata):
    return json.loads(str(sdata.tables["table"].uns[UNS_KEY]))


@pytest.fixture(scope="session")
def through_zarr():
    """``through_zarr(sdata, path)``: ``sdata`` written to ``path`` and read back with ``spatialdata.read_zarr``."""
    return _through_zarr


@pytest.fixture(scope="session")
def uns_record():
    """``uns_record(sdata)``: the bridge's ``table.uns["cellspec_spatialdata"]``, parsed."""
    return _uns_record
