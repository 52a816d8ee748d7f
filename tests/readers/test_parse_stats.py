"""What a parse gathers besides the values: the file's SHA-256 from the bytes its pieces read, the matrix
stats validation uses instead of walking the matrix again, and the rows beyond an estimate that was short."""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pytest

import cellspec_sc as cs
from cellspec_sc.model import first_seen_codes, matrix_stats
from cellspec_sc.readers import QuPathAdapter, ReaderWarning
from cellspec_sc.readers import _table as parsing
from cellspec_sc.readers import _table as pieces
from exports import qupath_rows
from exports import write_qupath_rows as write


def interleaved(tmp_path, n=900):
    """Three images interleaved in runs, negatives, NaN, empty fields, a constant column in one image."""
    rows = qupath_rows(n, np.random.default_rng(7))
    for i, row in enumerate(rows):
        row[0] = ["a.tif", "b.tif", "c.tif"][(i // 50) % 3]
        if row[2] == "Cell" and i % 7 == 3:
            row[8] = "-2.5"
        if row[0] == "c.tif" and row[2] == "Cell":
            row[7] = "4.0"
    return write(tmp_path / "cells.tsv", rows)


def parse(path):
    adapter = QuPathAdapter()
    parsed, _ = adapter.parse(adapter.plan(path))
    return parsed


@pytest.mark.parametrize("piece_bytes", [250, 1 << 23])
def test_parse_stats_equal_a_walk_over_the_matrix(tmp_path, monkeypatch, piece_bytes):
    path = interleaved(tmp_path)
    monkeypatch.setattr(pieces, "PIECE_BYTES", piece_bytes)
    monkeypatch.setattr(pieces, "workers", lambda: 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReaderWarning)
        parsed = parse(path)
        x = cs.read_qupath(path)
    data = path.read_bytes()
    assert parsed.file_digest() == (hashlib.sha256(data).hexdigest(), len(data))
    assert x.provenance["inputs"][0]["sha256"] == parsed.file_digest().sha256
    codes, names = first_seen_codes(x.cells["image_id"])
    assert list(names) == ["a.tif", "b.tif", "c.tif"]
    given = parsed.stats.for_images(codes, names)
    walked = matrix_stats(x.measurements, codes, len(names))
    for name in ("nan", "infinite", "negative", "first_infinite", "low", "high"):
        assert np.array_equal(getattr(given, name), getattr(walked, name)), name
    assert given.nan.sum() > 0 and given.negative.sum() > 0
    assert given.low[2, 0] == given.high[2, 0] == 4.0  # the constant column of image c
    report = cs.validate(x)
    assert report.status("feature_support") == "warn" and "cell:CD3:mean" in report.result("feature_support").message


def test_stats_of_groups_spanning_images_are_not_used(tmp_path):
    path = interleaved(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReaderWarning)
        parsed = parse(path)
    codes = np.zeros(parsed.n, dtype=np.int64)
    assert parsed.stats.for_images(codes, np.array(["a"])) is not None  # several groups, one image: fine
    codes[::2] = 1  # a group (an Image value) in two images: the ranges cannot be told apart
    assert parsed.stats.for_images(codes, np.array(["a", "b"])) is None


def test_rows_beyond_a_short_estimate_are_kept(tmp_path, monkeypatch):
    path = interleaved(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReaderWarning)
        one = cs.read_qupath(path)
        monkeypatch.setattr(pieces, "PIECE_BYTES", 300)
        monkeypatch.setattr(pieces, "workers", lambda: 2)
        monkeypatch.setattr(parsing, "_estimated_rows", lambda path: 40)
        short = cs.read_qupath(path)
    assert short.n_cells > 400
    assert short.equals(one.replace(provenance=short.provenance)), short.differences(one)


def test_a_read_and_cellspec_import_validate_without_walking_the_matrix(tmp_path, monkeypatch):
    from cellspec_sc.cli.main import main
    from cellspec_sc.validation import _context as context

    path = interleaved(tmp_path)

    def walk(*args, **kwargs):
        raise AssertionError("validation walked the matrix although the parse gathered its stats")

    monkeypatch.setattr(context, "matrix_stats", walk)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReaderWarning)
        x = cs.read_qupath(path)
        assert main(["import", "qupath", str(path), str(tmp_path / "out.cellspec"), "-q"]) == 0
    assert cs.validate(x).status("feature_support") == "warn"  # remembered: the report of the read
    assert cs.read(tmp_path / "out.cellspec").equals(
        x.replace(provenance=cs.read(tmp_path / "out.cellspec").provenance))


def test_validation_is_handed_finished_stats_and_id_codes(tmp_path, monkeypatch):
    """The cell ids are encoded and checked on another core while the object is built; validation gets plain
    values (MatrixStats carrying numpy codes), never work still in progress."""
    from cellspec_sc.model import MatrixStats
    from cellspec_sc.readers import _pipeline

    path = interleaved(tmp_path)
    given = []
    original = _pipeline.validate

    def recording(x, **options):
        given.append(options["stats"])
        return original(x, **options)

    monkeypatch.setattr(_pipeline, "validate", recording)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReaderWarning)
        x = cs.read_qupath(path)
    (stats,) = given
    assert type(stats) is MatrixStats and isinstance(stats.cell_codes, np.ndarray)
    assert stats.cell_codes.tolist() == first_seen_codes(x.cells["cell_id"])[0].tolist()
