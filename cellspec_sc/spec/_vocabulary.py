"""The cellspec 1.0 vocabulary as one data object.

Everything the specification fixes as a table lives here: the components of
section 1, the column tables of sections 2, 4, 5 and 7, the controlled
vocabularies, the feature identifier rules, the provenance fields and the
check table of section 10. The validator, the tool readers and the tables in
``docs/`` are generated from this object, so they cannot drift apart.

>>> from cellspec_sc import vocabulary
>>> voc = vocabulary()
>>> voc.column("cells", "x").type
'double'
>>> [c.name for c in voc.checks][:2]
['object_class', 'object_components']
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

SpecType = Literal["character", "double", "integer", "logical"]
Requirement = Literal["MUST", "SHOULD", "MAY"]
Level = Literal["structure", "semantic"]

SPEC_VERSION = "1.0.0"
SPEC_TYPES: tuple[str, ...] = ("character", "double", "integer", "logical")


@dataclass(frozen=True)
class Column:
    """One column of a spec table (sections 2, 4, 5, 7)."""

    name: str
    type: SpecType
    requirement: Requirement
    meaning: str

    @property
    def is_pattern(self) -> bool:
        """True for templated names such as ``region__<layer>``."""
        return "<" in self.name

    @property
    def prefix(self) -> str:
        """The fixed part of a templated name (``region__``)."""
        return self.name.split("<", 1)[0]


@dataclass(frozen=True)
class Component:
    """One component of the object (section 1)."""

    name: str
    type: str
    required: str
    content: str


@dataclass(frozen=True)
class Check:
    """One validation check (section 10): ``rule`` in Python's words (what reports and the docs show),
    ``spec_rule`` as the spec words it (R's: ``cells$image_id``, "double matrix")."""

    name: str
    level: Level
    rule: str
    spec_rule: str


@dataclass(frozen=True)
class FeatureIdRule:
    """How a reader builds a feature identifier for one kind (section 4)."""

    kind: str
    template: str
    example: str

    def format(self, *, compartment: str | None, marker: str | None, statistic: str | None) -> str:
        """Build the identifier of a feature of this kind.

        >>> vocabulary().feature_id_rule("intensity").format(compartment="nucleus", marker="FOXP3", statistic="mean")
        'nucleus:FOXP3:mean'
        """
        return template_format(self.template).format(compartment=compartment, marker=marker, statistic=statistic,
                                                     name=statistic)


@cache
def template_format(template: str) -> str:
    """A feature-id template as a ``str.format`` pattern (made once per template, not per feature): its
    ``<name>`` fields become ``{name}``, its braces are escaped.

    >>> template_format("<compartment>:<marker>:<statistic>")
    '{compartment}:{marker}:{statistic}'
    >>> template_format("{x}_<name>").format(name="area")
    '{x}_area'
    """
    parts = re.split(r"<(\w+)>", template)  # text, name, text, name, ..., text
    return "".join(f"{{{part}}}" if i % 2 else part.replace("{", "{{").replace("}", "}}")
                   for i, part in enumerate(parts))


@dataclass(frozen=True)
class Vocabulary:
    """The controlled vocabularies and tables of cellspec 1.0 (see module docstring)."""

    spec_version: str
    components: tuple[Component, ...]
    tables: dict[str, tuple[Column, ...]]
    kinds: tuple[str, ...]
    compartments: tuple[str, ...]
    intensity_statistics: tuple[str, ...]
    shape_statistics: tuple[str, ...]
    units: tuple[str, ...]
    adjacency_methods: tuple[str, ...]
    feature_id_rules: tuple[FeatureIdRule, ...]
    provenance_fields: tuple[tuple[str, str], ...]
    counts_fields: tuple[str, ...]
    reader_fields: tuple[str, ...]
    input_fields: tuple[str, ...]
    history_fields: tuple[str, ...]
    checks: tuple[Check, ...]
    reserved_prefixes: tuple[str, ...] = ("region__", "boundary_distance__", "cs__")
    internal_prefix: str = "cs__"
    layer_name_pattern: str = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
    micro_sign_variants: tuple[str, ...] = ("\u00b5", "\u03bc", "\u00c2\u00b5", "u")
    defaults: dict[str, object] = field(default_factory=dict)

    def columns(self, table: str, requirement: Requirement | None = None) -> tuple[Column, ...]:
        """Columns of a table, optionally only those of one requirement level."""
        cols = self.tables[table]
        return tuple(c for c in cols if requirement is None or c.requirement == requirement)

    def required(self, table: str) -> tuple[str, ...]:
        """Names of the MUST columns of a table (templated names excluded)."""
        return tuple(c.name for c in self.columns(table, "MUST") if not c.is_pattern)

    def column(self, table: str, name: str) -> Column | None:
        """The spec column that governs ``name`` in ``table`` (templated columns match by prefix)."""
        for col in self.tables[table]:
            if col.name == name:
                return col
        for col in self.tables[table]:
            if col.is_pattern and name.startswith(col.prefix):
                return col
        return None

    def check(self, name: str) -> Check:
        """The check of section 10 with this name."""
        for chk in self.checks:
            if chk.name == name:
                return chk
        raise KeyError(name)

    def feature_id_rule(self, kind: str) -> FeatureIdRule:
        """The identifier rule for features of ``kind``."""
        for rule in self.feature_id_rules:
            if rule.kind == kind:
                return rule
        raise KeyError(kind)

    def statistics(self, kind: str) -> tuple[str, ...] | None:
        """Allowed statistics of a kind; None where the statistic is free text."""
        return {"intensity": self.intensity_statistics, "shape": self.shape_statistics}.get(kind)

    def is_valid_layer_name(self, layer: str) -> bool:
        """Whether ``layer`` may follow ``region__`` / ``boundary_distance__``."""
        return re.fullmatch(self.layer_name_pattern, layer) is not None


def _cols(*rows: tuple[str, str, str, str]) -> tuple[Column, ...]:
    return tuple(Column(*row) for row in rows)


_COMPONENTS = (
    Component("spec_version", "str", "yes", '"1.0.0"'),
    Component("cells", "pandas DataFrame", "yes", "one row per cell: identity and geometry (section 2)"),
    Component("measurements", "float64 matrix (numpy, or dask when lazy)", "yes (may have 0 columns)",
              "cells x features, rows in the order of cells (section 3)"),
    Component("dictionary", "pandas DataFrame", "yes", "one row per measurement column (section 4)"),
    Component("images", "pandas DataFrame", "yes", "one row per image (section 5)"),
    Component("channels", "pandas DataFrame", "yes", "one row per image and channel (section 5)"),
    Component("provenance", "dict", "yes", "origin of the data (section 6)"),
    Component("adjacency", "pandas DataFrame or None", "no", "cell-cell contacts (section 7)"),
)

_CELLS = _cols(
    ("cell_id", "character", "MUST", "Cell identifier, unique within image_id, never recycled."),
    ("image_id", "character", "MUST", "Key into images."),
    ("sample_id", "character", "MUST", "Biological sample (slide or section); constant per image."),
    ("x", "double", "MUST", "Centroid, micrometres, image frame."),
    ("y", "double", "MUST", "Centroid, micrometres, image frame."),
    ("area", "double", "SHOULD", "Whole-cell area, square micrometres."),
    ("x_px", "double", "MAY", "Centroid in full-resolution pixels."),
    ("y_px", "double", "MAY", "Centroid in full-resolution pixels."),
    ("object_type", "character", "MAY", "Object type as exported by the tool, e.g. cell."),
    ("parent", "character", "MAY", "Parent annotation name as exported by the tool."),
    ("classification", "character", "MAY", "Class assigned inside the source tool."),
    ("tile_id", "character", "MAY", "Tile that owns the cell in tiled runs."),
    ("region__<layer>", "character", "MAY", "Region label for annotation layer <layer>."),
    ("boundary_distance__<layer>", "double", "MAY",
     "Signed distance to the region boundary of <layer>, micrometres, negative inside."),
)

_DICTIONARY = _cols(
    ("feature_id", "character", "MUST", "Unique key; equals the measurement column name."),
    ("kind", "character", "MUST", "intensity, shape or other."),
    ("marker", "character", "MUST", "Marker name for intensity features, otherwise NA."),
    ("compartment", "character", "MUST", "Compartment for intensity and shape features, otherwise NA."),
    ("statistic", "character", "MUST", "Statistic from the vocabulary (free text for other)."),
    ("unit", "character", "MUST", "Unit from the vocabulary."),
    ("source_name", "character", "MUST", "The exact original column header."),
    ("marker_source", "character", "MAY", "Marker name before applying a marker map."),
)

_IMAGES = _cols(
    ("image_id", "character", "MUST", "Unique image identifier."),
    ("sample_id", "character", "MUST", "Biological sample of the image."),
    ("subject_id", "character", "MAY", "Pseudonymised subject identifier."),
    ("pixel_size", "double", "MUST", "Micrometres per pixel at full resolution."),
    ("pixel_size_y", "double", "MAY", "Only when pixels are not square."),
    ("width_px", "integer", "SHOULD", "Full-resolution width in pixels."),
    ("height_px", "integer", "SHOULD", "Full-resolution height in pixels."),
    ("platform", "character", "MAY", "Imaging platform, e.g. PhenoCycler-Fusion."),
    ("source_image", "character", "MAY", "Image file name (not a full path)."),
    ("source_image_sha256", "character", "MAY", "SHA-256 of the image file."),
    ("geometry_ref", "character", "MAY", "Relative path to a GeoJSON file of cell outlines."),
)

_CHANNELS = _cols(
    ("image_id", "character", "MUST", "Key into images."),
    ("channel_index", "integer", "MUST", "1-based, contiguous per image."),
    ("channel_name", "character", "MUST", "Channel name as stored in the image."),
    ("marker", "character", "MUST", "Marker after mapping; equals channel_name when unmapped."),
)

_ADJACENCY = _cols(
    ("image_id", "character", "MUST", "Image of both cells."),
    ("cell_id_a", "character", "MUST", "Smaller cell identifier of the pair (byte order)."),
    ("cell_id_b", "character", "MUST", "Larger cell identifier of the pair."),
    ("shared_boundary", "double", "MUST", "Shared boundary length, micrometres."),
    ("method", "character", "MUST", "How contacts were derived."),
)

_PROVENANCE = (
    ("producer", "tool and version of the software that measured the cells"),
    ("reader", "package, version, adapter and adapter_version that built the object"),
    ("created_utc", "creation time, YYYY-MM-DDTHH:MM:SSZ"),
    ("inputs", "one entry per input file: path_basename, bytes, sha256"),
    ("counts", "rows_read, rows_kept, na_converted, nonfinite_converted"),
    ("parameters", "reader parameters, e.g. where the pixel size came from"),
    ("history", "steps that changed content: step, function, time_utc, details"),
)

_S, _M = "structure", "semantic"


def in_python_words(rule: str) -> str:
    """A check's rule as the spec words it, in Python's terms: ``table$column`` becomes ``table['column']``,
    R's containers become pandas' and numpy's.

    >>> in_python_words("Every cells$image_id exists in images.")
    "Every cells['image_id'] exists in images."
    >>> in_python_words("measurements is a double matrix.")
    'measurements is a float64 matrix.'
    """
    for r_words, python_words in _PYTHON_WORDS:
        rule = rule.replace(r_words, python_words)
    return re.sub(r"\b([a-z_]+)\$([a-z_]+)\b", r"\1['\2']", rule)


_PYTHON_WORDS = (
    ("The object is a list of class cellspec.", "The object is a cellspec_sc.CellSpec."),
    ("double matrix", "float64 matrix"),
    ("have the right container type", "have the right type (pandas DataFrame, numpy float64 matrix, dict)"),
)

_CHECKS = tuple(Check(n, lvl, in_python_words(r), r) for n, lvl, r in (
    ("object_class", _S, "The object is a list of class cellspec."),
    ("object_components", _S, "All components exist and have the right container type."),
    ("spec_version", _S, "spec_version is a version string with a supported major version."),
    ("cells_required_columns", _S, "cells has every MUST column and no duplicated names."),
    ("cells_column_types", _S, "Specified cells columns have their specified types."),
    ("cells_reserved_names", _S, "No cs__ columns; region layer names are valid."),
    ("cells_subject_id", _S, "cells carries no subject_id (it belongs in images)."),
    ("cells_ids_present", _S, "cell_id, image_id and sample_id are non-missing and non-empty."),
    ("cells_key_unique", _S, "(image_id, cell_id) is unique."),
    ("cells_coordinates_finite", _S, "x and y are finite."),
    ("cells_area_positive", _S, "area is positive or NA."),
    ("cells_images_known", _S, "Every cells$image_id exists in images."),
    ("cells_sample_consistent", _S, "cells$sample_id equals the sample_id of its image."),
    ("measurements_type", _S, "measurements is a double matrix."),
    ("measurements_rows", _S, "measurements has one row per cell."),
    ("measurements_names", _S, "Measurement column names equal dictionary$feature_id, in order."),
    ("measurements_finite", _S, "measurements holds no NaN or infinite values."),
    ("dictionary_required_columns", _S, "dictionary has every MUST column."),
    ("dictionary_column_types", _S, "dictionary columns are character."),
    ("dictionary_feature_id_unique", _S, "feature_id is non-missing and unique."),
    ("dictionary_kind", _S, "kind is intensity, shape or other."),
    ("dictionary_intensity", _S, "Intensity features have a marker, a compartment and an intensity statistic."),
    ("dictionary_shape", _S, "Shape features have a compartment, a shape statistic and no marker."),
    ("dictionary_other", _S, "Other features have a statistic and no marker."),
    ("dictionary_unit", _S, "unit is from the unit vocabulary."),
    ("dictionary_marker_names", _S, "Marker names are trimmed, non-empty and contain no :."),
    ("dictionary_feature_id_format", _S,
     "feature_id follows the naming rule of its kind (so no two features share kind, marker, "
     "compartment and statistic)."),
    ("dictionary_source_name", _S, "source_name is non-missing and non-empty."),
    ("images_required_columns", _S, "images has every MUST column."),
    ("images_column_types", _S, "Specified images columns have their specified types."),
    ("images_id_unique", _S, "image_id is non-missing, non-empty and unique."),
    ("images_sample_present", _S, "images$sample_id is non-missing and non-empty."),
    ("images_pixel_size", _S, "pixel_size (and pixel_size_y) is finite and positive."),
    ("images_dimensions", _S, "width_px and height_px are positive or NA."),
    ("channels_required_columns", _S, "channels has every MUST column."),
    ("channels_column_types", _S, "channels columns have their specified types."),
    ("channels_images_known", _S, "Every channels$image_id exists in images."),
    ("channels_index_contiguous", _S, "channel_index is 1, 2, …, n within each image."),
    ("channels_names", _S, "Channel names and markers are non-empty; markers are unique per image."),
    ("markers_in_channels", _S, "Every intensity marker is a channel marker of every image."),
    ("provenance_fields", _S, "provenance has every required field."),
    ("adjacency_columns", _S, "adjacency has every MUST column with its type."),
    ("adjacency_endpoints", _S, "Both cells of every contact exist in cells."),
    ("adjacency_pairs", _S, "Pairs are ordered (cell_id_a < cell_id_b) and listed once."),
    ("adjacency_values", _S, "shared_boundary is finite and non-negative; method is known."),
    ("centroids_within_image", _M, "Centroids lie inside the image extent (1 pixel tolerance)."),
    ("area_range", _M, "area lies inside area_range."),
    ("negative_intensity", _M, "Intensity features hold no negative values."),
    ("feature_na_fraction", _M, "No feature has more than na_max missing values."),
    ("feature_support", _M, "Mean intensity features have usable variation in every image."),
    ("duplicate_centroids", _M, "No two cells of one image share a centroid."),
))


@cache
def vocabulary() -> Vocabulary:
    """The cellspec 1.0.0 vocabulary (a shared, immutable object).

    Returns
    -------
    Vocabulary
        The spec's components, tables and their columns, kinds, compartments, statistics and checks: what the
        validator checks and the docs tables are generated from.

    Examples
    --------
    >>> vocabulary().kinds
    ('intensity', 'shape', 'other')
    """
    return Vocabulary(
        spec_version=SPEC_VERSION,
        components=_COMPONENTS,
        tables={"cells": _CELLS, "dictionary": _DICTIONARY, "images": _IMAGES,
                "channels": _CHANNELS, "adjacency": _ADJACENCY},
        kinds=("intensity", "shape", "other"),
        compartments=("cell", "nucleus", "cytoplasm", "membrane"),
        intensity_statistics=("mean", "median", "sd", "min", "max", "sum", "variance"),
        shape_statistics=("area", "perimeter", "length", "circularity", "solidity", "max_diameter",
                          "min_diameter", "max_caliper", "min_caliper", "eccentricity",
                          "major_axis_length", "minor_axis_length", "extent", "orientation",
                          "nucleus_cell_area_ratio"),
        units=("a.u.", "um", "um2", "px", "px2", "rad", "1"),
        adjacency_methods=("mask_touching", "polygon_intersection", "delaunay"),
        feature_id_rules=(
            FeatureIdRule("intensity", "<compartment>:<marker>:<statistic>", "nucleus:FOXP3:mean"),
            FeatureIdRule("shape", "<compartment>:<statistic>", "cell:area"),
            FeatureIdRule("other", "other:<name>", "other:detection_probability"),
        ),
        provenance_fields=_PROVENANCE,
        counts_fields=("rows_read", "rows_kept", "na_converted", "nonfinite_converted"),
        reader_fields=("package", "version", "adapter", "adapter_version"),
        input_fields=("path_basename", "bytes", "sha256"),
        history_fields=("step", "function", "time_utc", "details"),
        checks=_CHECKS,
        defaults={"area_range": (1.0, 10_000.0), "na_max": 0.5},
    )
