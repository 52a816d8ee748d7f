"""Hostile files given to the readers: each is read correctly or refused with a CellspecError naming file, line,
column and rule (never a traceback from the csv module, a silent row split, or a wait on a pipe)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

import cellspec_sc as cs
from cellspec_sc.errors import CellspecError, InputError
from cellspec_sc.readers import _table as pieces
from cellspec_sc.readers._table import UnreadableText
from exports import DATA

QUPATH = (DATA / "qupath" / "v04_cell_detection.tsv", cs.read_qupath, {"pixel_size": 0.5})
MCMICRO = (DATA / "mcmicro" / "exemplar-001--unmicst_cell.csv", cs.read_mcmicro, {"pixel_size": 0.65})
READERS = pytest.mark.parametrize(("source", "reader", "options"), [QUPATH, MCMICRO], ids=["qupath", "mcmicro"])
EXPORT = (DATA / "mcmicro" / "exemplar-001--unmicst_cell.csv", cs.read_export, {"pixel_size": 0.65})


def lf_bytes(source: Path) -> bytes:
    return source.read_bytes().replace(b"\r\n", b"\n")


def written(tmp_path: Path, source: Path, data: bytes) -> Path:
    path = tmp_path / f"hostile{source.suffix}"
    path.write_bytes(data)
    return path


@READERS
def test_bare_cr_line_endings_are_refused_naming_file_line_column_and_rule(tmp_path, source, reader, options):
    path = written(tmp_path, source, lf_bytes(source).replace(b"\n", b"\r"))
    with pytest.raises(UnreadableText, match=r"hostile\.\w+: line 1, column \d+: a bare carriage return \(CR\) "
                                             r"ends a line.*LF or CRLF") as refused:
        reader(path, **options)
    n_columns = lf_bytes(source).split(b"\n")[0].count(b"\t" if source.suffix == ".tsv" else b",") + 1
    assert f"column {n_columns}:" in str(refused.value)  # the CR ending the header, after its last column


@READERS
def test_crlf_reads_the_values_of_lf(tmp_path, source, reader, options):
    lf = reader(written(tmp_path, source, lf_bytes(source)), **options)
    crlf = reader(written(tmp_path, source, lf_bytes(source).replace(b"\n", b"\r\n")), **options)
    assert crlf.equals(lf.replace(provenance=crlf.provenance)), crlf.differences(lf)


@READERS
def test_one_bare_cr_inside_a_data_line_is_refused_not_split_into_rows(tmp_path, source, reader, options):
    lines = lf_bytes(source).split(b"\n")
    delimiter = b"\t" if source.suffix == ".tsv" else b","
    fields = lines[2].split(delimiter)
    # a CR after the second field: pyarrow alone would end a row there and start another
    lines[2] = delimiter.join(fields[:2]) + b"\r" + delimiter.join(fields[2:])
    path = written(tmp_path, source, b"\n".join(lines))
    names = lines[0].decode().split(delimiter.decode())
    with pytest.raises(UnreadableText, match=rf"line 3, column 2 \({names[1]!r}\): a bare carriage return"):
        reader(path, **options)


def test_a_bare_cr_in_a_later_piece_names_its_line(tmp_path, monkeypatch):
    head, *rows = lf_bytes(MCMICRO[0]).rstrip(b"\n").split(b"\n")
    many = [rows[i % len(rows)].replace(b"1,", b"%d," % (i + 1), 1) for i in range(300)]
    many[250] = many[250].replace(b",", b",\r", 1)
    path = written(tmp_path, MCMICRO[0], b"\n".join([head, *many]) + b"\n")
    monkeypatch.setattr(pieces, "PIECE_BYTES", 500)
    assert len(pieces.line_pieces(path, pieces.data_start(path))) > 10
    with pytest.raises(UnreadableText, match=r"line 252, column 2 \('DNA_1'\): a bare carriage return"):
        cs.read_mcmicro(path, pixel_size=0.65)


@READERS
def test_empty_file_and_header_only_are_refused_by_line(tmp_path, source, reader, options):
    with pytest.raises(InputError, match=r"hostile\.\w+: line 1: the file is empty"):
        reader(written(tmp_path, source, b""), **options)
    header = lf_bytes(source).split(b"\n")[0]
    for data in (header, header + b"\n", header + b"\r\n"):
        with pytest.raises(InputError, match=r"hostile\.\w+: line 2: the file has a header but no data rows"):
            reader(written(tmp_path, source, data), **options)


@READERS
@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_utf16_and_utf32_with_a_byte_order_mark_are_refused(tmp_path, source, reader, options, encoding):
    data = lf_bytes(source).decode().encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    with pytest.raises(UnreadableText, match=r"hostile\.\w+: line 1: the file is UTF-(16|32) text .*byte order mark"
                                             r".*re-save the export as UTF-8"):
        reader(written(tmp_path, source, data), **options)


@READERS
def test_utf16_without_a_byte_order_mark_is_refused_as_nul_bytes(tmp_path, source, reader, options):
    data = lf_bytes(source).decode().encode("utf-16-le")
    with pytest.raises(UnreadableText, match=r"line 1, column 1: a NUL byte \(0x00\).*UTF-16 text without a byte"):
        reader(written(tmp_path, source, data), **options)


@READERS
def test_encoding_utf16_is_refused_before_reading(tmp_path, source, reader, options):
    with pytest.raises(UnreadableText, match=r"encoding='utf-16': the readers read UTF-8 or a single-byte code page"):
        reader(written(tmp_path, source, lf_bytes(source)), encoding="utf-16", **options)


@READERS
def test_a_nul_byte_names_its_line_and_column(tmp_path, source, reader, options):
    lines = lf_bytes(source).split(b"\n")
    delimiter = b"\t" if source.suffix == ".tsv" else b","
    fields = lines[3].split(delimiter)
    fields[1] = fields[1][:1] + b"\x00" + fields[1][1:]
    lines[3] = delimiter.join(fields)
    names = lines[0].decode().split(delimiter.decode())
    with pytest.raises(UnreadableText, match=rf"hostile\.\w+: line 4, column 2 \({names[1]!r}\): a NUL byte"):
        reader(written(tmp_path, source, b"\n".join(lines)), **options)
    lines = lf_bytes(source).split(b"\n")
    lines[0] += b"\x00"
    with pytest.raises(UnreadableText, match=r"line 1, column \d+: a NUL byte"):
        reader(written(tmp_path, source, b"\n".join(lines)), **options)


@pytest.mark.parametrize(("source", "reader", "options"), [QUPATH, MCMICRO, EXPORT],
                         ids=["qupath", "mcmicro", "read_export"])
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path, source, reader, options):
    fifo = tmp_path / f"pipe{source.suffix}"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            reader(fifo, **options)
            outcome.append(None)
        except BaseException as err:  # handed to the test thread
            outcome.append(err)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():  # release the reader blocked in open() before failing
        with open(fifo, "wb"):
            pass
        pytest.fail("the reader waited on the FIFO")
    assert isinstance(outcome[0], UnreadableText), outcome
    assert str(outcome[0]) == (f"{fifo}: is a FIFO (named pipe), not a regular file; the readers read a file on "
                               "disk (they open it more than once): save the export to a file first")


@READERS
def test_a_directory_and_a_missing_file_are_refused(tmp_path, source, reader, options):
    # both read a folder (QuPath: of one table per image; MCMICRO: a project folder): an empty one is refused as such
    with pytest.raises(InputError, match=r"no (QuPath|mcquant) table \(?.*in the folder"):
        reader(tmp_path, **options)
    with pytest.raises(InputError, match=r"nope\.csv: no such file"):
        reader(tmp_path / "nope.csv", **options)


def test_every_refusal_here_is_a_cellspec_error():
    assert issubclass(UnreadableText, InputError) and issubclass(UnreadableText, CellspecError)


@pytest.mark.parametrize(("line_end", "refusal"), [
    (b"\r", r"line 1, column 50: a bare carriage return \(CR\) ends a line"),
    (b"", r"line 1 runs past 16 MiB without a line end: not the header line of a QuPath table")])
def test_a_file_without_any_line_feed_is_refused_from_its_first_16_mib(tmp_path, line_end, refusal):
    # a classic Mac OS export (CR only) or a file with no line ends at all was read whole as its "header line"
    import tracemalloc

    line = b"\t".join(b"Cell: M%d: Mean" % i for i in range(50)) + line_end
    path = tmp_path / "endless.tsv"
    path.write_bytes(line * (80_000_000 // len(line)))
    tracemalloc.start()
    try:
        with pytest.raises(UnreadableText, match=rf"endless\.tsv: {refusal}"):
            cs.read_qupath(path, pixel_size=0.5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert path.stat().st_size > 79_000_000 and peak < 40_000_000  # io's readline(limit) joins chunks: 2 x 16 MiB


def test_a_nul_byte_far_down_a_big_file_names_its_line_and_column(tmp_path):
    # the line and column of a refusal are counted in blocks, not by reading the file up to it at once
    head, *rows = lf_bytes(MCMICRO[0]).rstrip(b"\n").split(b"\n")
    many = [rows[i % len(rows)].replace(b"1,", b"%d," % (i + 1), 1) for i in range(400_000)]
    fields = many[-3].split(b",")
    many[-3] = b",".join([*fields[:3], b"1\x002", *fields[4:]])
    path = written(tmp_path, MCMICRO[0], b"\n".join([head, *many]) + b"\n")
    assert path.stat().st_size > 1 << 25
    name = head.decode().split(",")[3]
    with pytest.raises(UnreadableText, match=rf"line 399999, column 4 \({name!r}\): a NUL byte"):
        cs.read_mcmicro(path, pixel_size=0.65)
