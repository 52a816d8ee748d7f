"""``Cohort.to_anndata``: one AnnData over the whole cohort, with a dask ``X``.

``X`` has one chunk per row group of each directory (in cohort order) and
every feature of the cohort's dictionary (NaN where a directory lacks one, with
``features="union"``); ``X.compute()`` equals the directories' measurements
concatenated in order, bit for bit. Nothing of ``X`` is read until computed;
each chunk checks that its file is the one opened (size, modification time,
inode) and refuses otherwise (``ChangedSinceRead``); files are not hashed here
(``c.validate()`` does). ``obs`` holds the cells tables (read now, on the
client: the cells columns only), named ``<image_id>:<cell_id>`` like
:func:`cellspec_sc.to_anndata`, with a ``directory`` column; ``var`` is the
dictionary; ``uns["cellspec"]`` holds the images, channels and provenance as
JSON text (``images``, ``channels``, ``cohort``).

>>> import cellspec_sc as cs, tempfile, pathlib
>>> from cellspec_sc.cohort.example import write_example_cohort
>>> c = cs.open_cohort(write_example_cohort(pathlib.Path(tempfile.mkdtemp()), 2, n_cells=20))
>>> adata = c.to_anndata()
>>> adata.shape, adata.X.chunks[0], type(adata.X).__module__.split(".")[0]
((40, 19), (20, 20), 'dask')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from cellspec_sc.bridges.anndata import cohort_uns, obs_names
from cellspec_sc.cohort._members import cells_frame, check_stamp, lazy_measurements

if TYPE_CHECKING:
    import anndata

    from cellspec_sc.cohort._cohort import Cohort


def cohort_anndata(cohort: Cohort) -> anndata.AnnData:
    """See the module docstring."""
    import anndata
    import dask.array as da

    features = cohort.feature_ids
    frames, blocks = [], []
    for m in cohort.members:
        for file in m.stamps:
            check_stamp(m, file)
        frames.append(cells_frame(m).assign(directory=m.label))
        blocks.append(lazy_measurements(m, features))
    obs = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if "directory" in obs:
        obs["directory"] = obs["directory"].astype("string")
    X = da.concatenate(blocks, axis=0) if len(blocks) > 1 else (blocks[0] if blocks else None)
    obs.index = pd.Index(obs_names(obs), dtype=object) if len(obs) else obs.index.astype(str)
    var = cohort.dictionary.set_axis(pd.Index(features, dtype=object), axis=0)
    return anndata.AnnData(X=X, obs=obs, var=var, uns=cohort_uns(cohort.images, cohort.channels, cohort.provenance))
