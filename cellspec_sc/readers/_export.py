"""One entry point for every tool: :func:`read_export` recognises which tool wrote an export (its header line or
its folder's layout, :func:`~cellspec_sc.readers._recognise.recognise`), says which reader it chose (a log line
and ``provenance.parameters.recognised_as``) and reads it with that reader; an export no reader knows is refused
with the list of the tools they know.
"""

from __future__ import annotations

import codecs
import inspect
import logging
import os
from importlib import import_module
from pathlib import Path
from typing import Any

from cellspec_sc.errors import InputError, MissingPath
from cellspec_sc.model import CellSpec
from cellspec_sc.readers._pipeline import RECOGNISED, ToolAdapter
from cellspec_sc.readers._recognise import GZIP_MAGIC, Signature, known_tools, recognise, what_it_is
from cellspec_sc.readers._table import check_not_container, check_regular_file, check_wide_encoding

LOG = logging.getLogger("cellspec_sc.readers")

# Tool key -> (module, reader function, adapter class): each reader's adapter takes the reader's keyword arguments.
READERS = {
    "halo": ("cellspec_sc.readers.halo", "read_halo", "HaloAdapter"),
    "inform": ("cellspec_sc.readers.inform", "read_inform", "InformAdapter"),
    "cellprofiler": ("cellspec_sc.readers.cellprofiler", "read_cellprofiler", "CellProfilerAdapter"),
    "qupath": ("cellspec_sc.readers.qupath", "read_qupath", "QuPathAdapter"),
    "mcmicro": ("cellspec_sc.readers.mcmicro", "read_mcmicro", "McquantAdapter"),
    "steinbock": ("cellspec_sc.readers.steinbock", "read_steinbock", "SteinbockAdapter"),
}


def tool_adapter(key: str, **options: Any) -> ToolAdapter:
    """The adapter of the tool ``key`` (a key of :data:`READERS`) made with ``options``; only that tool's reader is
    imported."""
    module, _, adapter = READERS[key]
    return getattr(import_module(module), adapter)(**options)


def adapter_for(found: Signature, source: str, options: dict[str, Any]) -> ToolAdapter:
    """The adapter of the tool recognised as ``found`` (from the ``source``: header line or folder layout), made with
    ``options``, which says so in the object's provenance."""
    adapter = tool_adapter(found.key, **options)
    adapter.recognised = f"{found.tool}: {found.reader} (from the {source})"
    return adapter


def recognised_reader(path: str | os.PathLike, options: dict[str, Any]) -> tuple[Signature, Any, str]:
    """The signature of the tool that wrote ``path``, its ``read_<tool>`` function (``options`` checked against its
    keyword arguments) and what the tool was recognised from; logged."""
    path = Path(path)
    if not path.exists():
        raise MissingPath(path, f"{path}: no such file or folder")
    if not path.is_dir():
        check_regular_file(path)  # a FIFO or a device is refused as such, as every reader refuses it
    found = recognise(path)
    if found is None:
        if not path.is_dir():
            refuse_what_is_not_text(path)
        what = "folder's layout" if path.is_dir() else "header line"
        raise InputError(f"{path.name}: no reader recognises this {what} as an export it reads; the readers know: "
                         f"{known_tools()}; call the tool's reader directly if the export is one of these")
    module, name, _ = READERS[found.key]
    reader = getattr(import_module(module), name)
    taken = [p for p in inspect.signature(reader).parameters if p not in ("path", "folder")]
    unknown = sorted(set(options) - set(taken))
    if unknown:
        raise InputError(f"{path.name}: recognised as {what_it_is(found, path)}, but {name} takes no argument "
                         f"{', '.join(map(repr, unknown))}; it takes {', '.join(taken)}")
    source = "folder layout" if path.is_dir() else "header line"
    LOG.info("%s: recognised as %s (from the %s); reading with %s", path.name, what_it_is(found, path), source,
             name)
    return found, reader, source


def refuse_what_is_not_text(path: Path) -> None:
    """Refuse a file that is no text table, saying what it is (empty, a ZIP archive or workbook, UTF-16 text ...), as
    each reader would; a gzip file is let through (a compressed table is read)."""
    with open(path, "rb") as handle:
        start = handle.read(64)
    if len(start) < 64 and not start.removeprefix(codecs.BOM_UTF8).strip():
        raise InputError(f"{path.name}: line 1: the file is empty; expected an export with a header line")
    if not start.startswith(GZIP_MAGIC):
        check_not_container(path, start)
    check_wide_encoding(path, start)


def read_export(path: str | os.PathLike, **options: Any) -> CellSpec:
    """Read any export the readers know, recognising the tool from the file's header line or the folder's layout.

    Parameters
    ----------
    path
        A HALO object table, an inForm ``cell_seg_data.txt``, a CellProfiler object table (or its folder), a QuPath
        measurement export, an MCMICRO mcquant table (``.csv`` or ``.csv.gz``, or the project folder that holds it)
        or a steinbock output folder; or a folder of one HALO, inForm, QuPath or mcquant table per image.
    **options
        The keyword arguments of the chosen reader (``pixel_size=``, ``sample_id=``, ``marker_map=`` ...); an
        argument that reader does not take is refused.

    Returns
    -------
    The validated object; ``provenance["parameters"]["recognised_as"]`` says which reader was chosen (also logged
    on the ``cellspec_sc.readers`` logger).

    Raises
    ------
    InputError
        When no reader recognises the export (listing the tools they know), or the chosen reader refuses it.

    Examples
    --------
    >>> import cellspec_sc as cs
    >>> x = cs.read_export("object_results.csv", pixel_size=0.5)  # doctest: +SKIP
    """
    found, reader, source = recognised_reader(path, options)
    token = RECOGNISED.set(f"{found.tool}: {found.reader} (from the {source})")
    try:
        return reader(path, **options)  # the tool's own reader, with every check of its arguments
    finally:
        RECOGNISED.reset(token)


__all__ = ["READERS", "adapter_for", "read_export", "recognised_reader", "refuse_what_is_not_text", "tool_adapter"]
