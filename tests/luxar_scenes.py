"""Small CellSpec objects built for the Luxar tests, so that what they assert does not depend on cs.example(),
reading a compiled scene back (decoded arrays, CSR string channels, point counts), and looking at a scene in
luxar's viewer in headless Chromium (screen colours at cell positions)."""

from __future__ import annotations

import contextlib
import io

import luxar
import numpy as np
import pandas as pd
import zarr
from luxar.encoding import ArrayDecoder

import cellspec_sc as cs
from browser import browser_page
from cellspec_sc.bridges.luxar import LuxarViewer

FEATURE = "cell:CD3e:mean"
DECODER = ArrayDecoder()


def cells_object(image_sizes: dict[str, tuple[float, float]], cells: pd.DataFrame,
                 values: np.ndarray | None = None) -> cs.CellSpec:
    """A CellSpec with the given images (width, height in micrometres at 1 um per pixel), cells (cell_id,
    image_id, x, y, area, classification) and one feature, cell:CD3e:mean (marker CD3e)."""
    base = cs.example(n_cells=4, n_images=1)
    images = pd.DataFrame({"image_id": list(image_sizes), "sample_id": [f"s_{i}" for i in image_sizes],
                           "pixel_size": 1.0, "width_px": [int(w) for w, _ in image_sizes.values()],
                           "height_px": [int(h) for _, h in image_sizes.values()]})
    cells = cells.reset_index(drop=True).copy()
    cells["sample_id"] = "s_" + cells["image_id"].astype(str)
    dictionary = pd.DataFrame({"feature_id": [FEATURE], "kind": ["intensity"], "marker": ["CD3e"],
                               "compartment": ["cell"], "statistic": ["mean"], "unit": ["a.u."]})
    if values is None:
        values = np.arange(len(cells), dtype=np.float64)
    return base.replace(cells=cells, images=images, dictionary=dictionary,
                        measurements=np.asarray(values, dtype=np.float64).reshape(-1, 1))


def ramp(values: list[float], *, image: str = "ramp", spacing: float = 100.0, rows: int = 3,
         classes: tuple[str, ...] = ("T cell", "Tumor")) -> tuple[pd.DataFrame, np.ndarray]:
    """Cells in columns left to right, one column per value, ``rows`` cells per column."""
    n = len(values)
    x = np.repeat(np.arange(n) * spacing + spacing / 2, rows)
    y = np.tile(np.arange(rows) * spacing + spacing / 2, n)
    frame = pd.DataFrame({"cell_id": [f"{image}-{i}" for i in range(n * rows)], "image_id": image, "x": x, "y": y,
                          "area": np.pi * (0.3 * spacing) ** 2,
                          "classification": [classes[i % len(classes)] for i in range(n * rows)]})
    return frame, np.repeat(np.asarray(values, dtype=np.float64), rows)


def ramp_object(values: list[float], **kwargs) -> cs.CellSpec:
    frame, v = ramp(values, **kwargs)
    width = len(values) * kwargs.get("spacing", 100.0)
    height = kwargs.get("rows", 3) * kwargs.get("spacing", 100.0)
    return cells_object({frame["image_id"].iloc[0]: (width, height)}, frame, v)


# -- reading a compiled scene back -----------------------------------------------------------------

def csr_strings(group: zarr.Group, offsets: str, data: str) -> list[str]:
    """Decode one of luxar's CSR string channels (labels or keys) in stored order."""
    off = np.asarray(group[offsets][:], dtype=np.int64)
    raw = np.asarray(group[data][:], dtype=np.uint8).tobytes()
    return [raw[off[i]:off[i + 1]].decode("utf-8") for i in range(off.size - 1)]


def points_node(path, name: str) -> dict:
    root = zarr.open_group(str(path), mode="r")
    group = root[name]
    out = {"attrs": dict(group.attrs), "group": group}
    for array in ("positions", "colors", "radii", "scalars"):
        out[array] = DECODER.decode(group[array], root) if array in group else None
    out["labels"] = csr_strings(group, "label_offsets", "label_bytes")
    out["keys"] = csr_strings(group, "key_offsets", "key_bytes")
    return out


def quantum(array: zarr.Array) -> float:
    """Half a step of luxar's bounded-scalar quantisation (the largest possible decode error)."""
    enc = dict(array.attrs)["encoding"]
    if enc["name"] == "broadcasted":
        return 1e-6
    return (enc["max"] - enc["min"]) / (2 ** enc["bits"] - 1) / 2 + 1e-6


def cells_of(x: cs.CellSpec, image_id: str) -> pd.DataFrame:
    frame = x.cells[(x.cells["image_id"] == image_id).to_numpy(dtype=bool)]
    return frame.set_index(frame["cell_id"].astype(object))


def points_total(path) -> int:
    scene = luxar.LuxarScene.load(path)
    return sum(n["n_points"] for n in scene.nodes if n["type"] == "points")


# -- looking at a scene in luxar's viewer ----------------------------------------------------------

RAIL = 80  # the viewer's control rail on the left; compare pixels right of it
HINT = "localStorage.setItem('luxar.controlRail.hintDismissed', '1')"
READY = ("() => window.__luxarDebug && window.__luxarDebug.scene"
         " && window.__luxarDebug.getPerf().timeline.milestones.initUpdateDone")
PROJECT = """([name, points]) => {
  const d = window.__luxarDebug; let node = null;
  d.scene.traverse(o => { if (!node && o.name === name) node = o; });
  if (!node) throw new Error('no node ' + name);
  node.updateMatrixWorld(true);
  return points.map(([x, y]) => {
    const v = d.camera.position.clone().set(x, y, 0); node.localToWorld(v); v.project(d.camera);
    return [(v.x + 1) / 2 * window.innerWidth, (1 - v.y) / 2 * window.innerHeight];
  });
}"""


@contextlib.contextmanager
def viewer_page(path, profile):
    """The scene served by luxar's viewer and loaded in Chromium, ready to be looked at."""
    with LuxarViewer(path) as viewer, browser_page(profile, init_script=HINT) as (page, errors):
        page.goto(viewer.url + "&debug&dpr=1&renderer=webgl&noOpfs")
        page.wait_for_function(READY, timeout=120_000)
        page.wait_for_timeout(1500)
        yield page, errors


def pixels(page) -> np.ndarray:
    from matplotlib import image as mpimg

    return mpimg.imread(io.BytesIO(page.screenshot()), format="png")[:, :, :3]


def colours_at(page, node: str, xy: np.ndarray) -> np.ndarray:
    """sRGB colours (0-1) on screen at scene positions ``xy`` of ``node`` (an image group)."""
    screen = np.round(page.evaluate(PROJECT, [node, np.asarray(xy).tolist()])).astype(int)
    shot = pixels(page)
    return np.array([shot[y, x] for x, y in screen])


