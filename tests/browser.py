"""Shared helpers for tests that drive Debian's headless Chromium through Playwright.

Never call ``playwright install`` (it downloads browsers; this machine has no
internet): Chromium comes from Debian's ``chromium`` package, which ``.ci/run``
installs. Where it is missing the browser tests skip with a loud reason.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
    "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
    "--disable-sync",
]


def require_chromium() -> None:
    """Skip (loudly) where Debian's chromium is not installed."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"BROWSER TEST NOT RUN: {CHROMIUM} is missing; run `apt-get install -y chromium` (.ci/run does)")


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def browser_page(profile_dir: Path, *, init_script: str | None = None,
                 viewport: tuple[int, int] = (1200, 800)) -> Iterator[tuple[object, list[str]]]:
    """A Playwright page in a fresh Chromium profile, with a list collecting page and console errors."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile_dir), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": viewport[0], "height": viewport[1]})
        try:
            if init_script:
                context.add_init_script(init_script)
            page = context.pages[0] if context.pages else context.new_page()
            page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
            page.on("console", lambda msg: errors.append(f"console.{msg.type}: {msg.text}")
                    if msg.type == "error" else None)
            yield page, errors
        finally:
            context.close()


@contextlib.contextmanager
def server(cmd: Sequence[str], *, ready_url: str, timeout: float = 60.0, cwd: str | Path | None = None,
           env: dict[str, str] | None = None) -> Iterator[subprocess.Popen]:
    """Start a server in its own session, wait until ``ready_url`` answers, stop the whole group after."""
    log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"server-{os.getpid()}-{time.time_ns()}.log", "w+b")
    proc = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        _wait_for(ready_url, proc, timeout, log)
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def _wait_for(url: str, proc: subprocess.Popen, timeout: float, log) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"server exited with {proc.returncode}: {log.read().decode(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.25)
    log.seek(0)
    raise TimeoutError(f"{url} did not answer within {timeout}s: {log.read().decode(errors='replace')[-2000:]}")


def screenshot_is_blank(png: bytes, *, min_colours: int = 3, crop_left: int = 0) -> bool:
    """True if the screenshot holds fewer than ``min_colours`` distinct colours right of ``crop_left``."""
    import io

    import numpy as np
    from matplotlib import image as mpimg

    pixels = mpimg.imread(io.BytesIO(png), format="png")[:, crop_left:, :3]
    flat = (pixels.reshape(-1, 3) * 255).astype(np.uint8)
    return len(np.unique(flat, axis=0)) < min_colours
