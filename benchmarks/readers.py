"""Tool readers beside ``pandas.read_csv`` (C engine) of the same files, on two cores and on one.

The files imitate what the tools write, 120 columns each:

- QuPath 0.6 "Export measurements" of cell detections: fixed columns, micrometre centroids, shapes,
  ``<Compartment>: <marker>: Mean`` intensities, values rounded to 4 decimals, two images in one file;
- an mcquant table ``<image>--unmicst_cell.csv``: ``CellID``, marker means, centroids and regionprops;
- a steinbock folder of four images (``intensities/``, ``regionprops/``, ``neighbors/``, ``panel.csv``,
  ``images.csv``), 40 channels; the baseline reads the same CSVs with pandas; and one of fifteen images (what small
  IMC studies hand over), where the fixed cost per file shows;
- a HALO object table (``Object Id``, the bounding box, ``<marker> Cell Intensity``, UTF-8 with a byte order mark),
  an inForm ``cell_seg_data.txt`` (tab-separated, ``#N/A``) and a CellProfiler object table (``ImageNumber``,
  ``ObjectNumber``, ``Intensity_MeanIntensity_<marker>``), 40 markers each, and ``read_export`` of the HALO table
  (the recognition's cost).

``python -m benchmarks.readers`` times small exports (one, several hundred, a few thousand and ten thousand rows,
the last of about 4 MB, and the fifteen-image steinbock folder) of all six readers against ``pandas.read_csv`` of
the same files in the same process, the two sides in turn (:func:`small_rows`): at that size the fixed cost of a
call is what matters, and a fresh process per side would time its first imports and caches instead.

``*_1core`` cases pin both sides to one CPU (``os.sched_setaffinity``) and pyarrow to one thread: pandas then
reads in one thread as well (it sizes its thread pool by the CPUs the process may use).

pandas 3.1 reads a file of 5 MB or more in threads (byte ranges at newlines, one C parser per thread), so on
two cores its default read is itself parallel. The goals were set against pandas' single-threaded C parser:
the two-core goal rows (``read_qupath``, ``read_mcmicro``) compare with pandas held to one thread
(``mode.max_threads=1``) on the same two cores; ``*_vs_threaded_pandas`` rows (information, no goal) compare
with pandas' own parallel read.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .cases import Case, Env, Op, describe_object, memory_goal
from .host import describe_machine, recorded_command

COLUMNS = 120
FIXED = ["Image", "Object ID", "Object type", "Name", "Classification", "Parent", "ROI",
         "Centroid X µm", "Centroid Y µm"]
SHAPES = ["Cell: Area µm^2", "Nucleus: Area µm^2", "Cell: Circularity", "Cell: Solidity", "Cell: Max diameter µm",
          "Nucleus/Cell area ratio"]
COMPARTMENTS = ("Nucleus", "Cytoplasm", "Membrane", "Cell")
MCQUANT_SHAPES = ["X_centroid", "Y_centroid", "Area", "MajorAxisLength", "MinorAxisLength", "Eccentricity",
                  "Solidity", "Extent", "Orientation"]
STEINBOCK_CHANNELS = 40
STEINBOCK_IMAGES = 4


def qupath_header(columns: int = COLUMNS) -> list[str]:
    """FIXED, SHAPES, then compartment-first intensity means up to ``columns`` names."""
    names = FIXED + SHAPES
    marker = 0
    while len(names) < columns:
        marker += 1
        names += [f"{c}: M{marker:03d}: Mean" for c in COMPARTMENTS]
    return names[:columns]


def _write_table(path: Path, names: list[str], columns_data: list, delimiter: str) -> Path:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    pacsv.write_csv(pa.table(columns_data, names=names), partial,
                    pacsv.WriteOptions(delimiter=delimiter, quoting_style="needed"))
    partial.rename(path)
    return path


def _values(rng: np.random.Generator, rows: int) -> np.ndarray:
    return np.round(rng.lognormal(3, 1, rows), 4)


def write_qupath_file(path: Path, rows: int, columns: int = COLUMNS, seed: int = 0) -> Path:
    """Write the QuPath-style TSV (kept between runs)."""
    import pyarrow as pa

    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    names = qupath_header(columns)
    ids = rng.integers(0, 2**63, size=(rows, 2), dtype=np.uint64)
    object_ids = [f"{a:016x}-{b:016x}" for a, b in ids.tolist()]  # unique per image, like QuPath's UUIDs
    image = np.where(np.arange(rows) < rows // 2, "slide_A.ome.tif", "slide_B.ome.tif")
    fixed = {"Image": image, "Object ID": object_ids, "Object type": np.full(rows, "Cell"),
             "Name": np.full(rows, ""), "Classification": rng.choice(["Tumor", "Stroma", "Immune cells"], rows),
             "Parent": np.full(rows, "Root object (Image)"), "ROI": np.full(rows, "Polygon"),
             "Centroid X µm": np.round(rng.uniform(0, 10000, rows), 4),
             "Centroid Y µm": np.round(rng.uniform(0, 8000, rows), 4)}
    data = [pa.array(fixed[n]) if n in fixed else pa.array(_values(rng, rows)) for n in names]
    return _write_table(path, names, data, "\t")


def write_mcquant_file(path: Path, rows: int, columns: int = COLUMNS, seed: int = 0) -> Path:
    """Write an mcquant-style CSV: CellID, marker means, then centroids and regionprops (kept between runs)."""
    import pyarrow as pa

    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    markers = [f"M{i:03d}" for i in range(columns - 1 - len(MCQUANT_SHAPES))]
    names = ["CellID", *markers, *MCQUANT_SHAPES]
    data = [pa.array(np.arange(1, rows + 1))] + [pa.array(_values(rng, rows)) for _ in markers]
    data += [pa.array(np.round(rng.uniform(0, 20000, rows), 6)) for _ in range(2)]
    data += [pa.array(_values(rng, rows)) for _ in MCQUANT_SHAPES[2:]]
    return _write_table(path, names, data, ",")


def write_steinbock_folder(folder: Path, rows: int, channels: int = STEINBOCK_CHANNELS, seed: int = 0,
                           images: int = STEINBOCK_IMAGES) -> Path:
    """Write a steinbock folder of ``images`` images with ``rows`` objects in all (kept between runs)."""
    import pyarrow as pa

    if (folder / "DONE").exists():
        return folder
    rng = np.random.default_rng(seed)
    markers = [f"M{i:03d}" for i in range(channels)]
    (folder / "intensities").mkdir(parents=True, exist_ok=True)
    (folder / "panel.csv").write_text("channel,name,keep\n" + "".join(f"X{i},{m},1\n" for i, m in enumerate(markers)))
    (folder / "images.csv").write_text("image,width_px,height_px,num_channels,acquisition_width_um,"
                                       "acquisition_height_um\n" + "".join(
                                           f"img{k}.tiff,1000,1000,{channels},1000,1000\n"
                                           for k in range(images)))
    per = np.array_split(np.arange(rows), images)
    for k, part in enumerate(per):
        n = len(part)
        ids = pa.array(np.arange(1, n + 1))
        _write_table(folder / "intensities" / f"img{k}.csv", ["Object", *markers],
                     [ids] + [pa.array(_values(rng, n)) for _ in markers], ",")
        _write_table(folder / "regionprops" / f"img{k}.csv",
                     ["Object", "area", "centroid-0", "centroid-1", "major_axis_length", "minor_axis_length",
                      "eccentricity"],
                     [ids, pa.array(rng.integers(5, 200, n))] + [pa.array(np.round(rng.uniform(0, 999, n), 6))
                                                                  for _ in range(2)]
                     + [pa.array(_values(rng, n)) for _ in range(3)], ",")
        a = np.arange(1, n + 1)
        b = np.where(a < n, a + 1, 1)
        _write_table(folder / "neighbors" / f"img{k}.csv", ["Object", "Neighbor", "Distance"],
                     [pa.array(np.concatenate([a, b])), pa.array(np.concatenate([b, a])),
                      pa.array(np.ones(2 * n))], ",")
    (folder / "DONE").write_text("")
    return folder


TOOL_MARKERS = 40


def write_halo_file(path: Path, rows: int, markers: int = TOOL_MARKERS, seed: int = 0) -> Path:
    """A HALO object table of two images (kept between runs)."""
    import pyarrow as pa

    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    half = rows // 2
    x0, y0 = rng.integers(0, 20000, rows), rng.integers(0, 20000, rows)
    names = ["Image Location", "Object Id", "XMin", "XMax", "YMin", "YMax", "Cell Area (µm²)",
             *(f"M{i:03d} Cell Intensity" for i in range(markers))]
    data = [pa.array(np.where(np.arange(rows) < half, "C:\\scans\\a.qptiff", "C:\\scans\\b.qptiff")),
            pa.array(np.where(np.arange(rows) < half, np.arange(rows), np.arange(rows) - half)),
            pa.array(x0), pa.array(x0 + 12), pa.array(y0), pa.array(y0 + 11), pa.array(_values(rng, rows))]
    data += [pa.array(_values(rng, rows)) for _ in range(markers)]
    _write_table(path, names, data, ",")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # HALO writes a byte order mark
    return path


def write_inform_file(path: Path, rows: int, markers: int = TOOL_MARKERS, seed: int = 0,
                      field: str = "field_[1,2].im3") -> Path:
    """An inForm cell_seg_data.txt of one field, one value in fifty missing (#N/A) (kept between runs)."""
    import pyarrow as pa

    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    names = ["Sample Name", "Cell ID", "Cell X Position", "Cell Y Position", "Nucleus Area (pixels)",
             *(f"Entire Cell M{i:03d} Mean (Normalized Counts, Total Weighting)" for i in range(markers))]
    data = [pa.array(np.full(rows, field)), pa.array(np.arange(1, rows + 1)),
            pa.array(rng.integers(0, 1868, rows)), pa.array(rng.integers(0, 1400, rows)),
            pa.array(rng.integers(20, 400, rows))]
    for _ in range(markers):
        values = _values(rng, rows).astype(str)
        values[rng.random(rows) < 0.02] = "#N/A"
        data.append(pa.array(values))
    return _write_table(path, names, data, "\t")


def write_cellprofiler_file(path: Path, rows: int, markers: int = TOOL_MARKERS, seed: int = 0) -> Path:
    """A CellProfiler object table (Cells.csv) of four images (kept between runs)."""
    import pyarrow as pa

    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    image = np.sort(rng.integers(1, 5, rows))
    first = np.searchsorted(image, image)
    names = ["ImageNumber", "ObjectNumber", "AreaShape_Area", "Location_Center_X", "Location_Center_Y",
             *(f"Intensity_MeanIntensity_M{i:03d}" for i in range(markers))]
    data = [pa.array(image), pa.array(np.arange(rows) - first + 1), pa.array(rng.integers(5, 400, rows)),
            pa.array(np.round(rng.uniform(0, 999, rows), 6)), pa.array(np.round(rng.uniform(0, 999, rows), 6))]
    data += [pa.array(np.round(rng.uniform(0, 1, rows), 6)) for _ in range(markers)]
    return _write_table(path, names, data, ",")


def one_core() -> None:
    """Pin this worker to one CPU and pyarrow to one thread (for the *_1core cases)."""
    import pyarrow as pa

    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)


def _qupath(env: Env) -> Path:
    return write_qupath_file(Path(env.data) / f"qupath-{env.n}x{COLUMNS}.tsv", env.n)


def _mcquant(env: Env) -> Path:
    return write_mcquant_file(Path(env.data) / f"mcquant-{env.n}x{COLUMNS}" / "slide--unmicst_cell.csv", env.n)


def _steinbock(env: Env) -> Path:
    return write_steinbock_folder(Path(env.data) / f"steinbock-{env.n}x{STEINBOCK_CHANNELS}", env.n)


def in_page_cache(paths: list[Path]) -> None:
    """Read ``paths`` once (untimed), so that neither side's first repetition reads from disk: a file written
    long before, or pushed out of the page cache by earlier rows, made one side's first read slower."""
    for path in paths:
        with open(path, "rb") as handle:
            while handle.read(1 << 24):
                pass


def _ours(read, files, single: bool):
    def setup(env: Env) -> Op:
        if single:
            one_core()
        run = read(env)
        in_page_cache(files(env))
        return Op(run, inspect=describe_object)
    return setup


def _pandas(files, sep: str, single: bool, threads: bool = False):
    """pandas.read_csv of ``files``; ``single``: on one CPU; else in one thread unless ``threads``."""
    def setup(env: Env) -> Op:
        import pandas as pd

        if single:
            one_core()
        elif not threads:
            one_parser_thread()
        paths = files(env)
        in_page_cache(paths)
        return Op(lambda i: [pd.read_csv(p, sep=sep) for p in paths])
    return setup


def _floor(files, single: bool, sha: bool = True):
    """What no reader of these files can beat: pyarrow's parse with the reader's column types (its own threads on
    two cores) and the SHA-256 the provenance needs (beside it, in another thread; left out when not ``sha``, to
    show the parse alone), nothing built or checked."""
    def setup(env: Env) -> Op:
        import hashlib
        import threading

        import pyarrow as pa
        import pyarrow.csv as pacsv

        from cellspec_sc.readers import QuPathAdapter

        if single:
            one_core()
        path = files(env)[0]
        adapter = QuPathAdapter(pixel_size=0.5)
        plan = adapter.plan(path)
        header, text = plan.header, set(plan.roles.text)
        types = {name: pa.string() if name in text else pa.float64() for name in header.names}
        convert = pacsv.ConvertOptions(column_types=types, null_values=[""], strings_can_be_null=True,
                                       quoted_strings_can_be_null=True)

        def run(i: int) -> pa.Table:
            digest = hashlib.sha256()

            def hash_file() -> None:
                with open(path, "rb") as handle:
                    while block := handle.read(1 << 23):
                        digest.update(block)
            hashing = threading.Thread(target=hash_file if sha else lambda: None)
            hashing.start()
            table = pacsv.read_csv(path, read_options=pacsv.ReadOptions(use_threads=not single),
                                   parse_options=pacsv.ParseOptions(delimiter=header.delimiter),
                                   convert_options=convert)
            hashing.join()
            return table
        in_page_cache([path])
        return Op(run)
    return setup


def one_parser_thread() -> None:
    """Hold pandas' C parser to one thread, as it was before pandas 3.1 (an older pandas has no such option)."""
    import pandas as pd

    try:
        pd.set_option("mode.max_threads", 1)
    except (KeyError, pd.errors.OptionError):
        pass


def _read_qupath(env: Env):
    import cellspec_sc as cs

    path = _qupath(env)
    return lambda i: cs.read_qupath(path, pixel_size=0.5)


def _read_mcmicro(env: Env):
    import cellspec_sc as cs

    path = _mcquant(env)
    return lambda i: cs.read_mcmicro(path, pixel_size=0.65)


def _read_steinbock(env: Env):
    import cellspec_sc as cs

    folder = _steinbock(env)
    return lambda i: cs.read_steinbock(folder, aggregation="mean", neighbors_method="mask_touching")


def _steinbock_15(env: Env) -> Path:
    return write_steinbock_folder(Path(env.data) / f"steinbock15-{env.n}x{STEINBOCK_CHANNELS}", env.n, images=15)


def _read_steinbock_15(env: Env):
    import cellspec_sc as cs

    folder = _steinbock_15(env)
    return lambda i: cs.read_steinbock(folder, aggregation="mean", neighbors_method="mask_touching")


def _steinbock_15_files(env: Env) -> list[Path]:
    return _tables_of(_steinbock_15(env))


def _tool_file(kind: str, env: Env) -> Path:
    writers = {"halo": (write_halo_file, "Total_Object_Results.csv"),
               "inform": (write_inform_file, "cell_seg_data.txt"), "cellprofiler": (write_cellprofiler_file,
                                                                                   "Cells.csv")}
    write, name = writers[kind]
    return write(Path(env.data) / f"{kind}-{env.n}x{TOOL_MARKERS}" / name, env.n)


def _read_tool(kind: str, via_export: bool = False):
    def read(env: Env):
        import cellspec_sc as cs

        path = _tool_file(kind, env)
        reader = cs.read_export if via_export else getattr(cs, f"read_{kind}")
        return lambda i: reader(path, pixel_size=0.5)
    return read


INFORM_FIELDS = 15


def write_inform_batch(folder: Path, rows: int, fields: int = INFORM_FIELDS) -> list[Path]:
    """An inForm batch export: a cell_seg_data.txt of ``rows`` rows per field (kept between runs)."""
    return [write_inform_file(folder / f"field_[{k},1]_cell_seg_data.txt", rows, seed=k, field=f"field_[{k},1].im3")
            for k in range(fields)]


def _halo_files(env: Env) -> list[Path]:
    return [_tool_file("halo", env)]


def _steinbock_files(env: Env) -> list[Path]:
    return _tables_of(_steinbock(env))


def _tables_of(folder: Path) -> list[Path]:
    return sorted((folder / "intensities").glob("*.csv")) + sorted((folder / "regionprops").glob("*.csv")) \
        + sorted((folder / "neighbors").glob("*.csv"))


SMALL_EXPORT_ROWS = 10_000  # the 4 MB export (4,000 rows): its goal is under 2x pandas' time


def goal(ratio: float):
    """Time at most ``ratio`` x pandas and peak under 2x the object; a small export's goal is time only: under
    2x pandas (its object of 4 MB is smaller than what any reader's thread pools and buffers take)."""
    def met(row: dict[str, Any]) -> bool:
        if row["n_cells"] <= SMALL_EXPORT_ROWS:
            return bool(row["ratio"] < 2.0)
        return bool(row["ratio"] <= ratio and memory_goal(row, 2.0))
    return met


def _cases() -> list[Case]:
    cases = []
    for tool, read, files, sep in (("qupath", _read_qupath, lambda e: [_qupath(e)], "\t"),
                                   ("mcmicro", _read_mcmicro, lambda e: [_mcquant(e)], ",")):
        for single in (False, True):
            cases.append(Case(
                f"read_{tool}{'_1core' if single else ''}",
                f"pandas.read_csv (C engine){', 1 core' if single else ', one parser thread'}",
                _ours(read, files, single), _pandas(files, sep, single),
                f"time <= {'1.0' if single else '0.6'}x (< 2x at 4,000 rows, time only), peak < 2x object",
                goal(1.0 if single else 0.6),
                requires=(f"cellspec_sc.readers.{tool}",), needs_slide=False, extra={"columns": COLUMNS}))
        cases.append(Case(f"read_{tool}_vs_threaded_pandas", "pandas.read_csv (C engine), its own threads",
                          _ours(read, files, False), _pandas(files, sep, False, threads=True), "information",
                          requires=(f"cellspec_sc.readers.{tool}",), needs_slide=False, extra={"columns": COLUMNS}))
    for single in (False, True):
        cases.append(Case(f"qupath_floor{'_1core' if single else ''}",
                          f"pandas.read_csv (C engine){', 1 core' if single else ', one parser thread'}",
                          _floor(lambda e: [_qupath(e)], single), _pandas(lambda e: [_qupath(e)], "\t", single),
                          "information: pyarrow's parse + SHA-256 of the QuPath file, nothing built (the floor)",
                          requires=("cellspec_sc.readers.qupath",), needs_slide=False, extra={"columns": COLUMNS}))
        cases.append(Case(f"qupath_parse{'_1core' if single else ''}",
                          f"pandas.read_csv (C engine){', 1 core' if single else ', one parser thread'}",
                          _floor(lambda e: [_qupath(e)], single, sha=False),
                          _pandas(lambda e: [_qupath(e)], "\t", single),
                          "information: pyarrow's parse alone of the QuPath file (the floor without the SHA-256)",
                          requires=("cellspec_sc.readers.qupath",), needs_slide=False, extra={"columns": COLUMNS}))
    cases.append(Case("read_steinbock", "pandas.read_csv of the same CSVs",
                      _ours(_read_steinbock, _steinbock_files, False), _pandas(_steinbock_files, ",", False),
                      "information", requires=("cellspec_sc.readers.steinbock",), needs_slide=False,
                      extra={"columns": STEINBOCK_CHANNELS + 5}))
    cases.append(Case("read_steinbock_15_images", "pandas.read_csv of the same CSVs",
                      _ours(_read_steinbock_15, _steinbock_15_files, False), _pandas(_steinbock_15_files, ",", False),
                      "information", requires=("cellspec_sc.readers.steinbock",), needs_slide=False,
                      extra={"columns": STEINBOCK_CHANNELS + 5}))
    for kind, sep in (("halo", ","), ("inform", "\t"), ("cellprofiler", ",")):
        files = (lambda k: lambda e: [_tool_file(k, e)])(kind)
        cases.append(Case(f"read_{kind}", "pandas.read_csv (C engine), one parser thread",
                          _ours(_read_tool(kind), files, False), _pandas(files, sep, False), "information",
                          requires=(f"cellspec_sc.readers.{kind}",), needs_slide=False,
                          extra={"columns": TOOL_MARKERS + 5}))
    cases.append(Case("read_export_halo", "pandas.read_csv (C engine), one parser thread",
                      _ours(_read_tool("halo", via_export=True), _halo_files, False),
                      _pandas(_halo_files, ",", False),
                      "information: the tool recognised first", requires=("cellspec_sc.readers.halo",),
                      needs_slide=False, extra={"columns": TOOL_MARKERS + 5}))
    return cases


CASES = _cases()


# -- small exports: every reader beside pandas in the same process -----------------------------------------------
SMALL_ROWS = (1, 300, 3000, 10000)
SMALL_RATIO = 1.5
SMALL_EXTRA_S = 0.020
FEW_HUNDRED = 1000  # rows up to which a file counts as "a few hundred rows" (the goal in milliseconds)
SMALL_GOAL = f"<= {SMALL_RATIO}x pandas; up to {FEW_HUNDRED:,} rows <= pandas + {SMALL_EXTRA_S * 1e3:.0f} ms"
ROOT = Path(__file__).resolve().parent.parent


def small_exports(data: Path, rows: int) -> list[tuple[str, Callable[[], Any], list[Path], str, int, int]]:
    """(case, the read, the files pandas reads, their separator, cells, columns) of every reader's export of
    ``rows`` rows under ``data`` (written once, kept between runs; a steinbock folder has a row per image at least)."""
    import cellspec_sc as cs

    env = Env(n=rows, f=COLUMNS, data=data, work=data / "scratch")
    out: list[tuple[str, Callable[[], Any], list[Path], str, int, int]] = []
    qupath, mcquant = _qupath(env), _mcquant(env)
    out.append(("read_qupath", lambda: cs.read_qupath(qupath, pixel_size=0.5), [qupath], "\t", rows, COLUMNS))
    out.append(("read_mcmicro", lambda: cs.read_mcmicro(mcquant, pixel_size=0.65), [mcquant], ",", rows, COLUMNS))
    for kind, sep in (("halo", ","), ("inform", "\t"), ("cellprofiler", ",")):
        path = _tool_file(kind, env)
        read = getattr(cs, f"read_{kind}")
        out.append((f"read_{kind}", (lambda r, p: lambda: r(p, pixel_size=0.5))(read, path), [path], sep, rows,
                    TOOL_MARKERS + 5))
    halo = _tool_file("halo", env)
    out.append(("read_export_halo", lambda: cs.read_export(halo, pixel_size=0.5), [halo], ",", rows, TOOL_MARKERS + 5))
    batch = data / f"inform{INFORM_FIELDS}-{rows}x{TOOL_MARKERS}"
    fields = write_inform_batch(batch, rows)
    out.append((f"read_inform_{INFORM_FIELDS}_fields", lambda: cs.read_inform(batch, pixel_size=0.5), fields, "\t",
                rows * INFORM_FIELDS, TOOL_MARKERS + 5))
    for case, images, folder_of in (("read_steinbock", STEINBOCK_IMAGES, _steinbock),
                                    ("read_steinbock_15_images", 15, _steinbock_15)):
        folder = folder_of(Env(n=max(rows, images), f=COLUMNS, data=data, work=data / "scratch"))
        out.append((case, (lambda f: lambda: cs.read_steinbock(f, aggregation="mean",
                                                                neighbors_method="mask_touching"))(folder),
                     _tables_of(folder), ",", max(rows, images), STEINBOCK_CHANNELS + 5))
    return out


def small_rows(data: Path, rows: int, repeat: int, only: list[str]) -> list[dict[str, Any]]:
    """A result row per reader at ``rows`` rows: the reader and ``pandas.read_csv`` of the same files, in one
    process, in turn ``repeat`` times (each once untimed first); wall and CPU seconds, min and median."""
    import pandas as pd

    found = []
    for case, read, files, sep, cells, columns in small_exports(data, rows):
        if only and not any(w in case.lower() for w in only):
            continue
        baseline = (lambda fs, s: lambda: [pd.read_csv(f, sep=s) for f in fs])(files, sep)
        times: dict[str, list[float]] = {"ours": [], "baseline": []}
        cpu: dict[str, list[float]] = {"ours": [], "baseline": []}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the readers' notes (assumed aggregation ...) once per call
            read(), baseline()
            for _ in range(repeat):
                for side, call in (("ours", read), ("baseline", baseline)):
                    wall, process = time.perf_counter(), time.process_time()
                    call()
                    times[side].append(time.perf_counter() - wall)
                    cpu[side].append(time.process_time() - process)
        found.append(_small_row(case, cells, columns, sum(f.stat().st_size for f in files), times, cpu))
    return found


def _small_row(case: str, cells: int, columns: int, size: int, times: dict[str, list[float]],
               cpu: dict[str, list[float]]) -> dict[str, Any]:
    ours, base = min(times["ours"]), min(times["baseline"])
    extra = ours - base
    met = extra <= SMALL_EXTRA_S if cells <= FEW_HUNDRED else ours / base <= SMALL_RATIO
    return {"operation": case, "baseline": "pandas.read_csv of the same files, same process", "n_cells": cells,
            "n_features": columns, "big": False, "goal": SMALL_GOAL, "file_bytes": size,
            "ours_min_s": ours, "ours_median_s": statistics.median(times["ours"]), "ours_times_s": times["ours"],
            "baseline_min_s": base, "baseline_median_s": statistics.median(times["baseline"]),
            "baseline_times_s": times["baseline"], "ours_cpu_min_s": min(cpu["ours"]),
            "baseline_cpu_min_s": min(cpu["baseline"]), "ratio": ours / base,
            "cpu_ratio": min(cpu["ours"]) / min(cpu["baseline"]), "extra_s": extra, "goal_met": bool(met)}


def _small_line(row: dict[str, Any]) -> str:
    return (f"| {row['operation']} | {row['n_cells']:,} x {row['n_features']} | {row['file_bytes'] / 1e6:.2f} MB "
            f"| {row['ours_min_s'] * 1e3:.2f} ({row['ours_median_s'] * 1e3:.2f}) "
            f"| {row['baseline_min_s'] * 1e3:.2f} ({row['baseline_median_s'] * 1e3:.2f}) | {row['ratio']:.2f}x "
            f"| {row['extra_s'] * 1e3:+.1f} | {'yes' if row['goal_met'] else 'no'} |")


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.readers``: the small-export rows (see the module docstring); JSON in the format of
    ``benchmarks.run`` (``benchmarks.report`` renders it)."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.readers",
                                description="every reader beside pandas.read_csv on small exports, in one process")
    p.add_argument("--rows", default=",".join(map(str, SMALL_ROWS)), help="rows per export, comma separated")
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--only", default="", help="cases whose name contains one of these texts (comma separated)")
    p.add_argument("--data", type=Path, default=ROOT / "benchmarks" / ".data", help="where the exports are written")
    p.add_argument("--json", type=Path, default=None, help="JSON output (default: DATA/readers-small.json)")
    args = p.parse_args(argv)
    args.data.mkdir(parents=True, exist_ok=True)
    only = [w.strip().lower() for w in args.only.split(",") if w.strip()]
    info, rows = describe_machine(), []
    print("| case | cells x columns | files | ours ms, min (median) | pandas ms, min (median) | ratio | extra ms "
          "| goal met |\n|---|---|---|---|---|---|---|---|", flush=True)
    for n in (int(r) for r in args.rows.split(",") if r.strip()):
        for row in small_rows(args.data, n, args.repeat, only):
            rows.append(row)
            print(_small_line(row), flush=True)
    info["load_average_at_end"] = os.getloadavg()
    out = args.json or args.data / "readers-small.json"
    command = recorded_command("benchmarks.readers", argv if argv is not None else sys.argv[1:])
    document = {"created_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "command": command,
                "repeat": args.repeat, "one_worker_per_size": True, "machine": info, "rows": rows}
    out.write_text(json.dumps(document, indent=1, default=str))
    print(f"\nJSON: {out}  (goal: {SMALL_GOAL})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
