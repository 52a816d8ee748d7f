"""Exports parsed in many pieces on two threads read exactly as in one piece on one thread, and errors in
a late piece name the line of the whole file."""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pytest

import cellspec_sc as cs
from cellspec_sc import _background
from cellspec_sc.errors import InputError
from cellspec_sc.readers import ReaderWarning
from cellspec_sc.readers import _table as pieces
from cellspec_sc.readers._table import data_start, line_pieces
from cellspec_sc.readers.qupath._adapter import QuPathAdapter
from exports import qupath_rows
from exports import write_qupath_rows as write


@pytest.mark.parametrize(("newline", "encoding"), [("\n", "utf-8"), ("\r\n", "utf-8"), ("\r\n", "cp1252")])
def test_many_pieces_on_two_threads_read_exactly_as_one_piece(tmp_path, monkeypatch, newline, encoding):
    rows = qupath_rows(600, np.random.default_rng(1))
    rows[400][1] = "Zelle ä µ"  # a Windows export: every piece is transcoded
    path = write(tmp_path / "cells.tsv", rows, newline, encoding)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReaderWarning)  # "reading the file as cp1252"
        one = cs.read_qupath(path)
        monkeypatch.setattr(pieces, "PIECE_BYTES", 300)  # about 40 pieces
        monkeypatch.setattr(pieces, "workers", lambda: 2)
        assert len(line_pieces(path, data_start(path))) > 30
        many = cs.read_qupath(path)
    assert "Zelle ä µ" in set(many.cells["cell_id"])
    assert many.equals(one.replace(provenance=many.provenance)), many.differences(one)
    assert many.provenance["counts"] == one.provenance["counts"]
    assert one.provenance["counts"]["rows_read"] == 600
    assert many.n_cells == 600 - len(range(5, 600, 17))
    # the cell ids without Object ID count rows over the whole file, so piece boundaries must not show
    ids = write(tmp_path / "noid.tsv", [r[:1] + r[2:] for r in qupath_rows(300, np.random.default_rng(2))])
    text = ids.read_text().replace("Object ID\t", "", 1)
    ids.write_text(text)
    assert cs.read_qupath(ids).cells["cell_id"].tolist()[-1] == "150"


def test_errors_in_a_late_piece_name_the_line_of_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(pieces, "PIECE_BYTES", 300)
    monkeypatch.setattr(pieces, "workers", lambda: 2)
    rows = qupath_rows(400, np.random.default_rng(3))
    rows[350][7] = "high"  # a kept cell: refused after the filter, on the fallback path
    with pytest.raises(InputError, match=r"late.tsv: line 352, column 'Cell: CD3: Mean': cannot parse 'high'"):
        cs.read_qupath(write(tmp_path / "late.tsv", rows))
    cells = [r for r in qupath_rows(400, np.random.default_rng(3)) if r[2] == "Cell"]
    cells[340][7] = "high"
    with pytest.raises(InputError, match=r"cells.tsv: line 342, column 'Cell: CD3: Mean': cannot parse 'high'"):
        cs.read_qupath(write(tmp_path / "cells.tsv", cells), object_types=None)  # no filter: the first path
    rows = qupath_rows(400, np.random.default_rng(3))
    rows[300] = rows[300][:-1]
    with pytest.raises(InputError, match=r"short.tsv: line 302: expected 9 tab-separated fields as in the header, "
                                         r"found 8"):
        cs.read_qupath(write(tmp_path / "short.tsv", rows))


def test_line_pieces_cover_the_data_and_end_at_newlines(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"a,b\r\n" + b"".join(b"%d,%d\r\n" % (i, i * i) for i in range(1000)) + b"7,49")
    start = data_start(path)
    spans = line_pieces(path, start, piece_bytes=100)
    data = path.read_bytes()
    assert spans[0][0] == start == 5 and spans[-1][1] == len(data)
    assert all(a == b for (_, a), (b, _) in zip(spans, spans[1:], strict=False))  # contiguous
    assert all(data[b - 1:b] == b"\n" for _, b in spans[:-1])
    assert b"".join(data[a:b] for a, b in spans).count(b"\n") == 1000
    assert line_pieces(path, len(data)) == []


def test_a_file_a_little_over_one_piece_is_cut_in_two_halves_not_a_piece_and_a_sliver(tmp_path, monkeypatch):
    monkeypatch.setattr(pieces, "workers", lambda: 2)
    path = tmp_path / "t.csv"
    rows = b"".join(b"%06d,%06d\n" % (i, i) for i in range(8000))  # 14 bytes a line
    path.write_bytes(b"a,b\n" + rows + b"1,2")
    start = data_start(path)
    size = len(rows) + 3
    spans = line_pieces(path, start, piece_bytes=size * 2 // 3)  # one piece and a half
    assert [a for a, _ in spans] == [start, start + size // 2 // 14 * 14 + 14] and spans[-1][1] == start + size
    assert line_pieces(path, start, piece_bytes=size) == [(start, start + size)]
    assert len(line_pieces(path, start, piece_bytes=size // 2)) == 2  # two whole pieces


def test_a_small_export_is_parsed_and_hashed_from_the_bytes_its_header_read_took(tmp_path, monkeypatch):
    path = write(tmp_path / "cells.tsv", qupath_rows(200, np.random.default_rng(4)))
    one = cs.read_qupath(path)

    def read_again(*args, **kwargs):
        raise AssertionError("the file was read a second time")
    for name in ("piece_bytes", "_small_file", "data_start", "_estimated_rows"):
        monkeypatch.setattr(pieces, name, read_again)
    again = cs.read_qupath(path)
    assert again.equals(one.replace(provenance=again.provenance)), again.differences(one)
    record = again.provenance["inputs"][0]
    assert record["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest() == one.provenance["inputs"][0]["sha256"]


def test_ordered_map_keeps_order_and_stops_on_the_first_error():
    assert list(_background.ordered_map(lambda i: i * i, range(50), threads=2)) == [i * i for i in range(50)]
    started = []

    def work(i):
        started.append(i)
        if i == 3:
            raise ValueError("piece 3")
        return i

    with pytest.raises(ValueError, match="piece 3"):
        list(_background.ordered_map(work, range(1000), threads=2))
    assert list(_background.ordered_map(str, [7], threads=2)) == ["7"]
    assert len(started) < 20  # at most two per thread in flight: the rest was never started


def test_a_file_of_two_pieces_reads_as_one_piece_and_refuses_in_either_half(tmp_path, monkeypatch):
    """Two halves: the first parsed in the calling thread, the second on another; values, hash, and the line of a
    refusal in either half as for one piece."""
    rows = qupath_rows(300, np.random.default_rng(5))
    path = write(tmp_path / "halves.tsv", rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReaderWarning)
        one = cs.read_qupath(path)
        monkeypatch.setattr(pieces, "MIN_PIECE_BYTES", 1000)
        monkeypatch.setattr(pieces, "workers", lambda: 2)
        halves = line_pieces(path, data_start(path))
        assert len(halves) == 2
        started = []
        monkeypatch.setattr(pieces, "in_background", lambda *a, **k: started.append(1) or _background.in_background(
            *a, **k))
        two = cs.read_qupath(path)
    assert started  # (twice: the annotations hold text in number columns, so the rows kept are parsed again)
    assert two.equals(one.replace(provenance=two.provenance)), two.differences(one)
    assert two.provenance["inputs"][0]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    middle = halves[0][1]
    for row in (10, 290):  # a kept cell in the first half, then in the second
        bad = [list(r) for r in rows]
        while bad[row][2] != "Cell":
            row += 1
        bad[row][7] = "high"
        bad_path = write(tmp_path / f"bad{row}.tsv", bad)
        assert (bad_path.read_bytes().count(b"\n", 0, middle) > row + 1) == (row < 150)
        with pytest.raises(InputError, match=rf"line {row + 2}, column 'Cell: CD3: Mean': cannot parse 'high'"):
            cs.read_qupath(bad_path)


@pytest.mark.parametrize("rows", [5_000, 30_000], ids=["read whole", "in pieces"])
def test_an_export_hashed_after_its_parse_has_the_digest_of_its_bytes(tmp_path, rows):
    path = write(tmp_path / "cells.tsv", qupath_rows(rows, np.random.default_rng(4)))
    assert pieces.HASH_LATER_BYTES <= path.stat().st_size <= pieces.HASH_LATER_MAX_BYTES
    plan = QuPathAdapter().plan(path)
    roles = plan.roles
    columns = {"text": roles.text, "numbers": roles.numbers, "matrix": roles.matrix, "keep": roles.keep}
    later = pieces.stream_columns(plan.header, **columns, digest_later=True)
    now = pieces.stream_columns(plan.header, **columns)
    expected = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_size)
    assert isinstance(later.digest, _background.Future) and not isinstance(now.digest, _background.Future)
    assert later.file_digest() == now.file_digest() == expected
    np.testing.assert_array_equal(later.matrix, now.matrix)


def test_a_file_over_the_encoding_sample_takes_its_first_half_from_the_header_read(tmp_path, monkeypatch):
    """A table a little over 1 MB is parsed in two halves; the first lies within the bytes the header's encoding
    sample read, so only the second is read from disk: the values and the hash are those of reading both halves
    from disk (the encoding given: no sample is taken)."""
    rows = qupath_rows(20_000, np.random.default_rng(7))
    path = write(tmp_path / "big.tsv", rows)
    size = path.stat().st_size
    assert pieces.ENCODING_SAMPLE < size < 2 * pieces.ENCODING_SAMPLE
    reads = []
    disk_read = pieces.piece_bytes
    monkeypatch.setattr(pieces, "piece_bytes", lambda p, span: reads.append(span) or disk_read(p, span))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReaderWarning)
        sampled = cs.read_qupath(path)
        from_sample = list(reads)
        reads.clear()
        given = cs.read_qupath(path, encoding="utf-8")
    halves = line_pieces(path, data_start(path))
    assert len(halves) == 2 and halves[0][1] <= pieces.ENCODING_SAMPLE
    assert set(from_sample) == {halves[1]} and set(reads) == set(halves)  # (QuPath's rows may be parsed twice)
    assert sampled.equals(given.replace(provenance=sampled.provenance)), sampled.differences(given)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert sampled.provenance["inputs"][0]["sha256"] == given.provenance["inputs"][0]["sha256"] == digest
