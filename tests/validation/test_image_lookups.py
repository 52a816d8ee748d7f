"""The checks that look images up (channels_index_contiguous, cells_images_known) on channels and images whose
image ids are shuffled, unknown or missing: rows compared with the rule computed here image by image."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import cellspec_sc as cs

X = cs.example(n_cells=30)
IDS = st.sampled_from(["img1", "img2", "img9", None])


def _text(values: list[str | None]) -> pd.Series:
    return pd.Series(values, dtype=X.channels["image_id"].dtype)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_channel_indices_read_one_to_n_within_each_image(data: st.DataObject) -> None:
    n = len(X.channels)
    images = data.draw(st.lists(IDS, min_size=n, max_size=n))
    index = data.draw(st.lists(st.integers(1, n), min_size=n, max_size=n))
    channels = X.channels.assign(image_id=_text(images), channel_index=pd.array(index, dtype="Int32"))
    result = cs.validate(X.replace(channels=channels)).result("channels_index_contiguous")
    groups: dict[str | None, list[int]] = {}
    for row, image in enumerate(images):
        groups.setdefault(image, []).append(row)
    bad = sorted(r for rows in groups.values() if sorted(index[r] for r in rows) != list(range(1, len(rows) + 1))
                 for r in rows)
    assert result.status == ("fail" if bad else "pass")
    if bad:
        assert result.count == len(bad) and list(result.rows) == bad[:len(result.rows)]


@settings(max_examples=60, deadline=None)
@given(known=st.lists(IDS, min_size=2, max_size=2), cells=st.lists(IDS, min_size=30, max_size=30))
def test_cells_of_images_not_listed_are_reported(known: list[str | None], cells: list[str | None]) -> None:
    images = X.images.assign(image_id=_text(known))
    x = X.replace(images=images, cells=X.cells.assign(image_id=_text(cells)))
    result = cs.validate(x).result("cells_images_known")
    listed = {i for i in known if i is not None}
    bad = [row for row, image in enumerate(cells) if image not in listed]
    assert result.status == ("fail" if bad else "pass")
    if bad:
        assert result.count == len(bad) and list(result.rows) == bad[:len(result.rows)]
    assert np.array_equal(np.asarray(x.cells["image_id"].isna()), np.array([c is None for c in cells]))
