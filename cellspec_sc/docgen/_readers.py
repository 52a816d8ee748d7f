"""The header-mapping tables of ``docs/readers.md``, rendered from the tables the readers use.

``python -m cellspec_sc.docgen`` rewrites the generated block of ``docs/readers.md`` (between
``<!-- begin generated -->`` and ``<!-- end generated -->``); a test fails when the block is stale.

>>> "| `Nucleus: CD3: Mean` |" in render_tables()
True
"""

from __future__ import annotations

from pathlib import Path

from cellspec_sc.docgen._markdown import markdown_table
from cellspec_sc.readers import build_dictionary
from cellspec_sc.readers.mcmicro import grammar as mcmicro
from cellspec_sc.readers.qupath import grammar as qupath_headers
from cellspec_sc.readers.steinbock import grammar as steinbock

DOC = Path(__file__).resolve().parents[2] / "docs" / "readers.md"
BEGIN, END = "<!-- begin generated -->", "<!-- end generated -->"

QUPATH_EXAMPLES = (
    "Nucleus: DAPI mean", "Cytoplasm: CD3 std dev", "Nucleus: DAPI range", "Cell: Area", "Nucleus: Max caliper",
    "CD3: Nucleus: Mean", "CD3: Cell: Std.Dev.", "Nucleus: CD3: Mean", "Membrane: PD-L1: Variance", "CD3: Mean",
    "Cell: Area µm^2", "Cell: Area μm^2", "Cell: Area Âµm^2", "Cell: Area px^2", "Nucleus: Length µm",
    "Cell: Circularity", "Cell: Solidity", "Cell: Max diameter µm", "Nucleus/Cell area ratio",
    "Detection probability", "Nucleus: CD8: clone C8/144B: Mean", "Subcellular: Channel 2: Num spots estimated",
    "Smoothed: 50 µm: Nucleus: CD3: Mean", "ROI: 2.00 µm per pixel: DAPI: Mean", "Nuclei Area µm^2: Mean",
)
MCMICRO_EXAMPLES = (
    "DNA_1", "CD3", "CD3_intensity_median", "CD3_intensity_sum", "CD3_intensity_std", "CD3_gini_index", "Area",
    "MajorAxisLength", "Eccentricity", "Orientation", "perimeter", "CD3_cellMask", "CD3_nucleiRingMask",
)


def _mapping_rows(specs) -> list[tuple[str, ...]]:
    rows = []
    for spec in specs:  # one at a time: the examples include the same measurement in several spellings
        r = next(build_dictionary([spec])[0].itertuples())
        rows.append((f"`{r.source_name}`", r.kind, f"`{r.feature_id}`", r.unit))
    return rows


def render_tables() -> str:
    """The generated part of docs/readers.md."""
    qupath_specs = [qupath_headers.classify(h, calibrated=True) for h in QUPATH_EXAMPLES]
    mc_specs, _ = mcmicro.classify_columns(list(MCMICRO_EXAMPLES), default_compartment="cell", markers=None)
    parts = [
        "### QuPath: headers and what they become",
        "Each header is classified on its own (a file with micrometre centroids, so unit-less cell-detection "
        "shapes are in micrometres; with pixel centroids they are `px` / `px2`):",
        markdown_table(("header", "kind", "feature_id", "unit"), _mapping_rows(qupath_specs)),
        "### QuPath: words the reader knows",
        markdown_table(("compartment word", "compartment"),
               [(f"`{k.capitalize()}`", v) for k, v in qupath_headers.COMPARTMENTS.items()]),
        markdown_table(("object-measurement statistic (0.5+)", "statistic"),
               [(f"`{k.capitalize() if k != 'std.dev.' else 'Std.Dev.'}`", v)
                for k, v in qupath_headers.OBJECT_STATISTICS.items()]),
        markdown_table(("cell-detection statistic", "statistic"),
               [(f"`{k}`", v or "(kind other)") for k, v in qupath_headers.DETECTION_STATISTICS.items()]),
        markdown_table(("shape name", "statistic", "unit without a unit in the header"),
               [(f"`{k.capitalize()}`", s, {0: "1", 1: "um or px", 2: "um2 or px2"}[d])
                for k, (s, d) in qupath_headers.SHAPES.items()]),
        "### MCMICRO: columns and what they become",
        "For a file `<image>--<segmentation>_cell.csv` without `markers.csv`:",
        markdown_table(("column", "kind", "feature_id", "unit"), _mapping_rows(mc_specs)),
        markdown_table(("mcquant column", "statistic", "unit"),
               [(f"`{k}`", s, u) for k, (s, u) in mcmicro.SHAPES.items()]),
        markdown_table(("`<marker>_<property>`", "statistic"),
               [(f"`{k}`", v or "(kind other)") for k, v in mcmicro.INTENSITY_PROPS.items()]),
        markdown_table(("mask (file name or column suffix, `Mask` dropped)", "compartment"),
               [(f"`{k}`", v) for k, v in mcmicro.MASKS.items()] + [("`mask`, `mask_<image>` (nf-core)", "cell")]),
        "### steinbock: columns and what they become",
        "Intensity columns are named after the panel's `name`; the statistic is the `aggregation=` steinbock "
        "measured with:",
        markdown_table(("`aggregation` (steinbock `--aggr`)", "statistic"),
               [(f"`{k}`", v) for k, v in steinbock.AGGREGATIONS.items()]),
        markdown_table(("regionprops column", "statistic", "unit"),
               [(f"`{k}`", s, u) for k, (s, u) in steinbock.SKIMAGE_REGIONPROPS.items()]
               + [(f"`{c}`", "cells x / y (pixels + 0.5, times the pixel size)", "") for c in steinbock.CENTROIDS]),
    ]
    return "\n\n".join(parts)


def render_document(current: str) -> str:
    """``current`` with its generated block replaced by :func:`render_tables`."""
    head, _, rest = current.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n<!-- rendered by `python -m cellspec_sc.docgen`; do not edit -->\n\n" \
           f"{render_tables()}\n\n{END}{tail}"
