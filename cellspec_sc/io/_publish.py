"""The one publishing path of every writer: check the target, stage next to it, publish atomically.

A writer describes what it publishes with a :class:`TargetKind` (its name, file
or directory, which existing paths it may replace) and builds its output at the
path :func:`publishing` hands it::

    with publishing(path, CELLSPEC_DIRECTORY, overwrite=False) as payload:
        payload.mkdir()
        ...  # write the files

When the block ends without an exception the payload is fsynced and moved to
``path`` in one step (:func:`cellspec_sc.io._staging.publish`); a file payload is
flushed to disk while it is written (:func:`cellspec_sc.io._staging.flushing_behind`),
so that last fsync finds little left to do:

- ``overwrite=False``: the final rename fails if anything is at ``path``, also
  something another process published a moment ago; the loser gets
  :class:`~cellspec_sc.io._refusals.TargetExists` and nothing is deleted.
- ``overwrite=True``: only a path of the writer's own kind is replaced, and only
  once the new one is complete (a directory is swapped in atomically, a file
  renamed over the old one), so ``path`` always holds one complete object.

An exception leaves no staging behind and ``path`` as it was; an ``OSError``
(disk full, read-only file system, permissions, too many open files) becomes
:class:`~cellspec_sc.errors.WriteFailed` naming the target and the file.
:func:`check_target` is the same check on its own, for the command line to
refuse a target before it reads its input.

>>> import tempfile, pathlib
>>> target = pathlib.Path(tempfile.mkdtemp()) / "note.html"
>>> with publishing(target, HTML_FILE, overwrite=False) as payload:
...     _ = payload.write_text("<!DOCTYPE html><p>hi</p>")
>>> target.read_text()
'<!DOCTYPE html><p>hi</p>'
>>> try:
...     check_target(target, HTML_FILE, overwrite=False)
... except TargetExists as err:
...     print(err.detail)
already exists (a file); pass overwrite=True (CLI: --overwrite) to replace it
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cellspec_sc.errors import CellspecError, WriteFailed
from cellspec_sc.io._manifest import lost_by_replacing, read_manifest
from cellspec_sc.io._refusals import InvalidTarget, TargetExists
from cellspec_sc.io._staging import clean_stale, flushing_behind, fsync_file, fsync_tree, publish, staging_directory


@dataclass(frozen=True)
class TargetKind:
    """What a writer publishes: ``name`` for messages, ``directory`` or a single file, and
    ``replaceable(path)``: whether an existing (non-symlink) path is one of its own that
    ``overwrite=True`` may replace, and for a directory ``lost(path)``: the files replacing it
    would lose that the writer did not publish (any: the target is refused, naming them); ``url_check(url,
    storage_options, overwrite)`` is its check of a URL on object storage (None: the writer writes no URLs;
    :func:`cellspec_sc.io._remote.check_url_target_of` knows the cellspec directory's own)."""

    name: str
    directory: bool
    replaceable: Callable[[Path], bool]
    lost: Callable[[Path], list[str]] | None = None
    url_check: Callable[[str, Mapping[str, Any] | None, bool], object] | None = None


# how many entries of a folder that is not ours are looked at: enough to name them, never a walk of a home folder
_LOST_NAMES_LOOKED_AT = 1000


def files_lost_by_replacing(path: str | os.PathLike) -> list[str]:
    """The entries of the folder ``path`` that replacing it would lose although no writer of ours published them.

    ``[]`` when ``path`` is an empty folder or a complete published directory: DONE holds the hash of
    MANIFEST.sha256 and the manifest lists exactly the regular files present (a cellspec directory or a
    cohort dataset). Otherwise the files and symbolic links present (relative POSIX paths, sorted; empty
    folders end in ``/``) that the manifest does not list, or all of them when DONE or the manifest is
    missing or wrong or a listed file is missing; at most the first thousand are looked at.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "DONE").write_text(""); _ = (folder / "thesis.docx").write_text("work")
    >>> files_lost_by_replacing(folder)
    ['DONE', 'thesis.docx']
    """
    folder = Path(path)
    present, symlinks = _entries(folder)
    if not present:
        return []
    try:
        entries = read_manifest(folder)
    except (CellspecError, OSError):
        entries = None
    return lost_by_replacing(present, entries, unsafe=symlinks)


def _entries(folder: Path) -> tuple[list[str], set[str]]:
    """Files, symbolic links and empty folders under ``folder`` (not following links), and which are links."""
    found: list[str] = []
    links: set[str] = set()
    for parent, dirs, files in os.walk(folder):
        relative = Path(parent).relative_to(folder).as_posix()
        prefix = "" if relative == "." else f"{relative}/"
        for name in list(dirs):
            if os.path.islink(os.path.join(parent, name)):
                dirs.remove(name)
                files.append(name)
        if not dirs and not files and prefix:
            found.append(prefix)
        for name in files:
            found.append(prefix + name)
            if os.path.islink(os.path.join(parent, name)):
                links.add(prefix + name)
        if len(found) >= _LOST_NAMES_LOOKED_AT:
            break
    return sorted(found), links


def _is_directory(path: Path) -> bool:
    return path.is_dir()


def _regular_file_starting_with(*signatures: bytes) -> Callable[[Path], bool]:
    def replaceable(path: Path) -> bool:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        with open(path, "rb") as handle:
            head = handle.read(64).lstrip().lower()
        return any(head.startswith(s.lower()) for s in signatures)

    return replaceable


def zarr_root_attributes(path: str | os.PathLike) -> dict:
    """The attributes of the root group of a zarr store (v3 ``zarr.json``, else v2 ``.zattrs``); {} when
    ``path`` is not a readable zarr store. Writers recognise their own stores by them."""
    for name, key in (("zarr.json", "attributes"), (".zattrs", None)):
        try:
            document = json.loads((Path(path) / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        attrs = document.get(key, {}) if key and isinstance(document, dict) else document
        if isinstance(attrs, dict):
            return attrs
    return {}


CELLSPEC_DIRECTORY = TargetKind("a cellspec directory", True, _is_directory, files_lost_by_replacing)
HTML_FILE = TargetKind("an HTML file", False, _regular_file_starting_with(b"<!DOCTYPE html", b"<html"))
PNG_FILE = TargetKind("a PNG file", False, _regular_file_starting_with(b"\x89PNG\r\n\x1a\n"))


def check_target(path: str | os.PathLike, kind: TargetKind, *, overwrite: bool) -> Path:
    """``path`` as a Path if a writer of ``kind`` may publish there, else raise TargetExists.

    Free paths are fine; an existing one only with ``overwrite=True`` and only if it is of
    ``kind`` (never a symbolic link, never another kind of file or folder).
    """
    target = Path(path)
    check_path_text(target)
    if not (target.exists() or target.is_symlink()):
        return target
    if not overwrite:
        raise TargetExists(target, None, f"already exists ({_what(target)}); pass overwrite=True "
                                         "(CLI: --overwrite) to replace it")
    if target.is_symlink():
        raise TargetExists(target, None, "is a symbolic link; refusing to replace it")
    if not kind.replaceable(target):
        raise TargetExists(target, None, f"exists and is not {kind.name}; refusing to replace it")
    _refuse_losses(target, kind)
    return target


def _refuse_losses(target: Path, kind: TargetKind, where: Path | None = None) -> None:
    lost = kind.lost(where) if kind.lost and where else _losses_of_one_directory(target, kind)
    if lost:
        shown = ", ".join(lost[:10]) + (f" and {len(lost) - 10} more" if len(lost) > 10 else "")
        raise TargetExists(target, None, f"is not a complete {kind.name.removeprefix('a ')} (a valid DONE and "
                                         f"a manifest listing exactly the files present); replacing it would "
                                         f"lose {shown}; refusing to replace it")


# how often the check is repeated while other writers keep swapping their directories in
_SWAPS_WAITED_OUT = 50


def _losses_of_one_directory(target: Path, kind: TargetKind) -> list[str]:
    """``kind.lost(target)`` of one directory: another writer with ``overwrite=True`` may swap its directory in
    while the check walks the folder and reads DONE and the manifest, which would mix two complete directories
    into one that looks incomplete. The check is repeated until the directory at ``target`` stayed the same
    through it (its inode and change time before and after)."""
    if not kind.lost:
        return []
    lost: list[str] = []
    for _ in range(_SWAPS_WAITED_OUT):
        before = _identity(target)
        lost = kind.lost(target)
        if not lost or _identity(target) == before:
            return lost
    return lost


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_ctime_ns


# room for what a writer puts below its target (staging names, files of the format, outline folders)
_BELOW_TARGET_BYTES = 512


def check_path_text(target: Path) -> None:
    """Refuse (InvalidTarget) a path that is not UTF-8 text (pyarrow and JSON write UTF-8), that has a name longer
    than the file system allows, or that is too long as a whole: before anything is written, in words, rather
    than as the OSError or UnicodeEncodeError of whichever library meets it first.

    >>> check_path_text(Path("run1"))
    >>> try:
    ...     check_path_text(Path("n" * 300))
    ... except InvalidTarget as err:
    ...     print(err.detail)
    a name of this path is 300 bytes long, too long for the file system (at most 255)
    """
    text = str(target)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidTarget(text.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace"), None,
                            "is not valid UTF-8 text; choose a name in UTF-8") from None
    existing = next((p for p in (target.absolute(), *target.absolute().parents) if _is_dir(p)), Path("/"))
    name_max, path_max = _limit(existing, "PC_NAME_MAX", 255), _limit(existing, "PC_PATH_MAX", 4096)
    longest = max((len(os.fsencode(part)) for part in target.parts), default=0)
    if longest > name_max:
        raise InvalidTarget(target.parent, None, f"a name of this path is {longest} bytes long, too long for the "
                                                 f"file system (at most {name_max})")
    total = len(os.fsencode(str(target.absolute())))
    if total + _BELOW_TARGET_BYTES > path_max:
        raise InvalidTarget(target.parent, None, f"this path is {total} bytes long, too long for the file system "
                                                 f"(at most {path_max - _BELOW_TARGET_BYTES} for a target)")


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def _limit(folder: Path, name: str, default: int) -> int:
    try:
        return int(os.pathconf(folder, name))
    except (OSError, ValueError):
        return default


def _what(target: Path) -> str:
    if target.is_symlink():
        return "a symbolic link"
    return "a directory" if target.is_dir() else "a file"


@contextlib.contextmanager
def publishing(path: str | os.PathLike, kind: TargetKind, *, overwrite: bool) -> Iterator[Path]:
    """Check ``path`` (:func:`check_target`), then yield a fresh path next to it to build the output in
    (not created yet: the writer makes it, as a file or a directory per ``kind``); publish it
    atomically when the block succeeds. See the module docstring for the guarantees."""
    target = check_target(path, kind, overwrite=overwrite)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        clean_stale(target)
        with staging_directory(target) as stage:
            payload = stage / target.name
            try:
                with contextlib.nullcontext() if kind.directory else flushing_behind(payload):
                    yield payload
                _finish(payload, target, kind, overwrite)
            except OSError as err:
                raise WriteFailed(target, err, _file_in(err, payload)) from err
    except OSError as err:
        raise WriteFailed(target, err) from err


def _file_in(err: OSError, payload: Path) -> str | None:
    """The file an OSError names, relative to the output (None when it names none or another)."""
    if not err.filename:
        return None
    named = Path(os.fsdecode(err.filename))
    if named == payload:
        return None
    try:
        return named.relative_to(payload).as_posix()
    except ValueError:
        return named.name


def _finish(payload: Path, target: Path, kind: TargetKind, overwrite: bool) -> None:
    if kind.directory != payload.is_dir() or not (payload.exists()):
        raise AssertionError(f"the writer of {kind.name} left no {'directory' if kind.directory else 'file'} "
                             f"at {payload}")
    if kind.directory:
        fsync_tree(payload)
    else:
        fsync_file(payload)
    if overwrite:
        check_target(target, kind, overwrite=True)  # what appeared meanwhile must be ours to replace too
    try:
        publish(payload, target, replace=overwrite)
    except FileExistsError:
        raise TargetExists(target, None, "appeared while this writer was writing; nothing was replaced, "
                                         "nothing of it was deleted") from None
    if overwrite and kind.directory and payload.is_dir():
        _keep_what_changed_meanwhile(payload, target, kind)


def _keep_what_changed_meanwhile(old: Path, target: Path, kind: TargetKind) -> None:
    """The directory swapped out (now at ``old``, removed by the caller) is checked once more: what was
    added to it between the last check and the swap is not deleted, the old directory is swapped back."""
    try:
        _refuse_losses(target, kind, where=old)
    except TargetExists:
        publish(old, target, replace=True)
        raise
