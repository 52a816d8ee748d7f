"""Serve a compiled scene with luxar's own viewer page (``luxar viewer``) on 127.0.0.1, its data from a server of
this process that only its user can read.

The scene's data server is bound before anything is started (so the port printed and opened is the port bound),
answers only under a secret token made for this start (``http://127.0.0.1:PORT/<token>/zarr.json``), echoes the
token in a header so that the readiness check knows it reached this server and not another one on the port, and
refuses a ``Host`` header other than a loopback name (a web page of another site resolving its name to
127.0.0.1 cannot read the scene). The page's port is the one luxar reports it bound.

Used by ``cellspec luxar ... --open`` and, in notebooks, by :func:`show_luxar`,
which shows the scene inline in an IFrame and stops the viewer when asked.

>>> view = show_luxar("cells.luxar.zarr")  # doctest: +SKIP
>>> view                                    # doctest: +SKIP
>>> view.stop()                             # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import html
import http.server
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import webbrowser
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from cellspec_sc.errors import CellspecError, InputError

HOST = "127.0.0.1"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
TOKEN_HEADER = "X-Cellspec-Token"
_PAGE_PORT = re.compile(rb"https?://127\.0\.0\.1:(\d{1,5})/")


def loopback_host(value: str | None) -> bool:
    """Whether a ``Host`` header names this machine's loopback interface (any port).

    >>> loopback_host("127.0.0.1:8000"), loopback_host("localhost"), loopback_host("evil.example:8000")
    (True, True, False)
    """
    if not value:
        return False
    try:
        name = urlsplit(f"//{value}").hostname
    except ValueError:
        return False
    return name is not None and name.lower() in LOOPBACK_NAMES


class _SceneHandler(http.server.SimpleHTTPRequestHandler):
    """Files of one scene under ``/<token>/``, to loopback ``Host`` names only, with CORS for loopback pages."""

    token = ""

    def _admitted(self) -> str | None:
        """The path inside the scene, or None after refusing the request."""
        if not loopback_host(self.headers.get("Host")):
            self.send_error(403, "Host is not a loopback name")
            return None
        prefix = f"/{self.token}/"
        path = urlsplit(self.path).path
        if not secrets.compare_digest(path[:len(prefix)].encode(), prefix.encode()):
            self.send_error(403, "token required")
            return None
        return "/" + path[len(prefix):]

    def end_headers(self) -> None:
        origin = self.headers.get("Origin") or ""
        if loopback_host(urlsplit(origin).netloc):
            self.send_header("Access-Control-Allow-Origin", origin)
            self.send_header("Vary", "Origin")
        self.send_header(TOKEN_HEADER, self.token)
        super().end_headers()

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        inside = self._admitted()
        if inside is not None:
            self.path = inside
            super().do_GET()

    def do_HEAD(self) -> None:  # noqa: N802
        inside = self._admitted()
        if inside is not None:
            self.path = inside
            super().do_HEAD()

    def do_OPTIONS(self) -> None:  # noqa: N802
        if self._admitted() is not None:
            self.send_response(204)
            self.send_header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
            self.send_header("Access-Control-Allow-Headers", "*")
            self.end_headers()

    def list_directory(self, path: str | os.PathLike[str]) -> None:
        self.send_error(404, "no listing")
        return None

    def log_message(self, format: str, *args: object) -> None:
        pass


class SceneServer:
    """The data server of one scene: bound on creation (``port`` is the port bound), serving in a daemon thread
    once started, only under ``token``."""

    def __init__(self, scene: Path, port: int | None = None):
        self.token = secrets.token_urlsafe(24)
        handler = type("SceneHandler", (_SceneHandler,), {"token": self.token})
        directory = str(scene.resolve())
        self._server = http.server.ThreadingHTTPServer(
            (HOST, port or 0), lambda *a: handler(*a, directory=directory))
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/{self.token}"

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever, name="cellspec-scene-server", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(10)
            self._thread = None
        self._server.server_close()


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
        self.requested_data_port = data_port
        self.data: SceneServer | None = None
        self.open_browser = open_browser
        self.process: subprocess.Popen | None = None
        self._log = None

    @property
    def data_port(self) -> int | None:
        """The port the scene's data server bound (None before :meth:`start`)."""
        return self.data.port if self.data is not None else None

    @property
    def url(self) -> str:
        """The viewer page with this scene (under its secret token) as its source."""
        return f"http://{HOST}:{self.port}/?src={self.data.url if self.data else ''}"

    def command(self) -> list[str]:
        """The luxar command line that serves the viewer page (luxar's console script via ``python -m luxar``);
        the scene's data comes from this process's own server."""
        return [sys.executable, "-m", "luxar", "viewer", "--host", HOST, "--port", str(self.port), "--no-open"]

    def start(self, timeout: float = 60.0) -> LuxarViewer:
        """Bind and start the scene's data server, start the viewer page, and wait until both answer (the data
        server with this start's token, the page on the port luxar reports)."""
        self._log = tempfile.TemporaryFile()
        try:
            try:
                self.data = SceneServer(self.scene, self.requested_data_port)
            except OSError as err:
                raise CellspecError(f"cannot serve {self.scene} on {HOST}:{self.requested_data_port} "
                                    f"({err.strerror or err})") from None
            self.data.start()
            self._wait_for(f"{self.data.url}/zarr.json", timeout, token=self.data.token)
            with interrupts_held():  # a signal now would leave a child that nothing knows of
                self.process = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT,
                                                start_new_session=True)
            self.port = self._page_port(timeout)
            self._wait_for(f"http://{HOST}:{self.port}/", timeout)
            if self.open_browser:
                webbrowser.open(self.url)
        except BaseException:
            self.stop()
            raise
        return self

    def _page_port(self, timeout: float) -> int:
        """The port luxar reports its page is served on (it moves on when the one asked for is taken)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise CellspecError(f"luxar viewer exited with {self.process.returncode}: {self._log_tail()}")
            self._log.seek(0)
            found = _PAGE_PORT.search(self._log.read())
            if found:
                return int(found.group(1))
            time.sleep(0.1)
        raise CellspecError(f"luxar viewer did not say where it serves within {timeout:.0f} s: {self._log_tail()}")

    def _wait_for(self, url: str, timeout: float, token: str | None = None) -> None:
        """Until ``url`` answers (with ``token`` echoed, when given: the answer came from this server)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise CellspecError(f"luxar viewer exited with {self.process.returncode}: {self._log_tail()}")
            try:
                with urllib.request.urlopen(url, timeout=2) as answer:
                    if token is None or secrets.compare_digest(answer.headers.get(TOKEN_HEADER, ""), token):
                        return
                    raise CellspecError(f"{url} was answered by another server (without this start's token)")
            except (urllib.error.HTTPError, OSError):
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
            if self.data is not None:
                self.data.stop()
                self.data = None
            if self._log is not None:
                self._log.close()
                self._log = None

    def __enter__(self) -> LuxarViewer:
        return self.start() if self.process is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _repr_html_(self) -> str:
        if not self.running:
            return f"<p>Luxar viewer for {html.escape(self.scene.name)} is stopped.</p>"
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
