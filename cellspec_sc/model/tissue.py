"""A simulated tissue section: where the example's cells sit, what they are and which ones touch.

Each image is a hexagonal grid of sites :data:`SITE_UM` apart (rows shifted by half
a step in turn); cells take most sites (in raster order, so cell ids follow the rows
of the image), each moved by a small jitter. A smooth random field, thresholded so that :data:`TUMOUR_FRACTION` of the
sites lie inside, draws irregular **tumour nests** in **stroma**; a second field
marks a few **lymphoid aggregates** in the stroma. A cell's class follows its
signed distance to the nest boundary (negative inside): tumour cells inside,
T cells and Tregs packed in a band just outside the nests (the invasive margin)
and in the aggregates, stromal cells elsewhere, a few lymphocytes everywhere.

Every cell is a regular polygon (:data:`OUTLINE_VERTICES` corners) of the cell's
area, never overlapping another: the circles around two neighbours' polygons
never overlap (r_i + r_j <= their distance). Two cells are in contact when those
circles, each grown by :data:`CONTACT_GAP_UM` / 2, overlap; the shared boundary
is the chord of that overlap. Everything is vectorised over cells (neighbours
are found as slices of the grid), so a million cells take about a second.

>>> import numpy as np
>>> t = simulate_tissue(np.random.default_rng(0), np.repeat([0, 1], 500))
>>> t.x.size, sorted(np.unique(t.classes).tolist())
(1000, [0, 1, 2, 3])
>>> bool(np.all(t.boundary_distance[t.classes == 0] < 15.0))  # tumour cells sit in (or at) the nests
True
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from scipy import fft, ndimage

CLASSES = ("Tumor", "T cell", "Treg", "Stroma")
SITE_UM = 14.0  # distance between neighbouring sites: one cell per ~170 um2, a packed tissue
ROW_UM = SITE_UM * np.sqrt(3) / 2
JITTER = 0.15  # largest move of a cell from its site along x and y, in steps
FIELD_STEP_UM = 10.0  # resolution of the fields that draw nests and aggregates
OCCUPANCY = 0.92  # fraction of sites holding a cell; the rest are small gaps
TUMOUR_FRACTION = 0.42  # fraction of the sites inside nests
NEST_LENGTH_UM = 40.0  # correlation length of the nest field: nests some 100-250 um across
AGGREGATE_LENGTH_UM = 30.0
AGGREGATE_FRACTION = 0.04  # top of the aggregate field, kept where it lies in stroma
MARGIN_UM = (8.0, 10.0)  # centre and width of the immune band outside the nests
CONTACT_GAP_UM = 4.0
OUTLINE_VERTICES = 16
# Mean whole-cell area per class (um2), before the room around each cell caps it.
CLASS_AREA_UM2 = (170.0, 60.0, 65.0, 120.0)
_FRAME_ASPECT = 4 / 3
# Two cells whose sites are not neighbours in the 3 x 3 block of (column, row) are at least
# (1.5 - 2 * JITTER) steps apart (1.5: two columns less the half-step shift of a row).
_FAR_STEPS = 1.5 - 2 * JITTER


@dataclass
class Tissue:
    """Per cell (in image order): centroid (um), class index into :data:`CLASSES`, area (um2),
    outline circumradius (um), signed distance to the nest boundary (um, negative inside);
    per image: the frame (um); and the grid sites the cells occupy (for contacts)."""

    x: np.ndarray
    y: np.ndarray
    classes: np.ndarray
    area: np.ndarray
    radius: np.ndarray
    boundary_distance: np.ndarray
    width_um: float
    height_um: float
    site: np.ndarray  # global site number: image * nx * ny + row * nx + column
    grid: tuple[int, int]  # (nx, ny) sites per image


def frame_sites(cells_per_image: int) -> tuple[int, int]:
    """(columns, rows) of the grid of one image: enough sites for its cells at :data:`OCCUPANCY`, about 4:3.

    >>> frame_sites(40)
    (8, 6)
    """
    sites = max(1, int(np.ceil(cells_per_image / OCCUPANCY)))
    nx = max(1, int(np.ceil(np.sqrt(sites * _FRAME_ASPECT * ROW_UM / SITE_UM))))
    return nx, max(1, int(np.ceil(sites / nx)))


def simulate_tissue(rng: np.random.Generator, image_of_cell: np.ndarray) -> Tissue:
    """Lay out the cells of every image (``image_of_cell``: sorted image index per cell)."""
    n_images = int(image_of_cell.max()) + 1 if image_of_cell.size else 0
    counts = np.bincount(image_of_cell, minlength=n_images)
    nx, ny = frame_sites(int(counts.max()) if counts.size else 0)
    parts = [_image_cells(rng, int(count), nx, ny) for count in counts]
    site = np.concatenate([p[0] + i * nx * ny for i, p in enumerate(parts)]) if parts else np.zeros(0, np.int64)
    x, y, distance, classes = (np.concatenate([p[k] for p in parts]) if parts else np.zeros(0)
                               for k in range(1, 5))
    classes = classes.astype(np.int64)
    radius = _outline_radius(rng, classes, site, x, y, (nx, ny))
    return Tissue(x=x, y=y, classes=classes, area=polygon_area(radius), radius=radius,
                  boundary_distance=distance, width_um=(nx + 0.5) * SITE_UM, height_um=ny * ROW_UM,
                  site=site, grid=(nx, ny))


def _image_cells(rng: np.random.Generator, count: int, nx: int, ny: int) -> tuple[np.ndarray, ...]:
    """(site, x, y, signed nest distance, class) of the ``count`` cells of one image."""
    site = np.sort(rng.choice(nx * ny, size=count, replace=False))
    column, row = site % nx, site // nx
    x = (column + 0.5 + 0.5 * (row % 2) + rng.uniform(-JITTER, JITTER, count)) * SITE_UM
    y = (row + 0.5) * ROW_UM + rng.uniform(-JITTER, JITTER, count) * SITE_UM
    shape = (int(np.ceil(ny * ROW_UM / FIELD_STEP_UM)) + 1, int(np.ceil((nx + 0.5) * SITE_UM / FIELD_STEP_UM)) + 1)
    fx, fy = x / FIELD_STEP_UM, y / FIELD_STEP_UM
    nests = smooth_field(rng, shape, NEST_LENGTH_UM / FIELD_STEP_UM)
    inside = nests > np.quantile(nests, 1.0 - TUMOUR_FRACTION)
    distance = bilinear(signed_distance(inside) * FIELD_STEP_UM, fx, fy)
    aggregates = smooth_field(rng, shape, AGGREGATE_LENGTH_UM / FIELD_STEP_UM)
    in_aggregate = bilinear(aggregates, fx, fy) > np.quantile(aggregates, 1.0 - AGGREGATE_FRACTION)
    in_aggregate &= distance > 3 * SITE_UM
    classes = draw_classes(rng, distance, in_aggregate)
    return site, x, y, distance, classes


def smooth_field(rng: np.random.Generator, shape: tuple[int, int], length: float) -> np.ndarray:
    """A Gaussian random field on a grid of ``shape`` (rows, columns) with correlation length ``length``
    (grid steps).

    White noise filtered in Fourier space on a grid padded by 4 lengths (and to at least 64
    sites), so the periodic result does not wrap around inside the frame.
    """
    ny, nx = shape
    pad = int(np.ceil(4 * length))
    py, px = fft.next_fast_len(max(ny + pad, 64), real=True), fft.next_fast_len(max(nx + pad, 64), real=True)
    spectrum = fft.rfft2(rng.standard_normal((py, px)))
    ky, kx = fft.fftfreq(py), fft.rfftfreq(px)
    spectrum *= np.exp(-2.0 * (np.pi * length) ** 2 * (ky[:, None] ** 2 + kx[None, :] ** 2))
    return fft.irfft2(spectrum, s=(py, px))[:ny, :nx]


def signed_distance(inside: np.ndarray) -> np.ndarray:
    """Distance (sites) from each site to the boundary between inside and outside sites, negative
    inside; the boundary lies half a step from the sites on either side.

    >>> signed_distance(np.array([[True, True, False, False]])).tolist()
    [[-1.5, -0.5, 0.5, 1.5]]
    """
    if inside.all() or not inside.any():  # no boundary in the frame: as far as the frame is wide
        far = float(np.hypot(*inside.shape))
        return np.full(inside.shape, -far if inside.all() else far)
    return np.where(inside, 0.5 - ndimage.distance_transform_edt(inside),
                    ndimage.distance_transform_edt(~inside) - 0.5)


def bilinear(values: np.ndarray, gx: np.ndarray, gy: np.ndarray) -> np.ndarray:
    """``values`` (rows x columns, one per site) interpolated at grid positions (gx, gy).

    >>> bilinear(np.array([[0.0, 2.0], [4.0, 6.0]]), np.array([0.5, 1.0]), np.array([0.5, 0.0])).tolist()
    [3.0, 2.0]
    """
    ny, nx = values.shape
    gx, gy = np.clip(gx, 0, nx - 1), np.clip(gy, 0, ny - 1)
    x0, y0 = np.minimum(gx.astype(np.int64), max(nx - 2, 0)), np.minimum(gy.astype(np.int64), max(ny - 2, 0))
    x1, y1 = np.minimum(x0 + 1, nx - 1), np.minimum(y0 + 1, ny - 1)
    fx, fy = gx - x0, gy - y0
    top = values[y0, x0] * (1 - fx) + values[y0, x1] * fx
    bottom = values[y1, x0] * (1 - fx) + values[y1, x1] * fx
    return top * (1 - fy) + bottom * fy


def class_weights(distance: np.ndarray, in_aggregate: np.ndarray) -> np.ndarray:
    """Relative chance of each class (columns follow :data:`CLASSES`) at a signed nest distance (um).

    >>> w = class_weights(np.array([-50.0, 8.0, 200.0]), np.array([False, False, False]))
    >>> [CLASSES[i] for i in w.argmax(axis=1)]
    ['Tumor', 'T cell', 'Stroma']
    """
    nest = 1.0 / (1.0 + np.exp(np.clip(distance / 3.0, -50, 50)))
    outside = 1.0 - nest
    margin = np.exp(-0.5 * ((distance - MARGIN_UM[0]) / MARGIN_UM[1]) ** 2) * outside
    aggregate = in_aggregate.astype(np.float64)
    return np.column_stack([
        0.93 * nest,
        0.05 * nest + 0.06 * outside + 2.0 * margin + 3.0 * aggregate,
        0.02 * nest + 0.01 * outside + 0.35 * margin + 0.4 * aggregate,
        0.90 * outside * (1.0 - aggregate),
    ])


def draw_classes(rng: np.random.Generator, distance: np.ndarray, in_aggregate: np.ndarray) -> np.ndarray:
    """One class per cell, drawn with :func:`class_weights`."""
    cumulative = np.cumsum(class_weights(distance, in_aggregate), axis=1)
    u = rng.random(distance.size) * cumulative[:, -1]
    return (u[:, None] >= cumulative[:, :-1]).sum(axis=1)


# -- outlines and contacts ----------------------------------------------------------------------
def polygon_area(radius: np.ndarray) -> np.ndarray:
    """Area of the regular :data:`OUTLINE_VERTICES`-gon of this circumradius."""
    n = OUTLINE_VERTICES
    return 0.5 * n * np.sin(2 * np.pi / n) * np.asarray(radius) ** 2


def _outline_radius(rng: np.random.Generator, classes: np.ndarray, site: np.ndarray, x: np.ndarray,
                    y: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """Circumradius of each outline: the class's lognormal area, capped so that no two outlines overlap.

    For each neighbour j at distance d, cell i may reach ``max(d / 2, d - wanted_j)``: two big cells
    share the space, a small cell leaves the rest to its neighbour, and either way r_i + r_j <= d.
    The cap ``_FAR_STEPS * SITE_UM / 2 - CONTACT_GAP_UM / 2`` keeps cells outside each other's 3 x 3
    block of sites from touching, so contacts are found among the 8 neighbouring sites.
    """
    area = np.asarray(CLASS_AREA_UM2)[classes] * rng.lognormal(0.0, 0.25, classes.size)
    wanted = np.minimum(np.sqrt(area / polygon_area(1.0)), _FAR_STEPS * SITE_UM / 2 - CONTACT_GAP_UM / 2)
    on_sites = SiteGrid(site, grid)
    gx, gy, gw = on_sites.spread(x), on_sites.spread(y), on_sites.spread(wanted)
    radius = gw.copy()
    for here, there in on_sites.neighbour_slices(_NEIGHBOURS):
        d = np.hypot(gx[here] - gx[there], gy[here] - gy[there])  # NaN where either site is empty
        radius[here] = np.fmin(radius[here], np.fmax(d / 2, d - gw[there]))
    return on_sites.gather(radius)


# Offsets (columns, rows) to the 8 neighbouring sites; the first 4 reach each neighbouring pair once.
_FORWARD = ((1, 0), (-1, 1), (0, 1), (1, 1))
_NEIGHBOURS = _FORWARD + tuple((-dx, -dy) for dx, dy in _FORWARD)


class SiteGrid:
    """Per-cell values laid out on the (image, row, column) sites, so neighbours are array slices.

    >>> g = SiteGrid(np.array([0, 1, 3]), (2, 2))
    >>> g.spread(np.array([1.0, 2.0, 3.0])).tolist()
    [[[1.0, 2.0], [nan, 3.0]]]
    """

    def __init__(self, site: np.ndarray, grid: tuple[int, int]):
        nx, ny = grid
        self.site, self.shape = site, (int(site.max()) // (nx * ny) + 1 if site.size else 0, ny, nx)

    def spread(self, values: np.ndarray) -> np.ndarray:
        out = np.full(int(np.prod(self.shape)), np.nan)
        out[self.site] = values
        return out.reshape(self.shape)

    def gather(self, on_sites: np.ndarray) -> np.ndarray:
        return on_sites.reshape(-1)[self.site]

    def neighbour_slices(self, offsets: tuple[tuple[int, int], ...]) -> Iterator[tuple[tuple, tuple]]:
        """(here, there): index tuples of the sites and of their neighbours at each offset."""
        _, ny, nx = self.shape
        for dx, dy in offsets:
            rows, columns = slice(max(0, -dy), ny - max(0, dy)), slice(max(0, -dx), nx - max(0, dx))
            moved = slice(rows.start + dy, rows.stop + dy), slice(columns.start + dx, columns.stop + dx)
            yield (slice(None), rows, columns), (slice(None), *moved)

    def cell_of_sites(self) -> np.ndarray:
        owner = np.full(int(np.prod(self.shape)), -1, dtype=np.int64)
        owner[self.site] = np.arange(self.site.size)
        return owner.reshape(self.shape)


def contacts(t: Tissue) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, shared boundary um) of every pair of cells whose outlines, each grown by half the contact
    gap, overlap; the shared boundary is the chord of the two grown circles."""
    on_sites = SiteGrid(t.site, t.grid)
    gx, gy, gr = on_sites.spread(t.x), on_sites.spread(t.y), on_sites.spread(t.radius + CONTACT_GAP_UM / 2)
    owner = on_sites.cell_of_sites()
    firsts, seconds = [], []
    for here, there in on_sites.neighbour_slices(_FORWARD):
        d = np.hypot(gx[here] - gx[there], gy[here] - gy[there])
        touching = d < gr[here] + gr[there]  # False where a site is empty (NaN)
        firsts.append(owner[here][touching])
        seconds.append(owner[there][touching])
    i, j = np.concatenate(firsts), np.concatenate(seconds)
    d = np.hypot(t.x[i] - t.x[j], t.y[i] - t.y[j])
    a, b = t.radius[i] + CONTACT_GAP_UM / 2, t.radius[j] + CONTACT_GAP_UM / 2
    product = (-d + a - b) * (-d - a + b) * (-d + a + b) * (d + a + b)
    return i, j, np.sqrt(np.clip(product, 0.0, None)) / d
