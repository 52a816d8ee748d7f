"""One implementation per check of section 10, one module per section of the spec.

Each module registers its checks with :func:`cellspec_sc.validation._context.check`; importing this package
imports them all.

>>> len(implemented_checks())
51
"""

from __future__ import annotations

# imported for their side effect: each module registers its checks in IMPLEMENTATIONS on import
from cellspec_sc.validation._checks import (  # noqa: F401
    adjacency,
    cells,
    dictionary,
    images,
    measurements,
    objects,
    provenance,
    semantic,
)
from cellspec_sc.validation._context import IMPLEMENTATIONS, CheckFn


def implemented_checks() -> tuple[str, ...]:
    """Names of the checks implemented here (equal to the vocabulary's, by test)."""
    return tuple(IMPLEMENTATIONS)


def implementation(name: str) -> CheckFn:
    """The function implementing check ``name``."""
    return IMPLEMENTATIONS[name]
