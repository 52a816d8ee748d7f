"""Checks of the provenance record (section 10, "provenance")."""

from __future__ import annotations

from cellspec_sc.validation._context import Context, Problem, check


@check("provenance_fields")
def _provenance_fields(ctx: Context) -> Problem | None:
    prov = ctx.part("provenance")
    missing = [name for name, _ in ctx.voc.provenance_fields if name not in prov]
    return Problem(f"provenance lacks field(s) {', '.join(missing)}", missing[0]) if missing else None
