"""String chunks of a zarr store, checked before they can take the machine's memory.

numcodecs' ``VLenUTF8`` and ``VLenBytes`` decoders (behind zarr's ``vlen-utf8`` and ``vlen-bytes`` codecs)
allocate an object array of as many strings as a chunk's 4-byte header claims before reading any of them. One
flipped bit in the 49-byte chunk of an AnnData store's ``obs/image_id/categories`` made it claim 2,147,483,650
strings: ``anndata.read_zarr`` filled 16 GiB with ``None`` and the kernel killed the process.
:func:`bounded_string_chunks` has zarr (format 3) decode string chunks with codecs that first compare that count
with the number of values the chunk holds, and refuse the chunk with a ``ValueError`` when they differ.

>>> with bounded_string_chunks():
...     pass
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

STRING_CODECS = ("vlen-utf8", "vlen-bytes")


def refuse_wrong_count(raw: Any, shape: tuple[int, ...]) -> None:
    """Raise ``ValueError`` unless the header of a vlen chunk (``raw``, its decompressed bytes) counts ``shape``'s
    values.

    >>> refuse_wrong_count(np.frombuffer((2).to_bytes(4, "little") + bytes(8), np.uint8), (2,))
    >>> refuse_wrong_count(np.frombuffer((2**31).to_bytes(4, "little"), np.uint8), (2,))
    Traceback (most recent call last):
    ...
    ValueError: a string chunk's header says it holds 2,147,483,648 values where its array's chunk holds 2: ...
    """
    header = np.asarray(raw, dtype=np.uint8).ravel()[:4]
    if header.size < 4:
        return  # numcodecs refuses a chunk without its header itself
    claimed, expected = int.from_bytes(header.tobytes(), "little"), math.prod(shape)
    if claimed != expected:
        raise ValueError(f"a string chunk's header says it holds {claimed:,} values where its array's chunk holds "
                         f"{expected:,}: the chunk is damaged")


def _counted(decode: Callable[..., Any]) -> Callable[..., Any]:
    def checked(self: Any, chunk_bytes: Any, chunk_spec: Any) -> Any:
        refuse_wrong_count(chunk_bytes.as_array_like(), chunk_spec.shape)
        return decode(self, chunk_bytes, chunk_spec)
    return checked


@functools.cache
def _registered() -> dict[str, str]:
    """Register the checking codecs with zarr once: {codec name: the name zarr's config selects them by}."""
    from zarr.codecs.vlen_utf8 import VLenBytesCodec, VLenUTF8Codec
    from zarr.registry import register_codec

    selected = {}
    for name, base in zip(STRING_CODECS, (VLenUTF8Codec, VLenBytesCodec)):
        # the same class name as zarr's: zarr accepts a string array's codec by its class name alone
        codec = type(base.__name__, (base,), {"_decode_sync": _counted(base._decode_sync), "__module__": __name__})
        register_codec(name, codec)
        selected[name] = f"{__name__}.{codec.__qualname__}"
    return selected


@contextlib.contextmanager
def bounded_string_chunks() -> Iterator[None]:
    """Within the block, zarr decodes string chunks with the checking codecs (zarr 3; zarr 2 has no codec
    registry, and the block changes nothing there)."""
    try:
        import zarr

        selected = _registered()
    except ImportError:
        yield
        return
    with zarr.config.set({f"codecs.{name}": implementation for name, implementation in selected.items()}):
        yield
