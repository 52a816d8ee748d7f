"""Shared fixtures of the cohort tests."""

from __future__ import annotations

import pytest

from cellspec_sc.cohort.example import write_example_cohort


@pytest.fixture
def slides(tmp_path):
    """Three simulated cellspec directories of 60 cells (tmp_path/slides/slide01 ...)."""
    return write_example_cohort(tmp_path / "slides", 3, n_cells=60)
