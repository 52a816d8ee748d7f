"""Helpers for directory tests: re-seal a directory after editing it, as another implementation would."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def reseal(directory: Path, files: list[str] | None = None) -> None:
    """Rewrite MANIFEST.sha256 (for ``files``, default: the lines already there) and DONE."""
    manifest = directory / "MANIFEST.sha256"
    if files is None:
        files = [line.split("  ", 1)[1] for line in manifest.read_text("utf-8").splitlines() if line]
    text = "".join(f"{sha256(directory / f) if (directory / f).is_file() else '0' * 64}  {f}\n" for f in files)
    manifest.write_text(text, encoding="utf-8")
    (directory / "DONE").write_text(hashlib.sha256(text.encode()).hexdigest() + "\n")


def edit_json(directory: Path, change) -> None:
    """Apply ``change(document)`` to cellspec.json and re-seal."""
    path = directory / "cellspec.json"
    doc = json.loads(path.read_text("utf-8"))
    change(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")
    reseal(directory)
