"""Missing permissions (EACCES) on write and read, provoked for real.

Tests usually run as root here, and root ignores permission bits. The subprocess therefore runs
without the capabilities that let root bypass them (``setpriv`` drops CAP_DAC_OVERRIDE,
CAP_DAC_READ_SEARCH and CAP_FOWNER from its bounding set), on folders owned by ``nobody``. When the
tests run as an ordinary user the permission bits apply anyway and no capability needs dropping.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cellspec_sc as cs

NOBODY = 65534
DROPPED = "-dac_override,-dac_read_search,-fowner"


def run_without_override(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter that is subject to file permission bits."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: permission bits cannot be enforced here")
        prefix = [setpriv, f"--bounding-set={DROPPED}", f"--inh-caps={DROPPED}"]
    return subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def hand_to_nobody(path: Path, mode: int) -> None:
    if os.geteuid() == 0:
        os.chown(path, NOBODY, NOBODY)
    path.chmod(mode)


def test_write_into_a_folder_without_write_permission_names_the_target(tmp_path):
    parent = tmp_path / "locked"
    parent.mkdir()
    hand_to_nobody(parent, 0o755)
    target = parent / "slide"
    result = run_without_override(
        "import cellspec_sc as cs\n"
        "from cellspec_sc.errors import WriteFailed\n"
        "try:\n"
        f"    cs.write(cs.example(), {str(target)!r})\n"
        "except WriteFailed as e:\n"
        "    print('REFUSED', e.errno, e.target)\n"
    )
    assert result.returncode == 0, result.stderr
    refused = result.stdout.strip().splitlines()[-1].split(" ", 2)
    assert refused[0] == "REFUSED"
    assert int(refused[1]) == 13  # EACCES
    assert Path(refused[2]) == target
    assert list(parent.iterdir()) == []  # nothing published, no staging left


def test_overwrite_without_permission_keeps_the_old_directory(tmp_path):
    parent = tmp_path / "locked"
    parent.mkdir()
    target = parent / "slide"
    old = cs.example(seed=1)
    cs.write(old, target)
    hand_to_nobody(parent, 0o755)
    result = run_without_override(
        "import cellspec_sc as cs\n"
        "from cellspec_sc.errors import WriteFailed\n"
        "try:\n"
        f"    cs.write(cs.example(seed=2), {str(target)!r}, overwrite=True)\n"
        "except WriteFailed as e:\n"
        "    print('REFUSED', e.errno)\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("REFUSED 13")
    assert sorted(p.name for p in parent.iterdir()) == ["slide"]
    assert cs.read(target).equals(old)


def test_read_of_a_file_without_read_permission_names_the_file(tmp_path):
    target = tmp_path / "slide"
    cs.write(cs.example(), target)
    locked = target / "cellspec.json"
    hand_to_nobody(locked, 0o000)
    result = run_without_override(
        "import cellspec_sc as cs\n"
        "from cellspec_sc.io._refusals import UnreadableFile\n"
        "try:\n"
        f"    cs.read({str(target)!r})\n"
        "except UnreadableFile as e:\n"
        "    print('REFUSED', e)\n"
    )
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("REFUSED"), result.stdout
    assert "cellspec.json" in last and "Permission denied" in last


def test_cli_validate_without_read_permission_is_one_line_exit_2(tmp_path):
    """Exit 2 is the CLI's code for input it could not read (1 is reserved for an invalid object)."""
    target = tmp_path / "slide"
    cs.write(cs.example(), target)
    hand_to_nobody(target / "cells.parquet", 0o000)
    result = run_without_override(
        "import sys\nfrom cellspec_sc.cli.main import main\n"
        f"sys.exit(main(['validate', {str(target)!r}]))\n"
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    message = result.stderr.strip().splitlines()
    assert len(message) == 1 and "Traceback" not in result.stderr
    assert "cells.parquet: Permission denied" in message[0] and "[rule: " in message[0]
