"""What QuPath's measurement column names mean: compartment, marker, statistic and unit of each header.

QuPath has named measurements in four styles (see :mod:`cellspec_sc.readers.qupath`); :func:`classify`
reads every one of them into a :class:`~cellspec_sc.readers.features.FeatureSpec`, and
:func:`header_style` says which style an intensity header was written in.

>>> classify("Nucleus: CD3: Mean", calibrated=True)
FeatureSpec(kind='intensity', statistic='mean', unit='a.u.', source_name='Nucleus: CD3: Mean', compartment='nucleus', marker='CD3')
>>> classify("Cell: Area \\u00b5m^2", calibrated=True).unit
'um2'
"""

from __future__ import annotations

import re

from cellspec_sc.readers.features import FeatureSpec
from cellspec_sc.readers.headers import normalise_header

# Compartment words (first or second part of a header) -> spec compartment.
COMPARTMENTS = {"nucleus": "nucleus", "cytoplasm": "cytoplasm", "membrane": "membrane", "cell": "cell"}
# Statistic words of object measurements ("Nucleus: CD3: Mean", "CD3: Nucleus: Std.Dev.").
OBJECT_STATISTICS = {"mean": "mean", "median": "median", "min": "min", "max": "max", "std.dev.": "sd",
                     "variance": "variance", "sum": "sum"}
# Statistic words at the end of cell-detection measurements ("Nucleus: DAPI std dev"); "range" has
# no spec statistic and becomes kind other.
DETECTION_STATISTICS = {"mean": "mean", "median": "median", "min": "min", "max": "max", "std dev": "sd",
                        "sum": "sum", "variance": "variance", "range": None}
# Shape names -> (spec statistic, dimension: 0 dimensionless, 1 length, 2 area).
SHAPES = {
    "area": ("area", 2), "perimeter": ("perimeter", 1), "length": ("length", 1),
    "circularity": ("circularity", 0), "solidity": ("solidity", 0), "eccentricity": ("eccentricity", 0),
    "max caliper": ("max_caliper", 1), "min caliper": ("min_caliper", 1),
    "max diameter": ("max_diameter", 1), "min diameter": ("min_diameter", 1),
    "maximum diameter": ("max_diameter", 1), "minimum diameter": ("min_diameter", 1),
}
# Whole-header measurements.
SPECIAL = {
    "nucleus/cell area ratio": FeatureSpec("shape", "nucleus_cell_area_ratio", "1", "", "cell"),
    "detection probability": FeatureSpec("other", "detection_probability", "1", ""),
}
# Unit tokens at the end of a header, after micro-sign normalisation.
UNITS = {"um^2": "um2", "um2": "um2", "px^2": "px2", "px2": "px2", "um": "um", "px": "px"}

PER_PIXEL = re.compile(r"[\d.]+\s*(um|px)\s+per\s+pixel", flags=re.I)


def _unit_split(text: str) -> tuple[str, str | None]:
    match = re.fullmatch(r"(.*?)\s+(um\^2|px\^2|um2|px2|um|px)", text, flags=re.I)
    return (match.group(1), UNITS[match.group(2).lower()]) if match else (text, None)


def _shape(text: str, compartment: str, source: str, calibrated: bool) -> FeatureSpec | None:
    name, unit = _unit_split(text)
    found = SHAPES.get(name.strip().lower())
    if found is None:
        return None
    statistic, dimension = found
    if unit is None:
        unit = "1" if dimension == 0 else ("um" if calibrated else "px") + ("2" if dimension == 2 else "")
    return FeatureSpec("shape", statistic, unit, source, compartment)


def _derived(parts: list[str]) -> bool:
    """Headers QuPath's commands derive from other measurements: "Smoothed: 50 µm: ..." (add smoothed
    features: a weighted mean over the neighbourhood) and "ROI: 2.00 µm per pixel: DAPI: Mean" (add
    intensity features, at a resolution of their own); they measure no compartment of the cell itself.

    >>> _derived(["Smoothed", "50 um", "Nucleus", "CD3", "Mean"]), _derived(["Nucleus", "CD3", "Mean"])
    (True, False)
    """
    return parts[0].lower() == "smoothed" or any(PER_PIXEL.fullmatch(p) for p in parts[:-1])


def classify(source: str, *, calibrated: bool) -> FeatureSpec:
    """What one QuPath measurement header means (``calibrated``: the file has micrometre centroids,
    so cell-detection shapes without a unit are in micrometres).

    >>> classify("CD3: Nucleus: Std.Dev.", calibrated=True).statistic
    'sd'
    >>> classify("Nucleus: DAPI range", calibrated=True).kind
    'other'
    """
    norm = normalise_header(source)
    special = SPECIAL.get(norm.lower())
    if special is not None:
        return FeatureSpec(special.kind, special.statistic, special.unit, source, special.compartment)
    parts = [p.strip() for p in norm.split(":")]
    raw_parts = source.split(":")  # marker names keep their own spacing (trimmed later)
    first = COMPARTMENTS.get(parts[0].lower())
    if _derived(parts):
        return FeatureSpec.other(source, _unit_split(norm)[1] or "a.u.")
    if len(parts) == 1:
        return _shape(norm, "cell", source, calibrated) or FeatureSpec.other(source, _unit_split(norm)[1] or "a.u.")
    stat = OBJECT_STATISTICS.get(parts[-1].lower())
    if len(parts) >= 3 and stat:
        second_last = COMPARTMENTS.get(parts[-2].lower())
        if first:  # 0.6+: Nucleus: CD3: Mean
            return FeatureSpec("intensity", stat, "a.u.", source, first, ":".join(raw_parts[1:-1]).strip())
        if second_last:  # <= 0.5: CD3: Nucleus: Mean
            return FeatureSpec("intensity", stat, "a.u.", source, second_last, ":".join(raw_parts[:-2]).strip())
        return FeatureSpec.other(source)  # "A: B: Mean" without a compartment word: no marker we can name
    if len(parts) == 2 and first:
        rest = parts[1]
        shape = _shape(rest, first, source, calibrated)
        if shape is not None:
            return shape
        match = re.fullmatch(r"\s*(.*\S)\s+(mean|median|min|max|std dev|sum|variance|range)\s*",
                             ":".join(raw_parts[1:]), flags=re.I)
        if match:  # cell detection: Nucleus: DAPI mean
            statistic = DETECTION_STATISTICS[match.group(2).lower()]
            if statistic is None:
                return FeatureSpec.other(source)
            return FeatureSpec("intensity", statistic, "a.u.", source, first, match.group(1))
    if len(parts) == 2 and stat:  # a detection without compartments: CD3: Mean
        name, unit = _unit_split(parts[0])
        if unit is not None or "%" in name:  # "Nuclei Area µm^2: Mean": a summary of a quantity, not a marker
            return FeatureSpec.other(source, unit or "a.u.")
        return FeatureSpec("intensity", stat, "a.u.", source, "cell", raw_parts[0].strip())
    return FeatureSpec.other(source, _unit_split(norm)[1] or "a.u.")


def header_style(spec: FeatureSpec) -> str | None:
    """The QuPath naming style of an intensity header (recorded in provenance parameters)."""
    if spec.kind != "intensity":
        return None
    parts = [p.strip().lower() for p in normalise_header(spec.source_name).split(":")]
    if len(parts) == 2:
        return "cell detection (Nucleus: DAPI mean)" if parts[0] in COMPARTMENTS else "no compartment (CD3: Mean)"
    if parts[0] in COMPARTMENTS:
        return "compartment first, QuPath >= 0.6 (Nucleus: CD3: Mean)"
    return "channel first, QuPath <= 0.5 (CD3: Nucleus: Mean)"
