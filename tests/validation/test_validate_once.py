"""Each operation validates its object at most once; `cellspec info DIR` never reads the data files.

Validations are counted by wrapping the runner's ``run_check`` (one ``portability`` note per run of
the checks). `info` is tried on a directory whose data pages are garbage while the Parquet footer,
cellspec.json and the manifest are intact: it must still print the summary, while `validate`
refuses the directory.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cellspec_sc as cs
from cellspec_sc.cli.main import main
from cellspec_sc.validation import _runner as memo
from cellspec_sc.validation import _runner as runner


def forced_writable(x):
    """The object's own matrix made writable by force (its flag and those of the arrays under it), as memory
    damage or code that sets numpy's flags itself could change it; no API of the object does."""
    chain = [x._measurements]
    while isinstance(chain[-1].base, np.ndarray):
        chain.append(chain[-1].base)
    for array in reversed(chain):
        array.setflags(write=True)
    return x._measurements

@pytest.fixture
def runs(monkeypatch):
    """A list that grows by one per run of the checks (not per reuse of a kept report)."""
    counted: list[str] = []
    real = runner.run_check

    def counting(ctx, name, level, rule, fn=None):
        if name == "portability":
            counted.append(name)
        return real(ctx, name, level, rule, fn)

    monkeypatch.setattr(runner, "run_check", counting)
    return counted


def test_read_then_write_validates_once(tmp_path, runs):
    path = cs.write(cs.example(n_cells=60), tmp_path / "a")
    assert len(runs) == 1
    x = cs.read(path)
    assert len(runs) == 2  # read validates what it returns...
    cs.write(x, tmp_path / "b")
    assert cs.validate(x).ok
    assert len(runs) == 2  # ...and write and validate reuse that report
    assert cs.read(tmp_path / "b").equals(x)


def test_an_edit_in_place_is_validated_again(tmp_path, runs):
    x = cs.read(cs.write(cs.example(n_cells=60), tmp_path / "a"))
    before = len(runs)
    with pytest.raises(ValueError, match="read-only"):
        x.measurements[3, 2] = np.inf  # the matrix cannot be edited in place
    stored = forced_writable(x)  # what only forcing the flags could change: memory the object owns
    stored[3, 2] = np.inf
    with pytest.raises(cs.ValidationError, match="measurements_finite"):
        cs.write(x, tmp_path / "b")
    assert len(runs) == before + 1
    assert not (tmp_path / "b").exists()
    stored[3, 2] = 1.0
    stored.setflags(write=False)
    x.cells.loc[5, "x"] = -1e9  # a cells value edited in place
    assert cs.validate(x).status("centroids_within_image") == "warn"
    assert len(runs) == before + 2


@pytest.mark.parametrize(("table", "column", "value", "check"), [
    ("cells", "cell_id", "row 0", "cells_key_unique"),  # 60 rows: a short text column, digested by its values
    ("dictionary", "kind", "bogus", "dictionary_kind"),
    ("channels", "marker", "row 0", "channels_names"),
    ("images", "sample_id", "", "images_sample_present"),
])
def test_an_edit_of_a_short_text_column_in_place_is_validated_again(tmp_path, runs, table, column, value, check):
    x = cs.read(cs.write(cs.example(n_cells=60), tmp_path / "a"))
    before = len(runs)
    assert cs.validate(x).status(check) == "pass" and len(runs) == before
    frame = getattr(x, table)
    frame.loc[1, column] = frame.loc[0, column] if value == "row 0" else value  # row 1 is in row 0's image
    assert cs.validate(x).status(check) == "fail"
    assert len(runs) == before + 1


@pytest.mark.parametrize("row", [0, 29, 30, 59], ids=["first", "last of the first half", "first of the second", "last"])
def test_an_edit_in_either_half_of_a_big_matrix_is_validated_again(tmp_path, runs, monkeypatch, row):
    """A big matrix is digested in two halves at once (two cores); an edit in any row of either half is
    still a new object to validate, and the same content keeps its report."""
    monkeypatch.setattr(memo, "SPLIT_BYTES", 1)  # every matrix counts as big
    x = cs.read(cs.write(cs.example(n_cells=60), tmp_path / "a"))
    before = len(runs)
    assert cs.validate(x) is x.validation_memo[2] and len(runs) == before
    assert memo.content_token(x) == memo.content_token(x.replace(measurements=x.measurements.copy(),
                                                                  provenance=x.provenance))
    stored = forced_writable(x)  # an edit only forcing the flags could make
    stored[row, 1] = np.inf
    assert cs.validate(x).status("measurements_finite") == "fail"
    assert len(runs) == before + 1


def test_other_options_are_validated_again(runs):
    x = cs.example(n_cells=60)
    cs.validate(x)
    assert cs.validate(x, area_range=(1, 5)).status("area_range") == "warn"
    assert cs.validate(x).status("area_range") == "pass"
    assert len(runs) == 3


def test_cellspec_validate_dir_runs_the_checks_once(tmp_path, runs, capsys):
    path = cs.write(cs.example(n_cells=60), tmp_path / "a")
    runs.clear()
    assert main(["validate", str(path)]) == 0
    assert "cellspec validation: OK" in capsys.readouterr().out
    assert len(runs) == 1


def garble_data_pages(path):
    """Overwrite every byte between the leading magic and the first byte of the footer."""
    file = path / "cells.parquet"
    data = bytearray(file.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little") + 8
    data[4:len(data) - footer] = b"\xa5" * (len(data) - footer - 4)
    file.write_bytes(bytes(data))


def test_info_reads_no_data(tmp_path, capsys, runs):
    x = cs.example(n_cells=500, adjacency=True)
    path = cs.write(x, tmp_path / "a")
    garble_data_pages(path)
    with pytest.raises((pa.ArrowException, OSError)):
        pq.read_table(path / "cells.parquet")  # the data really are garbage
    runs.clear()
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith("data files not read)")
    assert "cells     500 in 2 images (2 samples)" in out
    assert f"adjacency {len(x.adjacency)} contacts" in out
    assert runs == []
    assert main(["validate", str(path)]) == 2  # the data file no longer matches its manifest entry
    assert "cells.parquet" in capsys.readouterr().err


def test_info_refuses_what_read_refuses_in_the_metadata(tmp_path, capsys):
    path = cs.write(cs.example(n_cells=20), tmp_path / "a")
    (path / "cellspec.json").write_text("{}")
    assert main(["info", str(path)]) == 2
    assert "cellspec.json" in capsys.readouterr().err


def test_info_on_the_tsv_variant(tmp_path, capsys):
    path = cs.write(cs.example(n_cells=20), tmp_path / "a", format="tsv")
    assert main(["info", str(path)]) == 0
    assert "cells     ? (not stored outside the data in the TSV variant) in 2 images" in capsys.readouterr().out


@pytest.mark.parametrize("split", [1, memo.SPLIT_BYTES], ids=["in halves", "whole"])
def test_a_readers_report_is_kept_under_the_token_of_what_it_returns(tmp_path, runs, monkeypatch, split):
    """The token a reader keeps its one report under is the one ``content_token`` makes of the object it returns, so
    validating it again runs no check; an edit afterwards is validated again."""
    from pathlib import Path

    monkeypatch.setattr(memo, "SPLIT_BYTES", split)
    x = cs.read_qupath(Path(__file__).parent.parent / "data" / "qupath" / "v04_cell_detection.tsv", pixel_size=0.5)
    before = len(runs)
    assert before == 1
    assert x.validation_memo[0] == memo.content_token(x) == memo.content_token(
        x.replace(measurements=x.measurements.copy(), provenance=x.provenance))
    assert cs.validate(x) is x.validation_memo[2] and len(runs) == before
    stored = forced_writable(x)  # an edit only forcing the flags could make
    stored[1, 0] = np.inf
    assert cs.validate(x).status("measurements_finite") == "fail"
    assert len(runs) == before + 1


def _stats_with_image_codes(x):
    from cellspec_sc.model import first_seen_codes, matrix_stats

    codes, names = first_seen_codes(x.cells["image_id"])
    stats = matrix_stats(x.measurements, codes, len(names))
    stats.image_ids = np.asarray(names, dtype=object)  # as a reader's stats have them
    return stats


def test_validation_waits_for_a_readers_cell_id_codes_and_uses_them():
    """A reader hands over its cell-id codes while still making them: the key check waits for those codes
    and judges by them (codes that say "repeated" fail it although no image repeats an id), instead of encoding the
    ids a second time."""
    from cellspec_sc.model import first_seen_codes
    from cellspec_sc.validation import staged_validation

    x = cs.example(n_cells=40)
    assert not x.cells.duplicated(["image_id", "cell_id"]).any()

    def validated_with(cell_codes: np.ndarray):
        stats = _stats_with_image_codes(x)
        with staged_validation(x, image_codes=stats.image_codes, brings_cell_codes=True) as staged:
            stats.cell_codes = cell_codes  # made while the first checks ran
            return staged.finish(stats)

    # every id "the same"
    assert validated_with(np.zeros(len(x.cells), dtype=np.int64)).status("cells_key_unique") == "fail"
    assert validated_with(first_seen_codes(x.cells["cell_id"])[0]).ok


def test_a_readers_refusal_made_while_validating_reaches_the_caller(tmp_path):
    """The QuPath reader checks (image, id) for repeats on another core while the object is validated: the
    refusal naming both lines, not a validation report, is what the user gets."""
    head = "Image\tObject ID\tObject type\tCentroid X µm\tCentroid Y µm\tCell: CD3 mean\n"
    rows = "".join(f"a\tid{i}\tCell\t{i}\t1\t5\n" for i in range(50)) + "a\tid7\tCell\t3\t1\t6\n"
    path = tmp_path / "repeat.tsv"
    path.write_text(head + rows, encoding="utf-8")
    with pytest.raises(cs.InputError, match=r"repeat.tsv: lines 9 and 52, column 'Object ID'"):
        cs.read_qupath(path, pixel_size=0.5)
