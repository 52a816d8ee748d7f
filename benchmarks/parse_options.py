"""pyarrow's CSV parse with different options beside ``pandas.read_csv``, parse only, on one CPU.

The readers parse with pyarrow (the project's CSV parser). This measures what its options change in the parse
alone: CPU seconds (min over repetitions, each variant in turn so that other load hits all of them alike) of one
thread pinned to one CPU, as a ratio to pandas' C parser on the same file.

    python -m benchmarks.parse_options benchmarks/.data/qupath-1000000x120.tsv --repeat 3
    python -m benchmarks.parse_options benchmarks/.data/mcquant-1000000x120/slide--unmicst_cell.csv --only current,best

Variants (``--only`` picks some): ``current`` is what the readers pass (every column typed, 2 MB blocks, empty
fields null); the others change one thing, ``best`` every option that could only help.
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TEXT = {"Image", "Object ID", "Object type", "Name", "Classification", "Parent", "ROI", "CellID"}
"""Columns the readers read as text (QuPath's and mcquant's); every other column is a float64."""


def header_of(path: Path, sep: str) -> list[str]:
    """The column names of the file's first line (quotes stripped)."""
    with open(path, "rb") as handle:
        return [n.strip('"') for n in handle.readline().decode().rstrip("\r\n").split(sep)]


def variants(path: Path, sep: str) -> dict[str, Callable[[], Any]]:
    """Name -> a function parsing ``path`` once."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = header_of(path, sep)
    floats = [n for n in names if n not in TEXT]
    typed = {n: (pa.string() if n in TEXT else pa.float64()) for n in names}

    def arrow(block: int = 1 << 21, types: dict | None = typed, quote: bool = True,
              **convert: Any) -> Callable[[], Any]:
        options = {"null_values": [""], "strings_can_be_null": True, "quoted_strings_can_be_null": True, **convert}
        if types is not None:
            options["column_types"] = types

        def parse() -> Any:
            return pacsv.read_csv(path, read_options=pacsv.ReadOptions(use_threads=False, block_size=block),
                                  parse_options=pacsv.ParseOptions(delimiter=sep, quote_char='"' if quote else False),
                                  convert_options=pacsv.ConvertOptions(**options))
        return parse

    def inferred() -> Any:
        return pacsv.read_csv(path, read_options=pacsv.ReadOptions(use_threads=False),
                              parse_options=pacsv.ParseOptions(delimiter=sep))

    return {
        "pandas": lambda: pd.read_csv(path, sep=sep),
        "current": arrow(),
        "inferred types (pyarrow's defaults)": inferred,
        "check_utf8=False": arrow(check_utf8=False),
        "strings_can_be_null=False": arrow(strings_can_be_null=False, quoted_strings_can_be_null=False),
        "timestamp_parsers=[]": arrow(timestamp_parsers=[]),
        "best": arrow(check_utf8=False, strings_can_be_null=False, quoted_strings_can_be_null=False,
                      timestamp_parsers=[]),
        "block 512 kB": arrow(block=1 << 19),
        "block 8 MB": arrow(block=1 << 23),
        "only the float columns": arrow(include_columns=floats),
        "only the text columns": arrow(include_columns=[n for n in names if n in TEXT]),
        "every column as text": arrow(types={n: pa.string() for n in names}),
        "no quoting": arrow(quote=False),
    }


def one_cpu() -> None:
    """Pin this process to one CPU, pyarrow and pandas to one thread."""
    import pandas as pd
    import pyarrow as pa

    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    try:
        pd.set_option("mode.max_threads", 1)
    except (KeyError, pd.errors.OptionError):  # an older pandas reads in one thread anyway
        pass


def measure(runs: dict[str, Callable[[], Any]], repeat: int) -> dict[str, list[float]]:
    """CPU seconds of every run, ``repeat`` rounds of all of them in turn, after an untimed pandas and pyarrow
    parse (imports, the allocators' first pages)."""
    for name in ("pandas", "current"):
        if name in runs:
            runs[name]()
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            gc.collect()
            start = time.process_time()
            result = run()
            cpu[name].append(time.process_time() - start)
            del result
    return cpu


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.parse_options", description=__doc__.split("\n\n")[0])
    p.add_argument("path", type=Path)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--only", default="", help="variant names, comma separated (default: all)")
    args = p.parse_args(argv)
    sep = "\t" if args.path.suffix in (".tsv", ".txt") else ","
    one_cpu()
    runs = variants(args.path, sep)
    wanted = [w.strip() for w in args.only.split(",") if w.strip()]
    if wanted:
        runs = {name: run for name, run in runs.items() if name in {"pandas", "current", *wanted}}
    cpu = measure(runs, args.repeat)
    pandas = min(cpu["pandas"])
    print(f"| {args.path.name}, one CPU | CPU s, min of {args.repeat} | x pandas |\n|---|---|---|")
    for name, times in cpu.items():
        print(f"| {name} | {min(times):.2f} | {min(times) / pandas:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
