"""SpatialData bridge: an invalid object, a table that is not there and several tables without a choice are
refused."""

from __future__ import annotations

import numpy as np
import pytest

import cellspec_sc as cs
from cellspec_sc.errors import CellspecError


def test_invalid_objects_and_ambiguous_tables_are_refused(xa):
    bad = xa.replace(cells=xa.cells.assign(x=np.inf))
    with pytest.raises(cs.ValidationError, match="cells_coordinates_finite"):
        cs.to_spatialdata(bad)
    sdata = cs.to_spatialdata(xa)
    with pytest.raises(CellspecError, match="no table 'cells'"):
        cs.from_spatialdata(sdata, table_key="cells")
    sdata.tables["other"] = sdata.tables["table"].copy()
    sdata.attrs.pop("cellspec_sc")
    with pytest.raises(CellspecError, match="2 tables"):
        cs.from_spatialdata(sdata)
    assert cs.from_spatialdata(sdata, table_key="other").equals(xa)
