"""Checks of the object as a whole (section 10, "object"): its class, its components, spec_version."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from cellspec_sc.model import CellSpec
from cellspec_sc.validation._context import Context, Problem, Skip, check


@check("object_class")
def _object_class(ctx: Context) -> Problem | None:
    if isinstance(ctx.x, CellSpec):
        return None
    ctx.broken.add("object")
    return Problem(f"the object is a {type(ctx.x).__module__}.{type(ctx.x).__name__}, not a cellspec_sc.CellSpec")


_CONTAINERS: dict[str, tuple[type, ...] | None] = {
    "spec_version": (str,), "cells": (pd.DataFrame,), "dictionary": (pd.DataFrame,), "images": (pd.DataFrame,),
    "channels": (pd.DataFrame,), "provenance": (dict,), "measurements": None,
}


@check("object_components")
def _object_components(ctx: Context) -> Problem | None:
    if "object" in ctx.broken:
        raise Skip("not a CellSpec")
    bad = []
    for name, types in _CONTAINERS.items():
        value = getattr(ctx.x, name, None)
        ok = _is_matrix_like(value) if types is None else isinstance(value, types)
        if not ok:
            bad.append(f"{name} is {type(value).__name__}")
            ctx.broken.add(name)
    adjacency = getattr(ctx.x, "adjacency", None)
    if adjacency is not None and not isinstance(adjacency, pd.DataFrame):
        bad.append(f"adjacency is {type(adjacency).__name__}, not a DataFrame or None")
        ctx.broken.add("adjacency")
    return Problem("; ".join(bad)) if bad else None


def _is_matrix_like(value: Any) -> bool:
    return all(hasattr(value, a) for a in ("shape", "dtype", "ndim")) and not isinstance(value, pd.DataFrame)


@check("spec_version")
def _spec_version(ctx: Context) -> Problem | None:
    version = ctx.part("spec_version")
    match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", version)
    if not match:
        return Problem(f"spec_version {version!r} is not a MAJOR.MINOR.PATCH version string")
    supported = int(ctx.voc.spec_version.split(".")[0])
    if int(match.group(1)) != supported:
        return Problem(f"spec_version {version!r} has major version {match.group(1)}; supported: {supported}")
    return None
