"""`cellspec cohort validate|summary|dataset` with dask's local threads: results, exit codes, refusals."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest

import cellspec_sc as cs
from cellspec_sc.cli.main import main
from cellspec_sc.cohort.example import write_example_cohort


@pytest.fixture
def slides(tmp_path):
    return write_example_cohort(tmp_path / "slides", 3, n_cells=60)


def test_cli_validate_summary_and_dataset_with_local_threads(slides, tmp_path, capsys):
    folder = str(slides[0].parent)
    assert main(["cohort", "validate", folder, "--scheduler", "threads"]) == 0
    assert "cohort validation: OK (3 directories" in capsys.readouterr().out
    out = tmp_path / "summary.parquet"
    assert main(["cohort", "summary", *map(str, slides), "-o", str(out), "--scheduler", "threads"]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(out), cs.open_cohort(slides).summary(), check_dtype=False)
    assert main(["cohort", "dataset", folder, str(tmp_path / "ds"), "--scheduler", "threads"]) == 0
    assert pq.ParquetDataset(tmp_path / "ds" / "cells").read().num_rows == 180
    assert main(["cohort", "summary", folder, "-o", str(tmp_path / "x.json"), "--scheduler", "threads"]) == 2
    raw = bytearray((slides[1] / "cells.parquet").read_bytes())
    raw[100] ^= 1
    (slides[1] / "cells.parquet").write_bytes(bytes(raw))
    capsys.readouterr()
    assert main(["cohort", "validate", folder, "--scheduler", "threads"]) == 1
    assert f"FAIL  {slides[1]}: ChecksumMismatch" in capsys.readouterr().out
    assert main(["cohort", "dataset", folder, str(tmp_path / "ds2"), "--scheduler", "threads"]) == 1
    assert "slide02" in capsys.readouterr().err and not (tmp_path / "ds2").exists()
