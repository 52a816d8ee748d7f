"""Readers of segmentation tools' exports: QuPath, MCMICRO (mcquant), steinbock, HALO, inForm and CellProfiler, and
:func:`read_export`, which recognises the tool (``_recognise``: every tool's signature as data).

Each tool has a folder (``qupath/``, ``mcmicro/``, ``steinbock/``, ``halo/``, ``inform/``, ``cellprofiler/``) with
its grammar as data and an adapter; they
share one table engine (``_table``: header, parse, value checks), the feature dictionary (``_features``) and one
pipeline (``_pipeline``: plan, parse, tables, one validation). Names are imported on first use, so that
``import cellspec_sc`` stays light.

>>> from cellspec_sc import readers
>>> readers.ReaderWarning.__name__
'ReaderWarning'
"""

from __future__ import annotations

from cellspec_sc._lazy import lazy_names

__all__ = ["CellProfilerAdapter", "HaloAdapter", "InformAdapter", "McquantAdapter", "QuPathAdapter", "ReaderWarning",
           "SteinbockAdapter", "build_dictionary", "read_cellprofiler", "read_export", "read_export_report",
           "read_halo", "read_inform", "read_mcmicro", "read_qupath", "read_steinbock", "recognise",
           "recognised_reader", "tool_adapter", "adapter_for", "what_it_is"]

_HOMES = {
    "read_qupath": "cellspec_sc.readers.qupath", "QuPathAdapter": "cellspec_sc.readers.qupath",
    "read_mcmicro": "cellspec_sc.readers.mcmicro", "McquantAdapter": "cellspec_sc.readers.mcmicro._adapter",
    "read_steinbock": "cellspec_sc.readers.steinbock", "SteinbockAdapter": "cellspec_sc.readers.steinbock",
    "read_export_report": "cellspec_sc.readers._pipeline", "ReaderWarning": "cellspec_sc.readers._table",
    "build_dictionary": "cellspec_sc.readers._features",
    "read_halo": "cellspec_sc.readers.halo", "HaloAdapter": "cellspec_sc.readers.halo",
    "read_inform": "cellspec_sc.readers.inform", "InformAdapter": "cellspec_sc.readers.inform",
    "read_cellprofiler": "cellspec_sc.readers.cellprofiler",
    "CellProfilerAdapter": "cellspec_sc.readers.cellprofiler",
    "read_export": "cellspec_sc.readers._export",
    "recognised_reader": "cellspec_sc.readers._export", "tool_adapter": "cellspec_sc.readers._export",
    "adapter_for": "cellspec_sc.readers._export",
    "recognise": "cellspec_sc.readers._recognise", "what_it_is": "cellspec_sc.readers._recognise",
}


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
