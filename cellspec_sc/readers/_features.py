"""What a reader understood of each measurement column, and the dictionary and channels built from it.

An adapter classifies each header into a :class:`FeatureSpec` (kind, compartment, marker, statistic,
unit, source_name); :func:`build_dictionary` applies the feature-id rules and vocabularies of
:func:`~cellspec_sc.spec._vocabulary.vocabulary`, the marker rules and ``marker_map`` (spec sections 3-5).

>>> d, _ = build_dictionary([FeatureSpec("intensity", "mean", "a.u.", "Nucleus: CD3: Mean", "nucleus", "CD3")])
>>> d["feature_id"].tolist()
['nucleus:CD3:mean']
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from cellspec_sc.errors import InputError
from cellspec_sc.model import first_free_name
from cellspec_sc.readers._table import other_name
from cellspec_sc.spec import canonical_frame, character_array, column_values, python_values, vocabulary

MARKER_COLON_REPLACEMENT = "_"
# scikit-image regionprops names (what mcquant's --mask_props and steinbock write) -> (statistic, unit).
SKIMAGE_REGIONPROPS = {
    "area": ("area", "px2"), "perimeter": ("perimeter", "px"), "eccentricity": ("eccentricity", "1"),
    "solidity": ("solidity", "1"), "extent": ("extent", "1"), "orientation": ("orientation", "rad"),
    "major_axis_length": ("major_axis_length", "px"), "minor_axis_length": ("minor_axis_length", "px"),
    "axis_major_length": ("major_axis_length", "px"), "axis_minor_length": ("minor_axis_length", "px"),
    "feret_diameter_max": ("max_caliper", "px"),
}
# Other scikit-image region properties a table may carry (mcquant's --mask_props, steinbock's regionprops):
# measurements of the mask with no spec statistic, so kind other, never a marker. Array properties come as
# <name>-<i>[-<j>] columns (bbox-0, moments_hu-3), also after a marker (DNA_1_centroid_weighted-0).
SKIMAGE_OTHER_PROPS = re.compile(
    r"(.+_)?((bbox|centroid\w*|coords\w*|inertia_tensor\w*|moments\w*|image\w*|slice)(-\d+)+|equivalent_diameter"
    r"(_area)?|euler_number|area_(bbox|convex|filled)|(bbox|convex|filled)_area|perimeter_crofton|num_pixels)")
DICTIONARY_COLUMNS = ["feature_id", "kind", "marker", "compartment", "statistic", "unit", "source_name",
                      "marker_source"]


@dataclass(frozen=True)
class FeatureSpec:
    """What a reader understood of one measurement column (a row of the dictionary to be)."""

    kind: str
    statistic: str
    unit: str
    source_name: str
    compartment: str | None = None
    marker: str | None = None

    @classmethod
    def other(cls, source_name: str, unit: str = "a.u.") -> FeatureSpec:
        """A measurement the reader cannot classify: kept as kind ``other``, never dropped."""
        return cls("other", other_name(source_name), unit, source_name)


def checked_marker_map(marker_map: Mapping[str, str] | None) -> dict[str, str]:
    """``marker_map`` with trimmed keys; refuses a target name the spec does not allow (section 4)."""
    out = {}
    for old, new in (marker_map or {}).items():
        if not isinstance(new, str) or not new.strip() or new != new.strip() or ":" in new:
            raise InputError(f"marker_map: {old!r} -> {new!r}: a marker name must be non-empty, trimmed and "
                             "contain no ':' (spec section 4)")
        out[str(old).strip()] = new
    return out


def clean_marker(raw: str, marker_map: Mapping[str, str]) -> tuple[str, str]:
    """(marker, marker_source) for a marker name as written by the tool.

    The name is trimmed, ``marker_map`` applied (looked up by the trimmed name), and a ``:`` replaced;
    ``marker_source`` is the trimmed original.

    >>> clean_marker(" CD8: clone C8/144B ", {})
    ('CD8_ clone C8/144B', 'CD8: clone C8/144B')
    >>> clean_marker("CD3", {"CD3": "CD3e"})
    ('CD3e', 'CD3')
    """
    source = raw.strip()
    marker = marker_map.get(source, source).replace(":", MARKER_COLON_REPLACEMENT).strip()
    return marker, source


def build_dictionary(specs: Sequence[FeatureSpec], marker_map: Mapping[str, str] | None = None
                     ) -> tuple[pd.DataFrame, dict[str, str]]:
    """The dictionary of ``specs`` and the marker map actually applied (source marker -> marker).

    Feature ids come from :meth:`~cellspec_sc.spec._vocabulary.FeatureIdRule.format`. A spec whose
    compartment, statistic or unit is outside the vocabulary, or whose id is already taken, is kept
    as kind ``other``. Two ``other`` headers with the same name after normalisation (``Num marker+``,
    ``Num marker-``) get ``_2``, ``_3``, ... on the name, so id and statistic still agree (section 3).

    >>> d, _ = build_dictionary([FeatureSpec.other("Num CD3+"), FeatureSpec.other("Num CD3-")])
    >>> d[["feature_id", "statistic"]].values.tolist()
    [['other:num_cd3', 'num_cd3'], ['other:num_cd3_2', 'num_cd3_2']]
    """
    voc = vocabulary()
    mapping = checked_marker_map(marker_map)
    rows, seen, applied, named = [], set(), {}, {}
    for spec in specs:
        spec = _within_vocabulary(spec, voc)
        source_marker = None
        if spec.kind == "intensity":
            marker, source_marker = clean_marker(spec.marker or "", mapping)
            if not marker:
                spec = FeatureSpec.other(spec.source_name)
            else:
                spec = FeatureSpec(spec.kind, spec.statistic, spec.unit, spec.source_name, spec.compartment, marker)
                applied[source_marker] = marker
                _check_distinct_markers(named, marker, source_marker)
        fid = _feature_id(spec, voc)
        if fid in seen and spec.kind != "other":
            spec, source_marker = FeatureSpec.other(spec.source_name, spec.unit), None
            fid = _feature_id(spec, voc)
        if fid in seen:  # only kind other gets here: a free name, written into id and statistic alike
            spec = replace(spec, statistic=_free_other_name(spec.statistic, seen, voc))
            fid = _feature_id(spec, voc)
        seen.add(fid)
        rows.append((fid, spec.kind, spec.marker, spec.compartment, spec.statistic, spec.unit, spec.source_name,
                     source_marker))
    renamed = any(src is not None and src != m for _, _, m, _, _, _, _, src in rows)
    names = DICTIONARY_COLUMNS if renamed else DICTIONARY_COLUMNS[:-1]  # marker_source only when a name changed
    values = list(zip(*rows, strict=True)) if rows else [()] * len(DICTIONARY_COLUMNS)
    columns = {name: character_array(column) for name, column in zip(names, values, strict=False)}
    return canonical_frame(columns, "dictionary"), applied


def _check_distinct_markers(named: dict[str, str], marker: str, source: str) -> None:
    """Refuse two source markers given one name; ``named`` (marker -> first source marker) grows as it goes."""
    first = named.setdefault(marker, source)
    if first != source:
        raise InputError(f"markers {first!r} and {source!r} would both be called {marker!r} (marker_map or ':' "
                         "replacement); give them distinct names in marker_map")


def _within_vocabulary(spec: FeatureSpec, voc) -> FeatureSpec:
    unit = spec.unit if spec.unit in voc.units else "a.u."
    if spec.kind == "other":
        return FeatureSpec("other", spec.statistic, unit, spec.source_name)
    allowed = voc.statistics(spec.kind) or ()
    if spec.compartment not in voc.compartments or spec.statistic not in allowed or spec.unit not in voc.units:
        return FeatureSpec.other(spec.source_name, unit)
    return spec


def _free_other_name(name: str, seen: set[str], voc) -> str:
    prefix = voc.feature_id_rule("other").format(compartment=None, marker=None, statistic="")  # "other:"
    return first_free_name(name, {fid[len(prefix):] for fid in seen if fid.startswith(prefix)})


def _feature_id(spec: FeatureSpec, voc) -> str:
    return voc.feature_id_rule(spec.kind).format(compartment=spec.compartment, marker=spec.marker,
                                                 statistic=spec.statistic)


# -- channels --------------------------------------------------------------------------------------
def channels_frame(image_ids: Sequence[str], channel_names: Sequence[str], markers: Sequence[str]) -> pd.DataFrame:
    """One row per marker per image, in the order the tool reports (section 5)."""
    n = len(channel_names)
    return canonical_frame({
        "image_id": character_array([i for i in image_ids for _ in range(n)]),
        "channel_index": pd.arrays.IntegerArray(np.tile(np.arange(1, n + 1, dtype=np.int32), len(image_ids)),
                                                np.zeros(n * len(image_ids), dtype=bool)),  # Int32, the spec's integer
        "channel_name": character_array(list(channel_names) * len(image_ids)),
        "marker": character_array(list(markers) * len(image_ids)),
    }, "channels")


def feature_positions(dictionary: pd.DataFrame, **match: str) -> list[int]:
    """Positions of the dictionary rows whose columns equal ``match`` (compared as Python strings: a dictionary has
    a row per feature, too few for pandas' vector operations to pay).

    >>> d, _ = build_dictionary([FeatureSpec("shape", "area", "um2", "Cell: Area", "cell")])
    >>> feature_positions(d, kind="shape", statistic="area"), feature_positions(d, kind="intensity")
    ([0], [])
    """
    columns = dictionary_columns(dictionary, *match)
    wanted = tuple(match.values())
    return [j for j, row in enumerate(zip(*columns, strict=True)) if row == wanted]


def dictionary_columns(dictionary: pd.DataFrame, *names: str) -> list[list[Any]]:
    """The values of the dictionary's ``names`` columns as Python lists (None for NA), read by Arrow without a
    Series each (a row per feature: the readers compare them as Python strings).

    >>> d, _ = build_dictionary([FeatureSpec("shape", "area", "um2", "Cell: Area", "cell")])
    >>> dictionary_columns(d, "kind", "marker")
    [['shape'], [None]]
    """
    values = dict(column_values(dictionary))
    return [python_values(values[name]) for name in names]


def intensity_channels(dictionary: pd.DataFrame, applied: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(channel names, markers) of the intensity features, in order of first appearance."""
    back = {m: src for src, m in applied.items()}
    kinds, names = dictionary_columns(dictionary, "kind", "marker")
    markers = list(dict.fromkeys(str(m) for k, m in zip(kinds, names, strict=True) if k == "intensity"))
    return [back.get(m, m) for m in markers], markers
