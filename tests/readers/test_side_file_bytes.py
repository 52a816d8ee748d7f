"""A small side file (panel.csv, images.csv, a neighbour table) is parsed and hashed from the bytes its header's
encoding sample read: the same table and SHA-256 as the file on disk, without reading it again."""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pyarrow.csv as pacsv
from hypothesis import given, settings
from hypothesis import strategies as st

from cellspec_sc.readers._table import read_as_text, read_header, recorded_digest, recorded_digests

VALUES = st.text(alphabet=st.characters(codec="utf-8", exclude_characters=',"\r\n\x00'), max_size=6)


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(st.tuples(VALUES, VALUES), min_size=1, max_size=8))
def test_table_and_digest_are_the_files(tmp_path_factory, rows: list[tuple[str, str]]) -> None:
    path = tmp_path_factory.mktemp("side") / "panel.csv"
    path.write_bytes(("channel,name\n" + "".join(f"{a},{b}\n" for a, b in rows)).encode())
    expected = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(
        column_types={"channel": pa.string(), "name": pa.string()}, strings_can_be_null=True))
    header = read_header(path, ",", "steinbock panel.csv")
    with recorded_digests():
        table = read_as_text(header)
        digest = recorded_digest(path)
    assert table.equals(expected)
    data = path.read_bytes()
    assert digest == (hashlib.sha256(data).hexdigest(), len(data))


def test_the_file_is_not_read_again(tmp_path) -> None:
    path = tmp_path / "panel.csv"
    path.write_bytes(b"channel,name\nX1,CD3\n")
    header = read_header(path, ",", "steinbock panel.csv")
    path.unlink()  # what is parsed and hashed now can only be the bytes the header read
    with recorded_digests():
        names = read_as_text(header).column("name").to_pylist()
        digest = recorded_digest(path)
    assert names == ["CD3"] and digest == (hashlib.sha256(b"channel,name\nX1,CD3\n").hexdigest(), 20)
