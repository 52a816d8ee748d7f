"""The preview in a real browser: JupyterLab with the real widget manager, and the HTML snapshot from file://.

Headless Debian chromium through Playwright (tests/browser.py). JupyterLab runs
on 127.0.0.1 with a token and pre-written settings (no news pop-up, no notebook
windowing), the kernel is the test interpreter's.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

import nbformat
import pytest

from browser import browser_page, free_port, screenshot_is_blank, server

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "preview.ipynb"
pytestmark = pytest.mark.browser

_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                         "checkForUpdates": False},
}


def _write_settings(settings_dir: Path) -> None:
    for name, values in _SETTINGS.items():
        path = settings_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


def _lab_command(root: Path, tmp: Path, port: int, token: str) -> list[str]:
    # `-m jupyterlab`, not `-m jupyter lab`: the latter execs the jupyter-lab script found on PATH
    return [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
            f"--ServerApp.token={token}", "--allow-root", f"--ServerApp.root_dir={root}",
            "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            f"--LabApp.workspaces_dir={tmp / 'workspaces'}", f"--LabApp.user_settings_dir={tmp / 'settings'}",
            "--LabApp.expose_app_in_browser=True", "--ServerApp.port_retries=0"]


def _outside_requests(page, base: str) -> list[str]:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url)
            if not r.url.startswith((base, "data:", "blob:", "about:")) else None)
    return requests


_KERNEL_IDLE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === 'idle' && w.sessionContext.isReady;
}"""


def _dropdown(root, label: str):
    return root.locator(f".widget-dropdown:has(label:text-is('{label}')) select").first


# a kernel starting and running the notebook's cells took over 60 s while the rest of the suite loaded both cores;
# a bound, not a pause: a passing run waits only as long as the kernel needs
KERNEL_WAIT_MS = 240_000


@contextlib.contextmanager
def lab_with_preview(tmp: Path, *, viewport: tuple[int, int] = (1400, 1000)):
    """JupyterLab serving a copy of notebooks/preview.ipynb, and a page that has run all its cells.

    The copy leaves out the notebook's cleanup cell, and the kernel's TMPDIR is a folder of the test, so the
    exports stay in the folder the notebook made with ``tempfile.mkdtemp``.
    Yields (page, errors, outside requests, the widget locator, the notebook's output folder).
    """
    root, kernel_tmp = tmp / "root", tmp / "kernel-tmp"
    root.mkdir()
    kernel_tmp.mkdir()
    nbformat.write(without_cleanup(nbformat.read(NOTEBOOK, as_version=4)), root / "preview.ipynb")
    _write_settings(tmp / "settings")
    port, token = free_port(), "cellspec-test-token"
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp / "config"), "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
           "TMPDIR": str(kernel_tmp)}
    with server(_lab_command(root, tmp, port, token), ready_url=f"{base}/api/status?token={token}",
                cwd=root, env=env), browser_page(tmp / "profile", viewport=viewport) as (page, errors):
        outside = _outside_requests(page, base)
        page.goto(f"{base}/lab/tree/preview.ipynb?token={token}&reset")
        page.wait_for_function(_KERNEL_IDLE, timeout=KERNEL_WAIT_MS)
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        widget = page.locator(".cellspec-preview").first
        widget.wait_for(timeout=KERNEL_WAIT_MS)
        histogram = widget.locator(".widget-tab-contents img").first
        page.wait_for_function("(el) => el.naturalWidth > 0", arg=histogram.element_handle(), timeout=30_000)
        page.wait_for_function(_KERNEL_IDLE, timeout=KERNEL_WAIT_MS)  # every cell has run
        widget.scroll_into_view_if_needed()
        made = sorted(kernel_tmp.glob("cellspec-preview-*"))
        assert len(made) == 1, f"the notebook's output folder in {kernel_tmp}: {made}"
        yield page, errors, outside, widget, made[0]


def without_cleanup(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook without its last code cell, which removes the output folder (and the note above it)."""
    last = max(k for k, c in enumerate(nb.cells) if c.cell_type == "code")
    assert "shutil.rmtree(work)" in nb.cells[last].source, "notebooks/preview.ipynb ends with its cleanup cell"
    nb.cells = nb.cells[:last - 1] if nb.cells[last - 1].cell_type == "markdown" else nb.cells[:last]
    return nb


def test_preview_in_jupyterlab(tmp_path):
    with lab_with_preview(tmp_path) as (page, errors, outside, widget, out):
        histogram = widget.locator(".widget-tab-contents img").first
        assert (out / "preview.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        html = (out / "preview.html").read_text(encoding="utf-8")
        assert "nucleus:FOXP3:mean" in html and "data:image/png;base64," in html  # the feature selected then

        # the notebook's later cells selected nucleus:FOXP3:mean through Python: the controls show it
        assert _dropdown(widget, "marker").input_value() == "FOXP3"
        assert _dropdown(widget, "compartment").input_value() == "nucleus"
        before_src = histogram.get_attribute("src")
        before_png = widget.screenshot()
        assert not screenshot_is_blank(before_png, min_colours=20)

        # a user changes the marker through the real control: the histogram is redrawn by the kernel
        _dropdown(widget, "marker").select_option("CD3e")
        page.wait_for_function("([el, old]) => el.src !== old && el.naturalWidth > 0",
                               arg=[histogram.element_handle(), before_src], timeout=30_000)
        assert widget.locator(".widget-html-content", has_text="q99").first.is_visible()
        after_png = widget.screenshot()
        assert after_png != before_png and not screenshot_is_blank(after_png, min_colours=20)

        # every other panel renders
        widget.locator(".lm-TabBar-tab", has_text="Space").click()
        space = widget.locator(".widget-tab-contents img").nth(1)
        page.wait_for_function("(el) => el.naturalWidth > 0 && el.offsetParent !== null",
                               arg=space.element_handle(), timeout=30_000)
        assert not screenshot_is_blank(widget.screenshot(), min_colours=20)
        widget.locator(".lm-TabBar-tab", has_text="Channels").click()
        widget.get_by_text("Channels of img1").wait_for(timeout=30_000)
        widget.locator(".lm-TabBar-tab", has_text="Validation").click()
        widget.get_by_text("cellspec validation: OK").wait_for(timeout=60_000)
        page.screenshot(path=str(tmp_path / "lab.png"))
    assert not errors, errors
    assert not outside, f"requests left the machine: {outside}"


def test_snapshot_opens_offline(tmp_path):
    from cellspec_sc.cli.main import main

    report = tmp_path / "report.html"
    assert main(["preview", "example", "-o", str(report), "--max-features", "6", "--colour-by", "feature"]) == 0
    with browser_page(tmp_path / "profile", viewport=(1200, 900)) as (page, errors):
        outside = _outside_requests(page, "file://")
        page.goto(report.as_uri())
        histogram, space = page.locator("#histogram"), page.locator("#map")
        for img in (histogram, space):
            page.wait_for_function("(el) => el.complete && el.naturalWidth > 0", arg=img.element_handle())
        before = (histogram.get_attribute("src"), space.get_attribute("src"), page.screenshot(full_page=True))
        assert not screenshot_is_blank(histogram.screenshot(), min_colours=10)
        assert not screenshot_is_blank(space.screenshot(), min_colours=10)

        page.locator("#feature").select_option("cell:CD3e:mean")
        page.wait_for_function("(old) => document.getElementById('histogram').src !== old", arg=before[0])
        after = (histogram.get_attribute("src"), space.get_attribute("src"), page.screenshot(full_page=True))
        assert after[0] != before[0] and after[1] != before[1] and after[2] != before[2]
        assert page.locator("#summary").inner_text() != ""

        page.locator("#colour").select_option("classification")
        page.wait_for_function("(old) => document.getElementById('map').src !== old", arg=after[1])
        assert page.get_by_text("Channels of img2").is_visible()
        assert page.get_by_text("cellspec validation: OK").is_visible()
    assert not errors, errors
    assert not outside, f"the snapshot requested {outside}"
