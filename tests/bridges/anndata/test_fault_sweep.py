"""Every single byte of the record to_anndata keeps in uns['cellspec'] flipped in turn: each damaged AnnData is
either refused with a CellspecError or read back to the very object written, never read as something else and
never a raw error."""

from __future__ import annotations

import copy
import time

import pytest

import cellspec_sc as cs
from cellspec_sc.errors import CellspecError

FIELDS = ("format_version", "spec_version", "meta", "meta_fingerprint", "images", "channels", "provenance")


def flipped(text: str, i: int) -> str | None:
    """``text`` with bit 0 of its ``i``-th UTF-8 byte flipped; None when the result is not UTF-8 text."""
    data = bytearray(text.encode("utf-8"))
    data[i] ^= 0x01
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


@pytest.mark.filterwarnings("ignore")
def test_every_flipped_byte_of_the_record_is_refused_or_harmless():
    x = cs.example(n_cells=6, n_samples=1, markers=["CD3e"])
    adata = cs.to_anndata(x)
    record = adata.uns["cellspec"]
    outcomes = {"refused": 0, "same": 0}
    began = time.monotonic()
    for field in FIELDS:
        text = str(record[field])
        for i in range(len(text.encode("utf-8"))):
            damaged = flipped(text, i)
            if damaged is None:
                continue
            trial = adata.copy()
            trial.uns["cellspec"] = {**copy.copy(record), field: damaged}
            try:
                back = cs.from_anndata(trial)
            except CellspecError:
                outcomes["refused"] += 1
                continue
            assert back.equals(x), f"{field} byte {i}: read as another object"
            outcomes["same"] += 1
    assert outcomes["refused"] > 0 and time.monotonic() - began < 600
