"""Regenerate the screenshots of docs/widgets.md: `.venv/bin/python docs/widgets_screenshots.py`.

Runs the preview notebook in JupyterLab in headless chromium (the same set-up as
tests/test_widgets_browser.py) and opens a snapshot written by `cellspec preview`.
Images are reduced to a 128-colour palette to keep the repository small.
"""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

from PIL import Image

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from test_widgets_browser import _dropdown, lab_with_preview  # noqa: E402

from browser import browser_page  # noqa: E402

OUT = HERE / "img"


def save_small(png: bytes, name: str) -> None:
    """Write a screenshot to ``docs/img/``, reduced to a 128-colour palette, and print its size.

    Parameters
    ----------
    png
        The screenshot, PNG-encoded.
    name
        The file name under ``docs/img/``.
    """
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=128)
    image.save(OUT / name, optimize=True)
    print(f"{OUT / name}: {(OUT / name).stat().st_size // 1024} kB")


def lab_screenshots(tmp: Path) -> None:
    """Screenshot the preview widget's Features, Space and Channels tabs in JupyterLab.

    Parameters
    ----------
    tmp
        A scratch folder for the notebook server and browser profile.
    """
    with lab_with_preview(tmp, viewport=(1300, 2400)) as (page, _errors, _outside, widget, _root):
        _dropdown(widget, "marker").select_option("CD3e")
        widget.get_by_role("button", name="log").click()
        page.wait_for_timeout(3000)
        save_small(widget.screenshot(), "widgets-features.png")
        widget.locator(".lm-TabBar-tab", has_text="Space").click()
        page.wait_for_timeout(2000)
        save_small(widget.screenshot(), "widgets-space.png")
        widget.locator(".lm-TabBar-tab", has_text="Channels").click()
        page.wait_for_timeout(1000)
        save_small(widget.screenshot(), "widgets-channels.png")


def snapshot_screenshot(tmp: Path) -> None:
    """Screenshot the standalone HTML snapshot ``cellspec preview`` writes for the example.

    Parameters
    ----------
    tmp
        A scratch folder for the report and the browser profile.
    """
    from cellspec_sc.cli.main import main

    report = tmp / "report.html"
    main(["preview", "example", "-o", str(report), "--max-features", "4"])
    with browser_page(tmp / "profile2", viewport=(1100, 900)) as (page, _errors):
        page.goto(report.as_uri())
        page.wait_for_timeout(500)
        save_small(page.screenshot(), "widgets-snapshot.png")


def view_png(tmp: Path) -> None:
    """Save the preview's space view of a 20,000-cell example as ``widgets-view.png``.

    Parameters
    ----------
    tmp
        A scratch folder for the full-size PNG.
    """
    import cellspec_sc as cs

    w = cs.example(n_cells=20_000, region_layers=("tissue",)).preview(feature="cell:Pan-Cytokeratin:mean")
    w.select(colour_by="classification")
    save_small(w.save_png(tmp / "view.png").read_bytes(), "widgets-view.png")


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        view_png(Path(d))
        snapshot_screenshot(Path(d))
        lab_screenshots(Path(d))
