"""What a Luxar scene is built from: one view over a CellSpec or an AnnData from ``to_anndata``.

The scene builder (:mod:`cellspec_sc.bridges.luxar`) never looks at the input
type; it asks a :class:`SceneInput` for cells, features, categories,
embeddings, contacts, images and provenance.

>>> import cellspec_sc as cs
>>> src = scene_input(cs.example())
>>> src.n_cells, list(src.image_ids)
(80, ['img1', 'img2'])
>>> src.feature_for_marker("CD3e")
'cell:CD3e:mean'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cellspec_sc.bridges.anndata import CONNECTIVITIES_KEY, SPATIAL_KEY, UNS_KEY, decode_table, from_json_text
from cellspec_sc.display import CategoryStyle, category_style, stored_style
from cellspec_sc.errors import InputError
from cellspec_sc.model import CellSpec


@dataclass
class SceneInput:
    """Cells, measurements and context in the form the scene builder needs.

    ``cells`` holds at least cell_id, image_id, x, y (micrometres, y downward);
    ``feature_column(id)`` returns one feature as float64 (NA as NaN).
    """

    cells: pd.DataFrame
    feature_ids: list[str]
    dictionary: pd.DataFrame | None
    images: pd.DataFrame
    provenance: dict[str, Any]
    contacts: tuple[np.ndarray, np.ndarray] | None  # row positions (a, b) of contacting cells
    embeddings: dict[str, np.ndarray] = field(default_factory=dict)
    uns_colours: dict[str, list[str]] = field(default_factory=dict)  # column -> scanpy's uns["<column>_colors"]
    cellspec: CellSpec | None = None  # the object itself, when it is one (outlines need its directory)
    _matrix: Any = None

    @property
    def n_cells(self) -> int:
        return len(self.cells)

    @property
    def image_ids(self) -> list[str]:
        """Image ids in the order of ``images`` (images without cells included)."""
        return [str(i) for i in self.images["image_id"]]

    def feature_column(self, feature_id: str) -> np.ndarray:
        """One feature as a float64 vector in cell order."""
        try:
            j = self.feature_ids.index(feature_id)
        except ValueError:
            raise InputError(f"unknown feature_id {feature_id!r}; known: {_preview(self.feature_ids)}") from None
        column = self._matrix[:, j]
        if hasattr(column, "toarray"):  # a sparse AnnData X
            column = column.toarray()
        return np.asarray(column, dtype=np.float64).reshape(-1)

    def feature_for_marker(self, marker: str) -> str:
        """The feature that stands for a marker: cell mean, else any mean, else the first intensity feature."""
        d = self.dictionary
        if d is None or "marker" not in d.columns:
            raise InputError(f"marker:{marker} needs a dictionary with a marker column (AnnData var['marker'])")
        rows = d[(d["marker"].astype(object) == marker).to_numpy(dtype=bool)]
        if "kind" in rows.columns:
            rows = rows[(rows["kind"].astype(object) == "intensity").to_numpy(dtype=bool)]
        if rows.empty:
            known = sorted({str(m) for m in d["marker"].dropna()})
            raise InputError(f"no intensity feature for marker {marker!r}; markers: {_preview(known)}")
        for compartment, statistic in (("cell", "mean"), (None, "mean")):
            pick = rows
            if compartment is not None and "compartment" in pick.columns:
                pick = pick[(pick["compartment"].astype(object) == compartment).to_numpy(dtype=bool)]
            if "statistic" in pick.columns:
                pick = pick[(pick["statistic"].astype(object) == statistic).to_numpy(dtype=bool)]
            if not pick.empty:
                return str(pick["feature_id"].iloc[0])
        return str(rows["feature_id"].iloc[0])

    def category_style(self, column: str) -> CategoryStyle:
        """The order and colours of a cells column, from their one home (:mod:`cellspec_sc.display`): the
        object's stored style, or the AnnData's categorical order and ``uns["<column>_colors"]``, else the
        natural order and default palette. The widgets and the AnnData bridge read the same."""
        if column not in self.cells.columns:
            known = [c for c in self.cells.columns if c not in ("x", "y", "x_px", "y_px", "area")]
            raise InputError(f"no cells column {column!r} to colour by; columns: {_preview(known)}")
        return category_style(self.cells[column], stored_style(self.provenance, column),
                              colours=self.uns_colours.get(column))

    def category_column(self, column: str) -> tuple[CategoryStyle, np.ndarray]:
        """The style of a cells column and every cell's position in its categories (-1 for NA)."""
        style = self.category_style(column)
        return style, style.codes(self.cells[column])


def scene_input(obj: Any) -> SceneInput:
    """A :class:`SceneInput` for a CellSpec or an AnnData (from ``to_anndata`` or shaped like it)."""
    if isinstance(obj, CellSpec):
        return _from_cellspec(obj)
    if type(obj).__name__ == "AnnData":
        return _from_anndata(obj)
    raise InputError(f"to_luxar needs a CellSpec or an AnnData, not {type(obj).__name__}")


def _from_cellspec(x: CellSpec) -> SceneInput:
    cells = x.cells
    return SceneInput(
        cells=cells,
        feature_ids=x.feature_ids,
        dictionary=x.dictionary,
        images=x.images,
        provenance=x.provenance if isinstance(x.provenance, dict) else {},
        contacts=_contacts_from_table(x.adjacency, cells),
        cellspec=x,
        _matrix=np.asarray(x.measurements),
    )


def _contacts_from_table(adjacency: pd.DataFrame | None, cells: pd.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    """Row positions of both cells of every contact (section 7), vectorised through one index lookup."""
    if adjacency is None:
        return None
    keys = pd.MultiIndex.from_arrays([cells["image_id"].astype(object), cells["cell_id"].astype(object)])
    image = adjacency["image_id"].astype(object)
    a = keys.get_indexer(pd.MultiIndex.from_arrays([image, adjacency["cell_id_a"].astype(object)]))
    b = keys.get_indexer(pd.MultiIndex.from_arrays([image, adjacency["cell_id_b"].astype(object)]))
    keep = (a >= 0) & (b >= 0)
    return a[keep], b[keep]


# -- AnnData ---------------------------------------------------------------------------------------

def _from_anndata(adata: Any) -> SceneInput:
    obs = adata.obs
    for column in ("cell_id", "image_id"):
        if column not in obs.columns:
            raise InputError(f"AnnData obs has no {column!r} column; build it with cellspec_sc.to_anndata")
    cells = obs.reset_index(drop=True).copy()
    cells["cell_id"] = cells["cell_id"].astype(str)
    cells["image_id"] = cells["image_id"].astype(str)
    xy = _anndata_coordinates(adata, SPATIAL_KEY)
    cells["x"], cells["y"] = xy[:, 0], xy[:, 1]
    record = adata.uns.get(UNS_KEY) if hasattr(adata.uns, "get") else None
    images, provenance = _stored_images_and_provenance(record)
    return SceneInput(
        cells=cells,
        feature_ids=_anndata_feature_ids(adata),
        dictionary=_anndata_dictionary(adata),
        images=_images_with_cells(images, cells),
        provenance=provenance,
        contacts=_anndata_contacts(adata, cells, CONNECTIVITIES_KEY),
        embeddings={str(k): np.asarray(v) for k, v in adata.obsm.items() if k != SPATIAL_KEY},
        uns_colours=_scanpy_colours(adata),
        _matrix=adata.X,
    )


def _stored_images_and_provenance(record: Any) -> tuple[pd.DataFrame | None, dict[str, Any]]:
    """The images table and provenance that ``to_anndata`` keeps as JSON text in ``uns['cellspec']``."""
    if not hasattr(record, "get"):
        return None, {}
    images = decode_table(record["images"], "images") if record.get("images") is not None else None
    try:
        provenance = from_json_text(record["provenance"]) if record.get("provenance") is not None else {}
    except ValueError:
        raise InputError("uns['cellspec']['provenance'] is not valid JSON text") from None
    return images, provenance if isinstance(provenance, dict) else {}


def _images_with_cells(images: pd.DataFrame | None, cells: pd.DataFrame) -> pd.DataFrame:
    """The stored images table, else one row per image seen in obs (sizes then come from the cells)."""
    if images is not None:
        return images
    ids = pd.unique(cells["image_id"].to_numpy(dtype=object))
    return pd.DataFrame({"image_id": [str(i) for i in ids]})


def _anndata_coordinates(adata: Any, key: str) -> np.ndarray:
    if key in adata.obsm:
        xy = np.asarray(adata.obsm[key], dtype=np.float64)
        if xy.ndim == 2 and xy.shape[1] >= 2:
            return xy[:, :2]
    if {"x", "y"} <= set(adata.obs.columns):
        return adata.obs[["x", "y"]].to_numpy(dtype=np.float64)
    raise InputError(f"AnnData has neither obsm[{key!r}] nor obs columns x and y (micrometres)")


def _anndata_feature_ids(adata: Any) -> list[str]:
    """Feature ids: ``var["feature_id"]`` (to_anndata writes it, also with ``var_names="marker"``), else var_names."""
    names = adata.var["feature_id"] if "feature_id" in adata.var.columns else adata.var_names
    return [str(v) for v in names]


def _anndata_dictionary(adata: Any) -> pd.DataFrame:
    var = adata.var.copy()
    var["feature_id"] = _anndata_feature_ids(adata)
    return var.reset_index(drop=True)


def _anndata_contacts(adata: Any, cells: pd.DataFrame, key: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Contacts from squidpy's ``obsp['spatial_connectivities']`` (symmetric; each pair once, same image)."""
    if key not in adata.obsp:
        return None
    from scipy import sparse

    upper = sparse.triu(sparse.coo_matrix(adata.obsp[key]), k=1)
    a, b = upper.row.astype(np.int64), upper.col.astype(np.int64)
    image = cells["image_id"].to_numpy(dtype=object)
    same = image[a] == image[b]
    return a[same], b[same]


def _scanpy_colours(adata: Any) -> dict[str, list[str]]:
    """scanpy's ``uns['<column>_colors']`` of categorical obs columns, so a scene matches scanpy's plots."""
    out: dict[str, list[str]] = {}
    for column in adata.obs.columns:
        colours = adata.uns.get(f"{column}_colors") if hasattr(adata.uns, "get") else None
        if isinstance(adata.obs[column].dtype, pd.CategoricalDtype) and colours is not None:
            out[str(column)] = [str(c) for c in list(colours)]
    return out


def _preview(names: list[str], n: int = 8) -> str:
    shown = ", ".join(names[:n])
    return shown + (f", ... ({len(names)} in all)" if len(names) > n else "")
