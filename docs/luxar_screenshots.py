"""Regenerate docs/img/luxar-*.png: the example scene in luxar's viewer (headless Chromium).

Run: .venv/bin/python docs/luxar_screenshots.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from widgets_screenshots import save_small  # noqa: E402  (docs/ is this script's folder, first on sys.path)

import cellspec_sc as cs  # noqa: E402
from browser import browser_page  # noqa: E402
from cellspec_sc.bridges.luxar import LuxarViewer  # noqa: E402

HINT = "localStorage.setItem('luxar.controlRail.hintDismissed', '1')"
READY = ("() => window.__luxarDebug && window.__luxarDebug.scene"
         " && window.__luxarDebug.getPerf().timeline.milestones.initUpdateDone")
SET = ("async ([i, v]) => { const m = window.__luxarDebug.sceneDimsManager; m.setDimensionValue(i, v);"
       " await m.waitForUpdate(); }")


def shoot(scene: Path, out: Path, dims: list[tuple[int, int]] = ()) -> None:
    """Screenshot ``scene`` in luxar's viewer into ``docs/img/`` under ``out``'s name.

    Parameters
    ----------
    scene
        The ``.luxar.zarr`` scene to open.
    out
        The image to write; only its name is used (the file goes to ``docs/img/``).
    dims
        ``(index, value)`` pairs: scene dimensions set, in order, before the screenshot.
    """
    with LuxarViewer(scene) as viewer, browser_page(Path(tempfile.mkdtemp()), init_script=HINT) as (page, _):
        page.goto(viewer.url + "&debug&dpr=1&renderer=webgl&noOpfs")
        page.wait_for_function(READY, timeout=180_000)
        page.wait_for_timeout(1500)
        for index, value in dims:
            page.evaluate(SET, [index, value])
            page.wait_for_timeout(2500)
        save_small(page.screenshot(), out.name)  # 128-colour palette, written under docs/img/


def main() -> None:
    """Regenerate every ``docs/img/luxar-*.png`` from the example."""
    import scanpy as sc

    work = Path(tempfile.mkdtemp())
    img = HERE / "img"
    x = cs.example(n_cells=6000)  # two 650 x 490 um sections: tumour nests, T cells at their margins, stroma
    scene = cs.to_luxar(x, work / "a.luxar.zarr", layers=["cells", "marker:CD3e"])
    shoot(scene, img / "luxar-default.png")
    shoot(scene, img / "luxar-marker.png", [(2, 1)])  # 'colour by' -> CD3e
    adata = cs.to_anndata(x)
    sc.pp.pca(adata, n_comps=5)
    scene = cs.to_luxar(adata, work / "b.luxar.zarr", layers=["category:classification", "embedding:X_pca"])
    shoot(scene, img / "luxar-category-embedding.png", [(2, 4)])  # 'classification' -> one class
    scene = cs.to_luxar(x, work / "c.luxar.zarr", layers=["marker:CD3e"], layout="stack")
    shoot(scene, img / "luxar-stack.png", [(2, 1)])  # 'image' -> img2
    small = cs.example(n_cells=300, adjacency=True, outlines=True)  # outlines: GeoJSON named by geometry_ref
    scene = cs.to_luxar(small, work / "d.luxar.zarr", layers=["cells", "outlines", "adjacency"])
    shoot(scene, img / "luxar-outlines.png")


if __name__ == "__main__":
    main()
