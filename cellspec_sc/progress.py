"""Progress bars and log messages for long work (one home for every module that reads, writes or converts).

Bars come from :mod:`tqdm.auto`: a widget bar in a notebook, a text bar on stderr in a terminal, and
nothing when stderr is not a terminal (a pipe, a log file, CI). Every bar also logs one INFO line when
it ends (what, how many, how long) through :mod:`logging` under the ``cellspec_sc`` logger.

Small work stays quiet: a bar is shown only when the work touches at least :data:`QUIET_BELOW` table
values (rows x columns: 20 million, e.g. 100,000 cells x 200 features, about a second of reading).
The example object, tests and doctests therefore print nothing.

Use it in three lines::

    with progress(n_rows, "reading cells.parquet", unit="rows", size=n_rows * n_columns) as bar:
        for batch in batches:
            bar.update(len(batch))

``size`` is the amount of work in table values (default ``total``). :func:`set_verbosity` changes
this for the whole process: ``"quiet"`` hides every bar, ``"verbose"`` shows a bar whatever the size
(still nothing on a pipe); ``"normal"`` is the default. The ``cellspec`` command sets it from
``-q/--quiet`` and ``-v/--verbose``.

>>> with progress(3, "counting", unit="steps") as bar:  # 3 values: below QUIET_BELOW, so no bar
...     for _ in range(3):
...         bar.update(1)
>>> bar.disable
True
>>> set_verbosity("loud")
Traceback (most recent call last):
...
cellspec_sc.errors.InputError: verbosity must be one of 'quiet', 'normal', 'verbose', not 'loud'
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tqdm.auto import tqdm

from cellspec_sc.errors import InputError

__all__ = ["LEVELS", "QUIET_BELOW", "logger", "progress", "set_verbosity", "shows_bar"]

logger = logging.getLogger("cellspec_sc")
logger.addHandler(logging.NullHandler())

QUIET_BELOW = 20_000_000
LEVELS = ("quiet", "normal", "verbose")
_state = {"verbosity": "normal"}


def set_verbosity(level: str) -> str:
    """Set ``"quiet"``, ``"normal"`` or ``"verbose"`` for every later bar; returns the previous level."""
    if level not in LEVELS:
        raise InputError(f"verbosity must be one of {', '.join(map(repr, LEVELS))}, not {level!r}")
    previous, _state["verbosity"] = _state["verbosity"], level
    return previous


def shows_bar(size: float) -> bool:
    """Whether work of ``size`` table values gets a bar at the current verbosity (before the TTY test).

    >>> shows_bar(1_000), shows_bar(QUIET_BELOW)
    (False, True)
    """
    level = _state["verbosity"]
    return level == "verbose" or (level == "normal" and size >= QUIET_BELOW)


@contextmanager
def progress(total: float, description: str, *, unit: str = "rows", size: float | None = None,
             show: bool | None = None) -> Iterator[tqdm]:
    """Show a tqdm bar of ``total`` units while the block runs, when :func:`shows_bar` says so.

    The bar appears when stderr is a terminal or in a notebook. ``description``, the count and the time are
    logged at INFO when the block ends without an error.

    Parameters
    ----------
    total
        The number of units the block processes.
    description
        The bar's label (and the log message's).
    unit
        The name of a unit.
    size
        The size :func:`shows_bar` decides on (default: ``total``).
    show
        ``True`` shows the bar whatever the size, verbosity and stream, ``False`` never (a caller's own
        switch, e.g. ``cohort.validate(progress=False)``); ``None`` leaves it to :func:`shows_bar`.

    Yields
    ------
    tqdm
        The bar (call ``bar.update(n)``).

    Examples
    --------
    >>> with progress(2, "directories", unit="dirs", size=float("inf"), show=False) as bar:
    ...     bar.update(2)
    >>> bar.disable
    True
    """
    shown = shows_bar(total if size is None else size) if show is None else show
    started = time.perf_counter()
    # disable=None: tqdm turns itself off when stderr is not a TTY (the notebook bar is always on)
    disable = True if not shown else None if show is None else False
    # counts under 10,000 (directories, steps) as integers: '2/3', not '2.00/3.00'
    with tqdm(total=total, desc=description, unit=unit, unit_scale=total >= 10_000, leave=False,
              dynamic_ncols=True, disable=disable) as bar:
        yield bar
    logger.info("%s: %s %s in %.1f s", description, f"{total:,}", unit, time.perf_counter() - started)
