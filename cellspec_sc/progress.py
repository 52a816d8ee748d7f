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

``size`` is the amount of work in table values (default ``total``). :data:`settings` (``cs.settings``, in
the manner of ``sc.settings``) holds what is global for the whole process: ``settings.verbosity``
(``"quiet"`` hides every bar, ``"verbose"`` shows a bar whatever the size, still nothing on a pipe;
``"normal"`` is the default), ``settings.progress_bars`` (``False``: no bar at all, whatever the verbosity)
and ``settings.quiet_below`` (the size from which ``"normal"`` shows a bar). The ``cellspec`` command sets
the verbosity from ``-q/--quiet`` and ``-v/--verbose``.

>>> with progress(3, "counting", unit="steps") as bar:  # 3 values: below QUIET_BELOW, so no bar
...     for _ in range(3):
...         bar.update(1)
>>> bar.disable
True
>>> settings.verbosity = "loud"
Traceback (most recent call last):
...
cellspec_sc.errors.InputError: settings.verbosity must be one of 'quiet', 'normal', 'verbose', not 'loud'
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tqdm.auto import tqdm

from cellspec_sc.errors import InputError, argument_error, is_count

__all__ = ["LEVELS", "QUIET_BELOW", "Settings", "logger", "progress", "set_verbosity", "settings", "shows_bar", "step"]

logger = logging.getLogger("cellspec_sc")
logger.addHandler(logging.NullHandler())

QUIET_BELOW = 20_000_000
LEVELS = ("quiet", "normal", "verbose")


class Settings:
    """What is global to cellspec_sc in this process, as ``sc.settings`` is to scanpy: ``cs.settings``.

    Attributes
    ----------
    verbosity
        ``"quiet"`` (no bar), ``"normal"`` (a bar for big work only, the default) or ``"verbose"`` (a bar
        whatever the size); bars appear on a terminal or in a notebook, never on a pipe.
    progress_bars
        ``False`` turns every bar off (``True``, the default: bars as the verbosity says).
    quiet_below
        The amount of work, in table values (rows x columns), from which ``"normal"`` shows a bar
        (default :data:`QUIET_BELOW`, 20 million).

    Examples
    --------
    >>> import cellspec_sc as cs
    >>> cs.settings.verbosity
    'normal'
    >>> with cs.settings.override(progress_bars=False):
    ...     cs.settings.progress_bars
    False
    >>> cs.settings
    settings(verbosity='normal', progress_bars=True, quiet_below=20000000)
    """

    __slots__ = ("_values",)
    _NAMES = ("verbosity", "progress_bars", "quiet_below")

    def __init__(self) -> None:
        self._values: dict[str, Any] = {"verbosity": "normal", "progress_bars": True, "quiet_below": None}

    @property
    def verbosity(self) -> str:
        """``"quiet"``, ``"normal"`` or ``"verbose"``."""
        return self._values["verbosity"]

    @verbosity.setter
    def verbosity(self, level: str) -> None:
        if level not in LEVELS:
            raise InputError(f"settings.verbosity must be one of {', '.join(map(repr, LEVELS))}, not {level!r}")
        self._values["verbosity"] = level

    @property
    def progress_bars(self) -> bool:
        """Whether bars may appear at all."""
        return self._values["progress_bars"]

    @progress_bars.setter
    def progress_bars(self, on: bool) -> None:
        if not isinstance(on, bool):
            raise argument_error("settings", "progress_bars", on, "True or False")
        self._values["progress_bars"] = on

    @property
    def quiet_below(self) -> int:
        """The size (table values) from which a bar appears at verbosity ``"normal"``."""
        chosen = self._values["quiet_below"]
        return QUIET_BELOW if chosen is None else chosen

    @quiet_below.setter
    def quiet_below(self, size: int) -> None:
        if not is_count(size):
            raise argument_error("settings", "quiet_below", size, "an integer >= 0 (table values)")
        self._values["quiet_below"] = int(size)

    @contextmanager
    def override(self, **values: Any) -> Iterator[Settings]:
        """Change settings for the duration of a ``with`` block, then restore them.

        >>> with settings.override(verbosity="quiet"):
        ...     settings.verbosity
        'quiet'
        >>> settings.verbosity
        'normal'
        """
        unknown = sorted(set(values) - set(self._NAMES))
        if unknown:
            raise InputError(f"settings has no {', '.join(map(repr, unknown))}; settings: {', '.join(self._NAMES)}")
        before = dict(self._values)
        try:
            for name, value in values.items():
                setattr(self, name, value)
            yield self
        finally:
            self._values.update(before)

    def __repr__(self) -> str:
        return "settings(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self._NAMES) + ")"


settings = Settings()


def set_verbosity(level: str) -> str:
    """Set ``settings.verbosity`` (``"quiet"``, ``"normal"`` or ``"verbose"``); returns the previous level.

    The same as ``cs.settings.verbosity = level``, which is the documented way.
    """
    previous = settings.verbosity
    settings.verbosity = level
    return previous


def shows_bar(size: float) -> bool:
    """Whether work of ``size`` table values gets a bar at the current settings (before the TTY test).

    >>> shows_bar(1_000), shows_bar(QUIET_BELOW)
    (False, True)
    """
    level = settings.verbosity
    return settings.progress_bars and (level == "verbose" or (level == "normal" and size >= settings.quiet_below))


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
    shown = shows_bar(total if size is None else size) if show is None else show and settings.progress_bars
    started = time.perf_counter()
    # disable=None: tqdm turns itself off when stderr is not a TTY (the notebook bar is always on)
    disable = True if not shown else None if show is None else False
    # counts under 10,000 (directories, steps) as integers: '2/3', not '2.00/3.00'
    with tqdm(total=total, desc=description, unit=unit, unit_scale=total >= 10_000, leave=False,
              dynamic_ncols=True, disable=disable) as bar:
        yield bar
    logger.info("%s: %s %s in %.1f s", description, f"{total:,}", unit, time.perf_counter() - started)


@contextmanager
def step(description: str) -> Iterator[None]:
    """Log one INFO line, ``description: done in <seconds> s``, when the block ends without an error.

    For a step without a count of its own (opening a source, parsing an export, compiling a scene); work that
    counts rows uses :func:`progress`, which logs the same way. ``cellspec -v`` prints these lines.

    >>> with step("compiling the scene"):  # logged at INFO under the cellspec_sc logger
    ...     pass
    """
    started = time.perf_counter()
    yield
    logger.info("%s: done in %.1f s", description, time.perf_counter() - started)
