"""Serve a compiled scene with luxar's own viewer (``luxar viewer``) on 127.0.0.1.

Used by ``cellspec luxar ... --open`` and, in notebooks, by :func:`show_luxar`,
which shows the scene inline in an IFrame and stops the viewer when asked.

>>> view = show_luxar("cells.luxar.zarr")  # doctest: +SKIP
>>> view                                    # doctest: +SKIP
>>> view.stop()                             # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from cellspec_sc.errors import CellspecError, InputError

HOST = "127.0.0.1"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


class LuxarViewer:
    """A ``luxar viewer`` process serving one scene: ``.url`` to open, ``.stop()`` to end it.

    The process runs in its own session so that stopping it also stops the data server it starts.
    """

    def __init__(self, scene: str | Path, *, port: int | None = None, data_port: int | None = None,
                 open_browser: bool = False):
        self.scene = Path(scene)
        if not (self.scene / "zarr.json").exists() and not (self.scene / ".zattrs").exists():
            raise InputError(f"{self.scene}: not a compiled Luxar scene (no zarr.json); build it with to_luxar")
        self.port = port or free_port()
        self.data_port = data_port or free_port()
        self.open_browser = open_browser
        self.process: subprocess.Popen | None = None
        self._log = None

    @property
    def url(self) -> str:
        """The viewer page with this scene as its source."""
        return f"http://{HOST}:{self.port}/?src=http://{HOST}:{self.data_port}"

    def command(self) -> list[str]:
        """The luxar command line that serves the scene (luxar's console script via ``python -m luxar``)."""
        return [sys.executable, "-m", "luxar", "viewer", "--data", str(self.scene), "--host", HOST,
                "--port", str(self.port), "--data-port", str(self.data_port),
                "--open" if self.open_browser else "--no-open"]

    def start(self, timeout: float = 60.0) -> LuxarViewer:
        """Start the viewer and wait until both the page and the scene answer."""
        self._log = tempfile.TemporaryFile()
        try:
            with interrupts_held():  # a signal now would leave a child that nothing knows of
                self.process = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT,
                                                start_new_session=True)
            self._wait_for(f"http://{HOST}:{self.data_port}/zarr.json", timeout)
            self._wait_for(f"http://{HOST}:{self.port}/", timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_for(self, url: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise CellspecError(f"luxar viewer exited with {self.process.returncode}: {self._log_tail()}")
            try:
                with urllib.request.urlopen(url, timeout=2):
                    return
            except OSError:
                time.sleep(0.25)
        raise CellspecError(f"luxar viewer did not answer {url} within {timeout:.0f} s: {self._log_tail()}")

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-1500:]

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def wait(self) -> int:
        """Block until the viewer ends; Ctrl-C or SIGTERM stop it (and its data server) first."""
        try:
            with signals_interrupt():
                return self.process.wait() if self.process else 0
        except KeyboardInterrupt:
            return 0
        finally:
            self.stop()

    def stop(self) -> None:
        """Stop the viewer and its data server (SIGTERM to the session, SIGKILL after 10 s)."""
        with interrupts_held(reraise=False):  # a second Ctrl-C or SIGTERM asks for what is being done already
            if self.process is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGTERM)
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(self.process.pid, signal.SIGKILL)
                    self.process.wait()
                self.process = None  # reaped: a second stop() must not signal a process group id reused since
            if self._log is not None:
                self._log.close()
                self._log = None

    def __enter__(self) -> LuxarViewer:
        return self.start() if self.process is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _repr_html_(self) -> str:
        if not self.running:
            return f"<p>Luxar viewer for {self.scene.name} is stopped.</p>"
        from IPython.display import IFrame

        return IFrame(self.url, width=self.width, height=self.height)._repr_html_()

    width: str | int = "100%"
    height: int = 600


_interrupts = {"held": False, "pending": False}


def _interrupt(signum: int, frame: object) -> None:
    if _interrupts["held"]:
        _interrupts["pending"] = True
        return
    raise KeyboardInterrupt


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGTERM and SIGINT raise :class:`KeyboardInterrupt` inside the block (in the main thread only), so a
    command that started a viewer stops it in its ``finally``/``except`` whenever it is told to end."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, _interrupt) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@contextlib.contextmanager
def interrupts_held(reraise: bool = True) -> Iterator[None]:
    """Under :func:`signals_interrupt`, a signal arriving inside the block waits for its end (then raises
    :class:`KeyboardInterrupt` unless ``reraise`` is False)."""
    outer = _interrupts["held"]
    _interrupts["held"] = True
    try:
        yield
    finally:
        _interrupts["held"] = outer
        pending = _interrupts["pending"] and not outer
        if not outer:
            _interrupts["pending"] = False
        if pending and reraise:
            raise KeyboardInterrupt


def show_luxar(scene: str | Path, *, width: str | int = "100%", height: int = 600, port: int | None = None,
               data_port: int | None = None) -> LuxarViewer:
    """Serve a scene and return a viewer that displays inline in a notebook (an IFrame); call ``.stop()`` after.

    The IFrame loads from 127.0.0.1, so it works where the notebook's browser runs on the same machine
    as the kernel (JupyterLab on your laptop); on a remote kernel forward both ports.

    Parameters
    ----------
    scene
        A scene directory written by :func:`~cellspec_sc.to_luxar`.
    width, height
        The size of the IFrame.
    port, data_port
        The ports of the viewer page and of the scene's data (default: free ones).

    Returns
    -------
    LuxarViewer
        Running; its notebook display is the IFrame.

    Raises
    ------
    InputError
        When ``scene`` is not a compiled scene.
    CellspecError
        When the viewer exits or does not answer within a minute (its output is in the message).

    Examples
    --------
    >>> view = show_luxar("cells.luxar.zarr")  # doctest: +SKIP
    >>> view.stop()  # doctest: +SKIP
    """
    viewer = LuxarViewer(scene, port=port, data_port=data_port)
    viewer.width, viewer.height = width, height
    return viewer.start()
