"""The encoding sample's fast answer (UTF-8 header, ASCII rows) scans the rows in place: the same answer as
decoding the header and asking the rows, as bytes of their own, whether they are ASCII."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cellspec_sc.readers._table import is_utf8_with_ascii_rows


def _by_copies(sample: bytes) -> bool:
    rows = sample.find(b"\n") + 1
    if not rows or not sample[rows:].isascii():
        return False
    try:
        sample[:rows].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


LINES = st.lists(st.text(max_size=8) | st.binary(max_size=8).map(lambda b: b.decode("latin-1")), max_size=5)


@settings(max_examples=300, deadline=None)
@given(header=st.text(max_size=10), rows=LINES, encoding=st.sampled_from(["utf-8", "latin-1", "ascii"]),
       tail=st.binary(max_size=4))
def test_answer_is_the_one_of_copied_rows(header: str, rows: list[str], encoding: str, tail: bytes) -> None:
    text = "\n".join([header, *rows])
    sample = text.encode(encoding, errors="replace") + tail
    assert is_utf8_with_ascii_rows(sample) == _by_copies(sample)


def test_known_samples() -> None:
    assert is_utf8_with_ascii_rows("Cell Area (µm²)\n1.5\n2\n".encode())
    assert is_utf8_with_ascii_rows(b"a\n")  # no rows yet: nothing that is not ASCII
    assert not is_utf8_with_ascii_rows("a\n1\nµ\n".encode())
    assert not is_utf8_with_ascii_rows(b"a\n1\n\x80")  # the last byte counts
    assert not is_utf8_with_ascii_rows("µ\n1\n".encode("latin-1"))  # a header that is not UTF-8
    assert not is_utf8_with_ascii_rows(b"no line end")
