"""The generated docs pages: ``python -m cellspec_sc.docgen`` rewrites them (:func:`main`), tests compare them
with :func:`render_all` and the readers' block."""

from __future__ import annotations

from cellspec_sc.docgen._render import main, render_all

__all__ = ["main", "render_all"]
