"""``cellspec demo``: the main job of the package, end to end on the example."""

from __future__ import annotations

import argparse
from pathlib import Path

from cellspec_sc.errors import MissingExtraError, require_extra
from cellspec_sc.images import checked_images
from cellspec_sc.io import CELLSPEC_DIRECTORY, check_target, read, write
from cellspec_sc.model import CellSpec, example
from cellspec_sc.validation import validate

# what the demo's second part (the simulated images, checked, and a preview with them) needs beyond the core
IMAGE_PART_EXTRAS = ("images", "widgets")


def run_demo(out: str | Path) -> int:
    """Build the example, write it as a cellspec directory under ``out``, read it back, check that
    nothing changed, validate it and print its summary; returns the exit code. With the ``images`` and
    ``widgets`` extras, the example's images are simulated too, checked against the object read back and shown
    in a standalone preview; on a core install that part is skipped with the command that installs it.

    >>> import tempfile
    >>> run_demo(tempfile.mkdtemp())  # doctest: +ELLIPSIS
    <cellspec> spec 1.0.0
    ...
    read back: identical to what was written (bit for bit)
    ...
    images: img1.ome.tiff (4 channels ..., SHA-256 checked), img2.ome.tiff (...)
    preview with the images: ...preview.html
    0
    """
    target = check_target(Path(out) / "example.cellspec", CELLSPEC_DIRECTORY, overwrite=True)
    missing = _missing_image_extra()
    image_dir = None if missing else Path(out) / "images"
    x = example(adjacency=True, region_layers=("tumor",), image_dir=image_dir)
    path = write(x, target, overwrite=True)
    y = read(path)
    print(repr(y))
    print(f"written to {path}: {', '.join(sorted(p.name for p in path.iterdir()))}")
    differences = y.differences(x)
    if differences:
        print("read back: DIFFERENT from what was written:\n  " + "\n  ".join(differences))
    else:
        print("read back: identical to what was written (bit for bit)")
    report = validate(y)
    print(report.format())
    if image_dir is None:
        print(f"images and preview: skipped ({missing})")
    else:
        _show_images(y, image_dir, Path(out))
    return 0 if report.ok and not differences else 1


def _missing_image_extra() -> str | None:
    """Why the image part cannot run (the extra to install), or None when it can."""
    try:
        for extra in IMAGE_PART_EXTRAS:
            require_extra(extra, "cellspec demo (images and preview)")
    except MissingExtraError as missing:
        return str(missing)
    return None


def _show_images(x: CellSpec, image_dir: Path, out: Path) -> None:
    """Open the example's images, check them against the object read back, and write a preview with them."""
    images = {str(i): image_dir / str(name) for i, name in zip(x.images["image_id"], x.images["source_image"],
                                                                strict=True)}
    opened = checked_images(x, images)
    print("images: " + ", ".join(f"{image.path.name} ({image.n_channels} channels {image.width}x{image.height} px, "
                                 "SHA-256 checked)" for image in opened.values()))
    page = x.preview(images=opened, channels=["CD3e", "Pan-Cytokeratin", "FOXP3"]).save_html(out / "preview.html")
    print(f"preview with the images: {page}")


def cmd_demo(args: argparse.Namespace) -> int:
    return run_demo(args.out)


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="demo-output", help="folder for the demo's files (default: ./demo-output)")
    p.set_defaults(func=cmd_demo)
