"""MANIFEST.sha256 and DONE: what a complete cellspec directory lists, and its checks.

``MANIFEST.sha256`` is in ``sha256sum`` format (``<hex>  <relative path>``), so
``sha256sum -c MANIFEST.sha256`` passes inside the directory. ``DONE`` is written
last and holds the hex SHA-256 of ``MANIFEST.sha256`` and a newline.

>>> parse_manifest_line("ab" * 32 + "  cells.parquet", "MANIFEST.sha256", 1, ".")
('cells.parquet', 'abababababababababababababababababababababababababababababababab')
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path, PurePosixPath

from cellspec_sc._files import sha256_file
from cellspec_sc.io._bounded import (
    DEFAULT_LIMITS,
    DONE_MAX_BYTES,
    MANIFEST_LINE_MAX_BYTES,
    ReadLimits,
    open_regular,
    read_bounded,
)
from cellspec_sc.io._hashing import BackgroundHash
from cellspec_sc.io._refusals import (
    ChecksumMismatch,
    DoneMismatch,
    IncompleteDirectory,
    ListedFileMissing,
    ManifestInvalid,
    UnlistedDataFile,
    UnsafePath,
    warn_unlisted,
)
from cellspec_sc.io._staging import fsync_file

MANIFEST, DONE, METADATA = "MANIFEST.sha256", "DONE", "cellspec.json"
DATA_FILES = ("cells.parquet", "cells.tsv.gz", "adjacency.parquet", "adjacency.tsv.gz")
MARKERS = (DONE, MANIFEST, METADATA)
_LINE = re.compile(r"([0-9a-fA-F]{64}) [ *](.+)")


def has_markers(path: Path) -> bool:
    """Whether the directory ``path`` holds a file only a cellspec directory has (complete or not)."""
    return path.is_dir() and any((path / name).exists() for name in MARKERS)


def directory_stamp(directory: Path) -> tuple[int, ...] | None:
    """Identity of a directory and its DONE (device, inodes, DONE's size and time); a writer that publishes
    a new directory at the same path changes it. None when the directory or DONE cannot be looked at."""
    try:
        folder, done = os.stat(directory), os.stat(directory / DONE, follow_symlinks=False)
    except OSError:
        return None
    return folder.st_dev, folder.st_ino, done.st_ino, done.st_size, done.st_mtime_ns


def write_manifest(stage: Path, files: Sequence[str] | Mapping[str, str | None]) -> str:
    """Write MANIFEST.sha256 for ``files`` (relative paths, in order), then DONE; both fsynced. Returns the
    manifest hash. A mapping gives the digest a writer computed while writing (None: hashed here).
    """
    known = files if isinstance(files, Mapping) else {}
    lines = "".join(f"{known.get(name) or sha256_file(stage / name)}  {name}\n" for name in files)
    manifest = stage / MANIFEST
    manifest.write_bytes(lines.encode("utf-8"))
    fsync_file(manifest)
    digest = hashlib.sha256(lines.encode("utf-8")).hexdigest()
    (stage / DONE).write_bytes(f"{digest}\n".encode("ascii"))
    fsync_file(stage / DONE)
    return digest


def checked_relative(directory: Path, name: str, file: str, *, must_exist: bool = True) -> Path:
    """``directory / name`` after checking that ``name`` is relative and stays inside ``directory``.

    Checks the text first (absolute, ``..``, backslashes), then where symlinks lead.
    """
    pure = check_relative_name(directory, name, file)
    path = directory.joinpath(*pure.parts)
    if must_exist or os.path.lexists(path):
        resolved = path.resolve()
        if not resolved.is_relative_to(directory.resolve()):
            raise UnsafePath(directory, file, f"path {name!r} leads outside the directory (to {resolved})")
    return path


def check_relative_name(directory: Path | str, name: str, file: str) -> PurePosixPath:
    """``name`` if it is a plain, normalised relative path (the text checks of :func:`checked_relative`, for
    directories on object storage, where nothing can lead elsewhere once the name is clean)."""
    pure = PurePosixPath(name)
    if not name or pure.is_absolute() or re.match(r"^[A-Za-z]:", name) or any(c in name for c in "\\\n\r"):
        raise UnsafePath(directory, file, f"path {name!r} is absolute or not a plain relative path")
    if any(part in ("..", ".") for part in name.split("/")) or name.endswith("/") or "//" in name:
        raise UnsafePath(directory, file, f"path {name!r} leaves the directory or is not normalised")
    return pure


def parse_manifest_line(line: str, file: str, number: int, directory: str | Path) -> tuple[str, str]:
    """(relative path, lowercase hex digest) of one manifest line."""
    match = _LINE.fullmatch(line)
    if not match:
        raise ManifestInvalid(directory, file, f"line {number} is not '<sha256>  <path>': {line[:80]!r}")
    return match.group(2), match.group(1).lower()


def read_manifest(directory: Path) -> dict[str, str]:
    """The manifest entries {relative path: sha256} after checking DONE and every path's safety.

    Nothing listed is opened here: paths are refused before any data file is read.
    """
    done, manifest = directory / DONE, directory / MANIFEST
    if not os.path.lexists(done):
        raise IncompleteDirectory(directory, DONE, "file is missing (the directory was not completely written)")
    if not os.path.lexists(manifest):
        raise ManifestInvalid(directory, MANIFEST, "file is missing")
    checked_relative(directory, DONE, DONE)
    checked_relative(directory, MANIFEST, MANIFEST)
    done_text = read_bounded(done, directory, DONE, DONE_MAX_BYTES)
    raw = read_bounded(manifest, directory, MANIFEST, _manifest_bound(directory, manifest))
    return manifest_entries(directory, done_text, raw,
                            lambda name: checked_relative(directory, name, MANIFEST, must_exist=False))


def manifest_entries(where: str | Path, done_text: bytes, raw: bytes,
                     check_name: Callable[[str], object]) -> dict[str, str]:
    """The entries {relative path: sha256} of the manifest bytes ``raw`` of the directory at ``where`` (a path or
    a URL), after checking that ``done_text`` (DONE's bytes) holds their SHA-256; ``check_name`` refuses an
    unsafe listed name. One reading of the format for local directories and object storage."""
    recorded = done_text.decode("ascii", errors="replace").strip().lower()
    actual = hashlib.sha256(raw).hexdigest()
    if recorded != actual:
        raise DoneMismatch(where, DONE, f"holds {recorded[:64]!r} but MANIFEST.sha256 hashes to {actual}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ManifestInvalid(where, MANIFEST, f"not UTF-8 ({err})") from None
    entries: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, digest = parse_manifest_line(line, MANIFEST, number, where)
        if name in entries:
            raise ManifestInvalid(where, MANIFEST, f"line {number} lists {name!r} a second time")
        if name in (DONE, MANIFEST):
            raise ManifestInvalid(where, MANIFEST, f"line {number} lists {name!r}, which cannot list itself")
        check_name(name)
        entries[name] = digest
    return entries


def lost_by_replacing(present: Sequence[str], entries: Mapping[str, str] | None,
                      unsafe: Collection[str] = ()) -> list[str]:
    """The names among ``present`` (what a directory or prefix holds) that replacing it would lose although its
    writer did not publish them: the rule of ``overwrite=True`` for local directories and object storage alike.

    ``entries`` is the manifest as read after checking DONE, None when it could not be read. ``[]`` for a
    complete published directory (the manifest lists every name present, DONE and itself aside, and nothing
    listed is missing or among ``unsafe``, e.g. symbolic links); otherwise the names its manifest does not
    list, or all of them when the manifest is unreadable, a listed name is missing or one is unsafe.

    >>> lost_by_replacing(["DONE", "MANIFEST.sha256", "cells.parquet", "notes.txt"], {"cells.parquet": "ab"})
    ['notes.txt']
    >>> lost_by_replacing(["DONE", "cells.parquet"], None)
    ['DONE', 'cells.parquet']
    """
    if entries is None:
        return list(present)
    listed = {*entries, DONE, MANIFEST}
    if not listed <= set(present) or listed & set(unsafe):
        return list(present)
    return [name for name in present if name not in listed]


def _manifest_bound(directory: Path, manifest: Path) -> int:
    """MANIFEST.sha256 may hold one line of at most MANIFEST_LINE_MAX_BYTES per file in the directory: the
    files are counted only as far as needed to cover the manifest's size."""
    try:
        size = os.stat(manifest).st_size
    except OSError:
        return MANIFEST_LINE_MAX_BYTES
    counted = 0
    for _, _, names in os.walk(directory):
        counted += len(names)
        if counted * MANIFEST_LINE_MAX_BYTES >= size:
            break
    return max(1, counted) * MANIFEST_LINE_MAX_BYTES


def verify_listed(directory: Path, entries: dict[str, str], deferred: Collection[str] = (),
                  limits: ReadLimits = DEFAULT_LIMITS) -> PendingHashes:
    """Every listed file exists, is a regular file inside the directory and has its recorded hash.

    Files named in ``deferred`` (the big data files) are hashed in a thread while the caller goes on
    decoding them; the returned :class:`PendingHashes` refuses them in ``check()``.
    """
    pending = PendingHashes(directory)
    for name, digest in entries.items():
        path = checked_relative(directory, name, name, must_exist=False)
        if not os.path.lexists(path):
            raise ListedFileMissing(directory, name, "listed in MANIFEST.sha256 but missing")
        checked_relative(directory, name, name)
        # opened without blocking and checked: a FIFO or device is refused before anything waits on it
        open_regular(path, directory, name, limits.max_metadata_bytes if name == METADATA else None).close()
        if name in deferred:
            pending.add(name, digest, BackgroundHash(path))
        else:
            _compare(directory, name, sha256_file(path), digest)
    return pending


def _compare(directory: Path, name: str, actual: str, digest: str) -> None:
    if actual != digest:
        raise ChecksumMismatch(directory, name, f"SHA-256 is {actual}, MANIFEST.sha256 records {digest}")


class PendingHashes:
    """Hashes still being computed in threads; :meth:`check` waits for them and refuses a mismatch."""

    def __init__(self, directory: Path):
        self.directory = directory
        self._pending: list[tuple[str, str, BackgroundHash]] = []

    def add(self, name: str, digest: str, hashing: BackgroundHash) -> None:
        self._pending.append((name, digest, hashing))

    def check(self) -> None:
        """Raise ChecksumMismatch for the first file whose hash differs (OSError if it became unreadable)."""
        while self._pending:
            name, digest, hashing = self._pending.pop(0)
            _compare(self.directory, name, hashing.result(), digest)


def check_unlisted(directory: Path, entries: dict[str, str]) -> None:
    """Refuse unlisted data files and cellspec.json; warn about (and ignore) any other unlisted file."""
    unlisted = []
    for folder, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files):
            rel = (Path(folder) / name).relative_to(directory).as_posix()
            if rel not in entries and rel not in (DONE, MANIFEST):
                unlisted.append(rel)
    data = [name for name in unlisted if name in DATA_FILES or name == METADATA]
    if data:
        raise UnlistedDataFile(directory, data[0], "present but not listed in MANIFEST.sha256")
    if unlisted:
        warn_unlisted(directory, unlisted)


def verify_directory(directory: Path, deferred: Collection[str] = (),
                     limits: ReadLimits = DEFAULT_LIMITS) -> tuple[dict[str, str], PendingHashes]:
    """All manifest checks of a directory, in the order of the format's rules; returns the entries and
    the hashes of the ``deferred`` files, still being computed (call ``check()`` on them before use)."""
    entries = read_manifest(directory)
    pending = verify_listed(directory, entries, deferred, limits)
    check_unlisted(directory, entries)
    return entries, pending
