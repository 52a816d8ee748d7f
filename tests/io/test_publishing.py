"""One publishing path (cellspec_sc.io._publish): no writer replaces what it was not told to replace.

Real processes race on the same target; a target appearing between a writer's check and its publish is
never swapped out; overwrite=True keeps one complete object at the target at every moment; every writer
and the command line use the same check, before they read their input.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import cellspec_sc as cs
from cellspec_sc.bridges.anndata import H5AD_FILE, read_h5ad, write_h5ad
from cellspec_sc.cli.main import main
from cellspec_sc.errors import WriteFailed
from cellspec_sc.io import CELLSPEC_DIRECTORY, HTML_FILE, ChangedSinceRead, TargetExists, check_target, publishing
from cellspec_sc.io import _staging as staging

# Big enough that the writers' work overlaps on a loaded machine (with the old check-then-swap all four
# "won" at 3,000 cells and one object was silently gone), small enough to keep the race quick.
RACE_CELLS, OVERWRITE_CELLS = 3_000, 1_000


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if ".cellspec-" in p.name)


def objects(seeds, n_cells):
    return {seed: cs.example(n_cells=n_cells, n_features=30, seed=seed) for seed in seeds}


def read_any(target: Path, kind: str):
    return read_h5ad(target) if kind == "h5ad" else cs.read(target)


WRITER = """
import sys, time, pathlib
import cellspec_sc as cs
from cellspec_sc.bridges.anndata._files import write_h5ad
from cellspec_sc.io._refusals import ChangedSinceRead, TargetExists
target, seed, kind, overwrite, go, rounds = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1", \\
    pathlib.Path(sys.argv[5]), int(sys.argv[6])
x = cs.example(n_cells=int(sys.argv[7]), n_features=30, seed=seed)
write = write_h5ad if kind == "h5ad" else cs.write
print("ready", flush=True)
while not go.exists():
    time.sleep(0.001)
for _ in range(rounds):
    try:
        write(x, target, overwrite=overwrite)
        print("won", flush=True)
    except TargetExists:
        print("TargetExists", flush=True)
"""


def race(tmp_path: Path, target: Path, kind: str, seeds, n_cells: int, overwrite: bool, rounds: int = 1, during=None):
    """Start one writer process per seed, let them go at once; returns {seed: [outcome per round]}."""
    go = tmp_path / "go"
    children = {seed: subprocess.Popen([sys.executable, "-c", WRITER, str(target), str(seed), kind,
                                        "1" if overwrite else "0", str(go), str(rounds), str(n_cells)],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for seed in seeds}
    for child in children.values():
        assert child.stdout.readline().strip() == "ready"
    go.touch()
    if during is not None:
        during(children)
    outcomes = {}
    for seed, child in children.items():
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
        outcomes[seed] = out.split()
    return outcomes


@pytest.mark.parametrize("kind", ["directory", "h5ad"])
def test_racing_writers_without_overwrite_exactly_one_wins(tmp_path, kind):
    seeds = (1, 2, 3, 4)
    target = tmp_path / ("t.h5ad" if kind == "h5ad" else "t")
    outcomes = race(tmp_path, target, kind, seeds, RACE_CELLS, overwrite=False)
    winners = [seed for seed, said in outcomes.items() if said == ["won"]]
    assert len(winners) == 1, outcomes
    assert all(said == ["TargetExists"] for seed, said in outcomes.items() if seed != winners[0]), outcomes
    assert read_any(target, kind).equals(objects(winners, RACE_CELLS)[winners[0]])  # the winner's object, intact
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("kind", ["directory", "h5ad"])
def test_racing_writers_with_overwrite_leave_one_complete_object(tmp_path, kind):
    seeds = (1, 2, 3)
    target = tmp_path / ("t.h5ad" if kind == "h5ad" else "t")
    expected = objects(seeds, OVERWRITE_CELLS)
    seen: list = []

    def read_while_writing(children):
        while any(child.poll() is None for child in children.values()):
            if target.exists():
                try:
                    got = read_any(target, kind)  # never a partial object, never another refusal
                except ChangedSinceRead:  # the directory was swapped under this read: allowed, said so
                    seen.append("changed")
                    continue
                seen.append(next(s for s, x in expected.items() if got.equals(x)))

    outcomes = race(tmp_path, target, kind, seeds, OVERWRITE_CELLS, overwrite=True, rounds=2, during=read_while_writing)
    assert all(said == ["won"] * 2 for said in outcomes.values()), outcomes
    final = read_any(target, kind)
    assert any(final.equals(x) for x in expected.values())
    assert [s for s in seen if s != "changed"], "the reader never read the target while the writers ran"
    assert leftovers(tmp_path) == []


def test_overwrite_check_is_not_fooled_by_another_writer_swapping_meanwhile(tmp_path, monkeypatch):
    """Another overwrite=True writer swaps its directory in while this writer's check walks the old one:
    the files seen and the manifest read then belong to two different complete directories. The check
    must look again at what is there now, not refuse a complete directory as one that would lose files."""
    from cellspec_sc.io import _publish

    target = tmp_path / "t"
    cs.write(cs.example(n_cells=20, seed=1), target)
    other = cs.example(n_cells=30, seed=2, adjacency=True)  # one file more than the first: contacts
    mine = cs.example(n_cells=40, seed=3)
    walk = _publish._entries
    swaps = []

    def walk_then_lose_the_race(folder):
        seen = walk(folder)
        if not swaps:
            swaps.append(folder)
            cs.write(other, target, overwrite=True)  # what the other process does between two steps of ours
        return seen

    monkeypatch.setattr(_publish, "_entries", walk_then_lose_the_race)
    cs.write(mine, target, overwrite=True)
    assert swaps, "the other writer never swapped during the check"
    assert cs.read(target).equals(mine)
    assert leftovers(tmp_path) == []


# -- a target appearing between the check and the publish (deterministic, both rename paths) -----
@pytest.mark.parametrize("renameat2", [True, False])
def test_directory_appearing_meanwhile_is_not_replaced(tmp_path, monkeypatch, renameat2):
    monkeypatch.setattr(staging, "USE_RENAMEAT2", renameat2)
    target = tmp_path / "t"
    first, second = cs.example(n_cells=5, seed=1), cs.example(n_cells=6, seed=2)
    with pytest.raises(TargetExists, match="appeared while"):
        with publishing(target, CELLSPEC_DIRECTORY, overwrite=False) as payload:
            payload.mkdir()
            (payload / "DONE").write_text("not published")
            cs.write(first, target)  # another writer wins meanwhile
    assert cs.read(target).equals(first) and leftovers(tmp_path) == []
    with pytest.raises(TargetExists):  # through the writer itself
        cs.write(second, target)
    assert cs.read(target).equals(first)


@pytest.mark.parametrize("renameat2", [True, False])
def test_file_appearing_meanwhile_is_not_replaced(tmp_path, monkeypatch, renameat2):
    monkeypatch.setattr(staging, "USE_RENAMEAT2", renameat2)
    target = tmp_path / "t.h5ad"
    first = cs.example(n_cells=5, seed=1)
    with pytest.raises(TargetExists, match="appeared while"):
        with publishing(target, H5AD_FILE, overwrite=False) as payload:
            payload.write_bytes(b"not published")
            write_h5ad(first, target)
    assert read_h5ad(target).equals(first) and leftovers(tmp_path) == []


def test_overwrite_keeps_the_old_file_until_the_new_one_is_complete(tmp_path):
    target = tmp_path / "page.html"
    target.write_text("<!DOCTYPE html><p>old</p>")
    with pytest.raises(RuntimeError):
        with publishing(target, HTML_FILE, overwrite=True) as payload:
            payload.write_text("<!DOCTYPE html><p>half")
            assert target.read_text() == "<!DOCTYPE html><p>old</p>"
            raise RuntimeError("writer failed")
    assert target.read_text() == "<!DOCTYPE html><p>old</p>" and leftovers(tmp_path) == []
    with publishing(target, HTML_FILE, overwrite=True) as payload:
        payload.write_text("<!DOCTYPE html><p>new</p>")
    assert target.read_text() == "<!DOCTYPE html><p>new</p>"


def test_a_file_is_flushed_while_written_and_a_failed_flush_fails_the_write(tmp_path, monkeypatch):
    """The payload goes to disk while the writer is still writing (the fsync before publishing then finds
    little left); a failed flush is the write's failure, never swallowed: nothing is published."""
    flushed_sizes, flush = [], staging._flush_started

    def recording(fd):
        flushed_sizes.append(os.fstat(fd).st_size)
        flush(fd)

    monkeypatch.setattr(staging, "_flush_started", recording)
    target = tmp_path / "page.html"
    page = "<!DOCTYPE html><p>" + "x" * 1_000_000
    with publishing(target, HTML_FILE, overwrite=False) as payload:
        payload.write_text(page)
        deadline = time.monotonic() + 10
        while not flushed_sizes and time.monotonic() < deadline:
            time.sleep(0.01)
        assert flushed_sizes[0] == len(page) and not target.exists()  # flushed before the block ended
    assert target.read_text() == page

    def failing(fd):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(staging, "_flush_started", failing)
    other = tmp_path / "other.html"
    with pytest.raises(WriteFailed) as caught:
        with publishing(other, HTML_FILE, overwrite=False) as payload:
            payload.write_text("<!DOCTYPE html><p>lost</p>")
            time.sleep(0.5)
    assert caught.value.errno == errno.EIO and str(other) in str(caught.value)
    assert not other.exists() and leftovers(tmp_path) == []


def test_overwrite_replaces_only_its_own_kind(tmp_path):
    (tmp_path / "notes.html").write_text("my notes, not a page")
    (tmp_path / "link.html").symlink_to(tmp_path / "notes.html")
    for name, reason in (("notes.html", "is not an HTML file"), ("link.html", "symbolic link")):
        with pytest.raises(TargetExists, match=reason):
            check_target(tmp_path / name, HTML_FILE, overwrite=True)
    w = cs.preview(cs.example())
    with pytest.raises(TargetExists, match="is not a PNG file"):
        w.save_png(tmp_path / "notes.html")
    assert (tmp_path / "notes.html").read_text() == "my notes, not a page"
    assert w.save_png(tmp_path / "view.png").read_bytes().startswith(b"\x89PNG")
    assert w.save_png(tmp_path / "view.png").exists()  # a PNG is replaced
    with pytest.raises(TargetExists, match="already exists"):
        w.save_png(tmp_path / "view.png", overwrite=False)


# -- the command line checks the target before it reads its input -------------------------------
def fifo(tmp_path: Path, name: str) -> Path:
    """An input that hangs whoever opens it for reading (nobody writes to it)."""
    path = tmp_path / name
    os.mkfifo(path)
    return path


def run_cli(argv: list[str], seconds: float = 60) -> int:
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(main(argv)), daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        with open(argv[2] if argv[0] == "import" else argv[1], "wb"):  # release the reader blocked on the FIFO
            pass
        worker.join(10)
        pytest.fail(f"cellspec {' '.join(argv)} read its input before refusing the target")
    return result[0]


def test_cli_refuses_the_target_before_reading_the_input(tmp_path, capsys):
    existing = cs.write(cs.example(n_cells=5), tmp_path / "existing")
    (tmp_path / "x.h5ad").write_bytes(b"an existing file")
    (tmp_path / "notes.html").write_text("not a page")
    (tmp_path / "scene.luxar.zarr").mkdir()
    (tmp_path / "scene.luxar.zarr" / "mine.txt").write_text("keep")
    cases = [
        (["import", "qupath", str(fifo(tmp_path, "q.tsv")), str(existing), "--pixel-size", "0.5"], "already exists"),
        (["import", "mcmicro", str(fifo(tmp_path, "m.csv")), str(existing), "--pixel-size", "0.5"], "already exists"),
        (["convert", str(fifo(tmp_path, "in.h5ad")), str(tmp_path / "x.h5ad")], "already exists"),
        (["convert", str(fifo(tmp_path, "in2.h5ad")), str(tmp_path / "x.txt")], "unknown target suffix"),
        (["luxar", str(fifo(tmp_path, "in3.h5ad")), str(tmp_path / "scene.luxar.zarr")], "is not a Luxar scene"),
        (["preview", str(fifo(tmp_path, "in4.h5ad")), "-o", str(tmp_path / "notes.html")], "is not an HTML file"),
    ]
    for argv, message in cases:
        capsys.readouterr()
        began = time.monotonic()
        assert run_cli(argv) == 2, argv
        assert message in capsys.readouterr().err, argv
        assert time.monotonic() - began < 30
    assert (tmp_path / "x.h5ad").read_bytes() == b"an existing file"
    assert (tmp_path / "notes.html").read_text() == "not a page"
    assert (tmp_path / "scene.luxar.zarr" / "mine.txt").read_text() == "keep"
    assert not (tmp_path / "x.txt").exists()


def test_convert_writes_cellspec_suffix_and_bare_names_as_directories(tmp_path):
    assert main(["convert", "example", str(tmp_path / "a.cellspec")]) == 0
    assert main(["convert", "example", str(tmp_path / "b")]) == 0
    assert cs.read(tmp_path / "a.cellspec").equals(cs.read(tmp_path / "b"))
