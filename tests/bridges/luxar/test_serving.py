"""``cellspec view`` and ``cellspec luxar --open`` serve a scene with luxar's viewer and stop it (and its data
server) whenever they are told to end."""

from __future__ import annotations

import contextlib

import luxar
import pytest

import cellspec_sc as cs
from luxar_scenes import ramp_object


def _served_scene(args: list[str], timeout: float = 180.0) -> tuple[dict, str]:
    """Run ``cellspec ARGS`` (which serves a scene) until it says it is serving, return the zarr.json its
    data server answers and what it printed, then stop it."""
    import json
    import os
    import re
    import select
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

    from cellspec_sc.bridges.luxar._viewer import free_port

    data_port = free_port()
    cmd = [sys.executable, "-m", "cellspec_sc.cli.main", *args, "--no-browser", "--port", str(free_port()),
           "--data-port", str(data_port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    printed = ""
    try:
        deadline = time.monotonic() + timeout
        while "serving" not in printed:
            assert time.monotonic() < deadline and proc.poll() is None, f"never served: {printed}"
            if select.select([proc.stdout], [], [], 1.0)[0]:
                printed += proc.stdout.readline().decode()
        source = re.search(r"\?src=(http://127\.0\.0\.1:(\d+)/\S+)", printed)
        assert source and int(source.group(2)) == data_port, printed  # the port bound is the port printed
        with urllib.request.urlopen(f"{source.group(1)}/zarr.json", timeout=10) as r:
            served = json.loads(r.read())
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        printed += proc.communicate(timeout=30)[0].decode()
    return served, printed


def test_cellspec_view_serves_an_existing_scene_without_compiling(tmp_path):
    path = cs.to_luxar(ramp_object([1.0, 2.0]), tmp_path / "s.luxar.zarr")
    before = {p: p.stat().st_mtime_ns for p in path.rglob("*")}
    served, out = _served_scene(["view", str(path)])
    assert served["attributes"]["content_hash"] == luxar.LuxarScene.load(path).root_attrs["content_hash"]
    assert {p: p.stat().st_mtime_ns for p in path.rglob("*")} == before  # nothing rewritten
    assert f"serving {path} at http://127.0.0.1:" in out


def test_cellspec_luxar_open_serves_the_scene_it_just_wrote(tmp_path):
    out_path = tmp_path / "cli.luxar.zarr"
    served, out = _served_scene(["luxar", "example", str(out_path), "--layer", "marker:CD3e", "--open"])
    assert f"wrote {out_path}" in out and f"serving {out_path}" in out
    assert served["attributes"]["content_hash"] == luxar.LuxarScene.load(out_path).root_attrs["content_hash"]


def _children(pid: int) -> list[int]:
    """The direct children of ``pid`` (Linux /proc)."""
    import pathlib

    tasks = pathlib.Path(f"/proc/{pid}/task")
    return [int(c) for t in tasks.glob("*") for c in (t / "children").read_text().split()] if tasks.exists() else []


def _session_alive(group: int) -> bool:
    import os

    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def test_cellspec_view_stops_its_viewer_when_signalled_while_it_prints_the_address(tmp_path, monkeypatch):
    """A SIGTERM that lands after the viewer answered but before serve() waits on it (the test above sends it as
    soon as "serving" is printed) stops the viewer too; before the fix its session kept serving."""
    import os
    import signal
    import socket

    from cellspec_sc.bridges.luxar._viewer import free_port
    from cellspec_sc.cli import _view as view

    path = cs.to_luxar(ramp_object([1.0, 2.0]), tmp_path / "s.luxar.zarr")
    started: list[int] = []

    def print_then_get_terminated(*args, **kwargs):
        started.extend(_children(os.getpid()))
        os.kill(os.getpid(), signal.SIGTERM)  # the handler serve() installed raises at the next bytecode

    monkeypatch.setattr(view, "print", print_then_get_terminated, raising=False)
    data_port = free_port()
    try:
        with pytest.raises(KeyboardInterrupt):
            view.serve(path, data_port=data_port, open_browser=False)
        assert started, "the viewer process was running when the address was printed"
        assert not [pid for pid in started if _session_alive(pid)], "the viewer outlived serve()"
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", data_port)) != 0, "the data server still answers"
    finally:
        for group in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_cellspec_view_stops_its_viewer_when_signalled_during_start_up(tmp_path, signame):
    """A signal that lands while the viewer is still starting (before "serving ...") leaves no viewer process
    and no open port behind (before the fix the viewer, in its own session, kept serving)."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time

    from cellspec_sc.bridges.luxar._viewer import free_port

    path = cs.to_luxar(ramp_object([1.0, 2.0]), tmp_path / "s.luxar.zarr")
    port, data_port = free_port(), free_port()
    cmd = [sys.executable, "-m", "cellspec_sc.cli.main", "view", str(path), "--no-browser", "--port", str(port),
           "--data-port", str(data_port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    viewers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while not (viewers := _children(proc.pid)):  # the luxar viewer has been started, but cannot answer yet
            assert time.monotonic() < deadline and proc.poll() is None, "the viewer never started"
            time.sleep(0.01)
        proc.send_signal(getattr(signal, signame))
        out = proc.communicate(timeout=60)[0].decode()
        leaked = [v for v in viewers if _session_alive(v)]
    finally:
        for group in [proc.pid, *viewers]:  # whatever the outcome, nothing of this test keeps running
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
    assert "serving" not in out and proc.returncode == 2 and "cellspec: error: interrupted" in out, out
    assert viewers and not leaked, f"viewer sessions still running: {leaked}"  # its data server included
    for p in (port, data_port):
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", p)) != 0, f"port {p} still answers"


def test_another_local_process_cannot_read_the_scene_without_the_token(tmp_path):
    """The data server answers only under this start's token and only to loopback Host names; a second local
    process that knows the port gets nothing of the scene."""
    import subprocess
    import sys

    from cellspec_sc.bridges.luxar._viewer import TOKEN_HEADER, LuxarViewer

    path = cs.to_luxar(ramp_object([1.0, 2.0]), tmp_path / "s.luxar.zarr")
    with LuxarViewer(path) as viewer:
        port, token = viewer.data_port, viewer.data.token
        assert viewer.url.endswith(f"?src=http://127.0.0.1:{port}/{token}")
        probe = (
            "import sys, urllib.request, urllib.error\n"
            "def get(url, host=None):\n"
            "    request = urllib.request.Request(url, headers={'Host': host} if host else {})\n"
            "    try:\n"
            "        with urllib.request.urlopen(request, timeout=10) as r:\n"
            "            return f'{r.status} {r.headers.get(\"" + TOKEN_HEADER + "\")}'\n"
            "    except urllib.error.HTTPError as err:\n"
            "        return str(err.code)\n"
            "base = sys.argv[1]\n"
            "print(get(base + '/zarr.json'), get(base + '/x/zarr.json'), get(base + '/' + sys.argv[2] + '/zarr.json',"
            " 'rebound.example:1'), get(base + '/' + sys.argv[2] + '/zarr.json'))\n")
        out = subprocess.run([sys.executable, "-c", probe, f"http://127.0.0.1:{port}", token], capture_output=True,
                             text=True, timeout=60).stdout.split()
        assert out == ["403", "403", "403", "200", token]  # no token, a wrong one, a foreign Host; then the owner


def test_a_data_port_held_by_another_server_is_refused_not_shown(tmp_path):
    import socket

    from cellspec_sc.bridges.luxar._viewer import LuxarViewer

    path = cs.to_luxar(ramp_object([1.0, 2.0]), tmp_path / "s.luxar.zarr")
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        with pytest.raises(cs.CellspecError, match="cannot serve"):
            LuxarViewer(path, data_port=other.getsockname()[1]).start()
