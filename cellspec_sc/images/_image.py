"""The opened image: channel names, pixel size and its resolution levels as lazy (c, y, x) dask arrays."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cellspec_sc.errors import ImageError


@dataclass(frozen=True)
class Image:
    """A multichannel image opened lazily: no pixel is read until a level is computed.

    Attributes
    ----------
    path
        The file (OME-TIFF) or folder (OME-Zarr).
    channel_names
        One name per channel; ``image_0``, ``image_1``, ... where the file names none.
    levels
        The resolution levels, full resolution first, each a dask array of shape (c, y, x).
    pixel_size
        Micrometres per full-resolution pixel as the file states it (x; None when the file states none).
    pixel_size_y
        The same in y.
    format
        ``"ome-tiff"`` or ``"ome-zarr"``.
    names_from_file
        Whether the file named its channels.
    """

    path: Path
    channel_names: tuple[str, ...]
    levels: tuple[Any, ...]
    pixel_size: float | None
    pixel_size_y: float | None
    format: str
    names_from_file: bool

    @property
    def shape(self) -> tuple[int, int, int]:
        """(channels, height, width) at full resolution."""
        return tuple(int(n) for n in self.levels[0].shape)

    @property
    def n_channels(self) -> int:
        """The number of channels."""
        return self.shape[0]

    @property
    def width(self) -> int:
        """Full-resolution width in pixels."""
        return self.shape[2]

    @property
    def height(self) -> int:
        """Full-resolution height in pixels."""
        return self.shape[1]

    @property
    def dtype(self) -> np.dtype:
        """The pixels' type."""
        return self.levels[0].dtype

    def downsampling(self, level: int) -> tuple[float, float]:
        """Full-resolution pixels per pixel of ``level`` in y and x."""
        _, h, w = self.levels[level].shape
        return self.height / h, self.width / w

    def level_for(self, longest_side: int) -> int:
        """The coarsest level whose longest side still has at least ``longest_side`` pixels (0 when none has)."""
        chosen = 0
        for index, level in enumerate(self.levels):
            if max(level.shape[1:]) >= longest_side:
                chosen = index
        return chosen

    def channel(self, name: str | int) -> int:
        """The position of channel ``name`` (a name, or a position itself).

        Raises
        ------
        ImageError
            No channel has that name; the message lists the names.
        """
        if isinstance(name, (int, np.integer)) and 0 <= int(name) < self.n_channels:
            return int(name)
        if name in self.channel_names:
            return self.channel_names.index(name)
        raise ImageError(f"{self.path}: no channel {name!r}; its channels are {', '.join(self.channel_names)}")

    def with_channel_names(self, names: Sequence[str]) -> Image:
        """The same image with other channel names (one per channel)."""
        if len(names) != self.n_channels:
            raise ImageError(f"{self.path}: {len(names)} channel names given for {self.n_channels} channels")
        return dataclasses.replace(self, channel_names=tuple(str(n) for n in names))

    def __repr__(self) -> str:
        sizes = " ".join("x".join(str(n) for n in level.shape[1:][::-1]) for level in self.levels)
        pixel = f", {self.pixel_size:g} um/px" if self.pixel_size else ""
        return (f"<Image {self.path.name}: {self.n_channels} channels ({', '.join(self.channel_names[:6])}"
                f"{', ...' if self.n_channels > 6 else ''}), levels {sizes}{pixel}, {self.dtype}>")


def default_names(count: int) -> tuple[str, ...]:
    """``image_0``, ``image_1``, ... for a file that names no channels."""
    return tuple(f"image_{i}" for i in range(count))
