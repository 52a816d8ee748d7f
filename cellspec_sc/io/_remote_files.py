"""Files and zarr stores written elsewhere (``.h5ad``, AnnData ``.zarr``) published to object storage.

The writer builds its output in a private local folder with its own library (h5py cannot write to a URL, and
writing a zarr store straight to a bucket would let readers open it half written), then:

- a single file is uploaded as one object: a store shows the old object or the whole new one, never part of it;
- a zarr store is uploaded file by file with its root ``zarr.json`` (or ``.zgroup``/``.zattrs``) last: no zarr
  reader opens the group before every array it names is there.

``overwrite=False`` is refused when anything is at the URL, a file is uploaded with the store's conditional write
and a store under a claim of its prefix (the directory format's, :func:`~cellspec_sc.io._remote.claim_prefix`),
so that of two writers racing for the same URL one wins and the other is refused before it replaces anything;
``overwrite=True`` replaces only what ``ours`` accepts (an ``.h5ad`` file, an AnnData store) or what an interrupted
store upload left, removing an old store's root metadata first and then its other objects, never objects of
another kind.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cellspec_sc.io._refusals import TargetExists
from cellspec_sc.io._remote import (
    UPLOAD_CLAIM,
    _check_prefix,
    _remove,
    claim_prefix,
    listing,
    unfinished_upload_objects,
    written_if_absent,
)
from cellspec_sc.io._storage import Location, storage_call

ROOT_METADATA = ("zarr.json", ".zgroup", ".zattrs", ".zmetadata")  # what a zarr reader opens a group by


def upload_file(source: Path, url: str, storage_options: Mapping[str, Any] | None, *, overwrite: bool,
                ours: Callable[[bytes], bool], what: str) -> str:
    """Upload the local file ``source`` as the object ``url`` in one request; an existing object is replaced
    only with ``overwrite=True`` and when ``ours(its first bytes)``. Returns the URL."""
    location = check_file_url(url, storage_options, overwrite=overwrite, ours=ours, what=what)
    fs = location.fs
    try:
        storage_call(url, "uploading", lambda: _put(fs, source, url, create=not overwrite))
    except FileExistsError:
        raise TargetExists(url, None, "appeared while this writer was writing; nothing was replaced") from None
    return location.url


def check_file_url(url: str, storage_options: Mapping[str, Any] | None, *, overwrite: bool,
                   ours: Callable[[bytes], bool], what: str) -> Location:
    """The check of :func:`upload_file` on its own (before the file is built): TargetExists unless ``url`` is free,
    or holds an object ``ours`` accepts and ``overwrite`` is true."""
    location = Location.of(url, storage_options)
    fs = location.fs
    fs.invalidate_cache()
    if storage_call(url, "looking at the target", lambda: fs.exists(url)):
        if not overwrite:
            raise TargetExists(url, None, "already exists; pass overwrite=True (CLI: --overwrite) to replace it")
        head = storage_call(url, "reading the target", lambda: fs.cat_file(url, start=0, end=64))
        if not ours(head):
            raise TargetExists(url, None, f"is not {what}; refusing to replace it")
    elif storage_call(url, "looking at the target", lambda: fs.isdir(url)):
        raise TargetExists(url, None, "is a prefix holding objects, not a file; refusing to replace it")
    return location


def _put(fs: Any, source: Path, url: str, *, create: bool) -> None:
    """Upload ``source``; with ``create`` only if nothing is at ``url`` (:func:`written_if_absent`)."""
    if create:
        written_if_absent(fs, url, lambda **mode: fs.put_file(str(source), url, **mode))
    else:
        fs.put_file(str(source), url)


def upload_store(source: Path, url: str, storage_options: Mapping[str, Any] | None, *, overwrite: bool,
                 ours: Callable[[Location, Mapping[str, int]], bool], what: str) -> str:
    """Upload the local zarr store ``source`` below the prefix ``url``, its root metadata last, under a claim of
    the prefix (:func:`~cellspec_sc.io._remote.claim_prefix`: of two writers one uploads, the other is refused
    before it has written anything); the objects of an existing store are removed first (root metadata first)
    only with ``overwrite=True`` and when ``ours`` accepts them (or they are an interrupted upload's, which its
    claim names). Returns the URL."""
    location, present = check_store_url(url, storage_options, overwrite=overwrite, ours=ours, what=what)
    files = sorted(p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file())
    claim_prefix(location, {"objects": sorted({*files, *present}), "folders": []}, present)
    old = [n for n in present if n != UPLOAD_CLAIM]
    roots = [n for n in ROOT_METADATA if n in old]
    _remove(location, [*roots, *sorted(n for n in old if n not in roots)])
    for name in [*(n for n in files if n not in ROOT_METADATA), *(n for n in ROOT_METADATA if n in files)]:
        target = location.child(name)
        storage_call(target, f"uploading {name}", lambda s=source / name, t=target: location.fs.put_file(str(s), t))
    _remove(location, [UPLOAD_CLAIM])  # an upload that stopped midway leaves its claim: see check_store_url
    return location.url


def check_store_url(url: str, storage_options: Mapping[str, Any] | None, *, overwrite: bool,
                    ours: Callable[[Location, Mapping[str, int]], bool], what: str) -> tuple[Location, dict[str, int]]:
    """The check of :func:`upload_store` on its own: TargetExists unless the prefix ``url`` is empty, or holds a
    store ``ours`` accepts (or what an interrupted upload left, every object named by its claim) and ``overwrite``
    is true; returns the location and the objects present."""
    location = Location.of(url, storage_options)
    _check_prefix(location)
    present = listing(location)
    if present and not overwrite:
        raise TargetExists(location.url, None, f"already holds {len(present)} object(s); pass overwrite=True "
                                               "(CLI: --overwrite) to replace them")
    if present and not ours(location, present) and unfinished_upload_objects(location, present) is None:
        raise TargetExists(location.url, None, f"does not hold {what}; refusing to replace its objects")
    return location, present


def root_attributes(location: Location, present: Mapping[str, int]) -> dict[str, Any]:
    """The attributes of the zarr group at ``location`` (v3 ``zarr.json`` or v2 ``.zattrs``); {} when none."""
    for name, v3 in (("zarr.json", True), (".zattrs", False)):
        if name in present and present[name] < 1 << 20:
            url = location.child(name)
            try:
                document = json.loads(storage_call(url, f"reading {name}", lambda u=url: location.fs.cat_file(u)))
            except ValueError:
                return {}
            attributes = document.get("attributes", {}) if v3 else document
            return attributes if isinstance(attributes, dict) else {}
    return {}
