"""String chunks of a zarr store, checked before they can take the machine's memory.

numcodecs' ``VLenUTF8`` and ``VLenBytes`` decoders (behind zarr's ``vlen-utf8`` and ``vlen-bytes`` codecs)
allocate an object array of as many strings as a chunk's 4-byte header claims before reading any of them. One
flipped bit in the 49-byte chunk of an AnnData store's ``obs/image_id/categories`` made it claim 2,147,483,650
strings: ``anndata.read_zarr`` filled 16 GiB with ``None`` and the kernel killed the process.
:func:`bounded_string_chunks` has zarr decode string chunks with codecs that check that count first and refuse
the chunk with a ``ValueError``: in format 3 stores against the number of values the chunk holds (zarr's codec
config selects the checking codecs); in format 2 stores, where numcodecs' ``VLenUTF8``/``VLenBytes`` are filters
that are not told the chunk's shape, against what the chunk's bytes can hold (every value has a 4-byte length
before it), which bounds the array to twice the chunk's decoded size (numcodecs' own registry, for the
duration of the block).

>>> with bounded_string_chunks():
...     pass
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from cellspec_sc.errors import InputError

STRING_CODECS = ("vlen-utf8", "vlen-bytes")


def _claimed_count(raw: Any) -> int | None:
    """The number of values a vlen chunk's 4-byte header claims (``raw``: its decompressed bytes, any buffer);
    None for a chunk shorter than its header (numcodecs refuses it itself)."""
    header = np.frombuffer(memoryview(np.ascontiguousarray(raw)).cast("B"), dtype=np.uint8)[:4]
    return int.from_bytes(header.tobytes(), "little") if header.size == 4 else None


def refuse_wrong_count(raw: Any, shape: tuple[int, ...]) -> None:
    """Raise ``ValueError`` unless the header of a vlen chunk (``raw``, its decompressed bytes) counts ``shape``'s
    values.

    >>> refuse_wrong_count(np.frombuffer((2).to_bytes(4, "little") + bytes(8), np.uint8), (2,))
    >>> refuse_wrong_count(np.frombuffer((2**31).to_bytes(4, "little"), np.uint8), (2,))
    Traceback (most recent call last):
    ...
    ValueError: a string chunk's header says it holds 2,147,483,648 values where its array's chunk holds 2: ...
    """
    claimed, expected = _claimed_count(raw), math.prod(shape)
    if claimed is not None and claimed != expected:
        raise ValueError(f"a string chunk's header says it holds {claimed:,} values where its array's chunk holds "
                         f"{expected:,}: the chunk is damaged")


def refuse_count_beyond_bytes(raw: Any) -> None:
    """Raise ``ValueError`` when the header of a vlen chunk (``raw``, its decompressed bytes) counts more values
    than its bytes can hold (4 bytes of length at least, per value).

    >>> refuse_count_beyond_bytes((2).to_bytes(4, "little") + bytes(8))
    >>> refuse_count_beyond_bytes((3).to_bytes(4, "little") + bytes(8))
    Traceback (most recent call last):
    ...
    ValueError: a string chunk's header says it holds 3 values where its 12 bytes hold at most 2: ...
    """
    size = np.asarray(raw).nbytes
    claimed, most = _claimed_count(raw), (size - 4) // 4
    if claimed is not None and claimed > most:
        raise ValueError(f"a string chunk's header says it holds {claimed:,} values where its {size:,} bytes "
                         f"hold at most {most:,}: the chunk is damaged")


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
    for name, base in zip(STRING_CODECS, (VLenUTF8Codec, VLenBytesCodec), strict=True):
        # the same class name as zarr's: zarr accepts a string array's codec by its class name alone
        codec = type(base.__name__, (base,), {"_decode_sync": _counted(base._decode_sync), "__module__": __name__})
        register_codec(name, codec)
        selected[name] = f"{__name__}.{codec.__qualname__}"
    return selected


@functools.cache
def _format2_codecs() -> dict[str, type]:
    """numcodecs' string codecs (format 2 filters) as subclasses that check a chunk's count first, by codec id."""
    from numcodecs.vlen import VLenBytes, VLenUTF8

    def checked(base: type) -> type:
        def decode(self: Any, buf: Any, out: Any = None) -> Any:
            refuse_count_beyond_bytes(buf)
            return base.decode(self, buf, out)
        return type(base.__name__, (base,), {"decode": decode, "__module__": __name__})

    return {base.codec_id: checked(base) for base in (VLenUTF8, VLenBytes)}


_SWAP_LOCK = threading.Lock()
_swapped = {"depth": 0, "saved": {}}


@contextlib.contextmanager
def _format2_checked() -> Iterator[None]:
    """numcodecs' registry gives the checking codecs for its string ids within the block (nested and
    concurrent blocks share one swap; the registry is as it was after the last one ends)."""
    from numcodecs.registry import codec_registry

    with _SWAP_LOCK:
        if _swapped["depth"] == 0:
            _swapped["saved"] = {name: codec_registry.get(name) for name in _format2_codecs()}
            codec_registry.update(_format2_codecs())
        _swapped["depth"] += 1
    try:
        yield
    finally:
        with _SWAP_LOCK:
            _swapped["depth"] -= 1
            if _swapped["depth"] == 0:
                for name, codec in _swapped["saved"].items():
                    if codec is None:
                        codec_registry.pop(name, None)
                    else:
                        codec_registry[name] = codec


@contextlib.contextmanager
def bounded_string_chunks() -> Iterator[None]:
    """Within the block, zarr decodes string chunks with the checking codecs (format 3 through zarr's codec
    config, format 2 through numcodecs' registry); nothing changes where zarr or numcodecs is missing."""
    try:
        import zarr

        selected = _registered()
    except ImportError:
        yield
        return
    with (zarr.config.set({f"codecs.{name}": implementation for name, implementation in selected.items()}),
          _format2_checked()):
        yield


# -- array shapes bounded by the bytes present ---------------------------------------------------------------------
# what an object (string) value takes in memory once decoded, at least: a pointer and a small Python object
OBJECT_VALUE_BYTES = 64


def _itemsize(dtype: Any) -> int:
    """Bytes one value of a zarr dtype (v2 ``"<f8"``/``"|O"``, v3 ``"float64"``/``"string"``/{...}) takes."""
    if isinstance(dtype, Mapping):
        dtype = dtype.get("name")
    try:
        size = np.dtype(dtype).itemsize
    except (TypeError, ValueError):
        return OBJECT_VALUE_BYTES
    return OBJECT_VALUE_BYTES if np.dtype(dtype).kind in "OUSTV" and size <= 1 else max(size, 1)


def _array_metadata(store: Path) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(array path, metadata) of every array the store's metadata files describe, consolidated copies included."""
    for folder, _, files in os.walk(store):
        relative = Path(folder).relative_to(store).as_posix()
        for name in files:
            if name not in ("zarr.json", ".zarray", ".zmetadata"):
                continue
            try:
                document = json.loads((Path(folder) / name).read_bytes())
            except (OSError, ValueError, RecursionError):
                continue  # zarr refuses it itself, as damaged
            if not isinstance(document, dict):
                continue
            if name == ".zarray" or document.get("node_type") == "array":
                yield relative, document
            consolidated = document.get("consolidated_metadata") or {} if name == "zarr.json" else document
            entries = consolidated.get("metadata") if isinstance(consolidated, dict) else None
            for key, meta in (entries or {}).items() if isinstance(entries, dict) else ():
                if isinstance(meta, dict) and (str(key).endswith(".zarray") or meta.get("node_type") == "array"):
                    yield f"{relative}/{str(key).removesuffix('/.zarray')}".removeprefix("./"), meta


def claimed_bytes(shape: Any, dtype: Any) -> int | None:
    """Bytes an array of ``shape`` and ``dtype`` takes decoded; None when the shape is no list of counts.

    >>> claimed_bytes([1000, 10], "float64"), claimed_bytes([-1], "<f8")
    (80000, None)
    """
    if not isinstance(shape, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                              for n in shape):
        return None
    return math.prod(shape) * _itemsize(dtype)


def refuse_inflated_store(store: str | os.PathLike, max_inflation: float, floor_bytes: int) -> None:
    """Raise ``InflatedStore`` when the arrays of the zarr store ``store`` claim more decoded bytes than
    ``max_inflation`` times the bytes of its files (or ``floor_bytes``, if more), or an array's shape is no list
    of counts: a store of a few KB whose metadata claims 10**8 rows would otherwise be filled in memory.

    >>> import tempfile
    >>> refuse_inflated_store(tempfile.mkdtemp(), 100, 0)
    """
    root = Path(store)
    present = sum(os.lstat(Path(folder) / name).st_size for folder, _, files in os.walk(root) for name in files)
    bound = max(floor_bytes, present * max_inflation)
    largest: dict[str, int] = {}
    for array, meta in _array_metadata(root):
        claimed = claimed_bytes(meta.get("shape"), meta.get("data_type", meta.get("dtype")))
        if claimed is None:
            raise InflatedStore(f"{root}: the array {array!r} has the shape {str(meta.get('shape'))[:80]}, "
                                "not a list of counts: the store is damaged")
        largest[array] = max(largest.get(array, 0), claimed)
    total = sum(largest.values())
    if total > bound:
        biggest = max(largest, key=largest.__getitem__)
        raise InflatedStore(f"{root}: its arrays claim {total:,} bytes decoded ({biggest!r}: {largest[biggest]:,}) "
                            f"from {present:,} bytes of files, more than max_inflation={max_inflation:g} times "
                            f"that (or {floor_bytes:,} bytes): the store is damaged or crafted; if it is genuine, "
                            "read it with max_inflation= set higher")


class InflatedStore(InputError):
    """A store whose metadata claims far more decoded data than its files hold."""
