"""Rules that turn a var name of a foreign AnnData into a dictionary row (``features=`` of
:func:`~cellspec_sc.bridges.anndata_foreign.from_foreign_anndata`): every name an ``other`` feature (the
default), or names as markers with region properties as shape features.

>>> intensity_features("nucleus")("CD3")["compartment"], other_feature("Area")["kind"]
('nucleus', 'other')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cellspec_sc.readers.mcmicro import SHAPES

FeatureRule = Callable[[str], Mapping[str, Any]]
DICTIONARY_FIELDS = ("kind", "marker", "compartment", "statistic", "unit")  # what a rule returns


def other_feature(name: str) -> dict[str, Any]:
    """The default rule: a var name becomes an ``other`` feature ``other:<name>`` in a.u.

    >>> other_feature("Area")["statistic"]
    'Area'
    """
    return {"kind": "other", "marker": None, "compartment": None, "statistic": name, "unit": "a.u."}


def intensity_features(compartment: str = "cell", statistic: str = "mean", unit: str = "a.u.",
                       others: Sequence[str] = ()) -> FeatureRule:
    """A rule for var names that are marker names (scimap/MCMICRO): each becomes the intensity
    feature ``<compartment>:<marker>:<statistic>``; names in ``others`` become ``other``
    features, and scikit-image/mcquant region properties (``Area``, ``eccentricity``, ...) shape
    features of ``compartment`` in pixel units.

    >>> intensity_features("nucleus")(" CD3 ")["marker"]
    'CD3'
    >>> intensity_features()("Area")["unit"]
    'px2'
    """
    def rule(name: str) -> dict[str, Any]:
        if name in others:
            return other_feature(name)
        if name in SHAPES:
            shape_statistic, shape_unit = SHAPES[name]
            return {"kind": "shape", "marker": None, "compartment": compartment, "statistic": shape_statistic,
                    "unit": shape_unit}
        return {"kind": "intensity", "marker": name.strip(), "compartment": compartment, "statistic": statistic,
                "unit": unit}
    return rule


