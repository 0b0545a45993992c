"""Ray clusters started as the docs say are authenticated; an open one is named (issue 22, 15).

Real clusters from the real ``ray`` command, as two nodes on 127.0.0.1 (``ray start
--head`` and ``ray start --address``), each stopped in a ``finally`` (SIGINT to its
``ray start --block``, which takes its processes down with it; nothing else on the
machine is touched: no ``ray stop``).  The driver is the real ``basevolve sweep``
command in its own process, with the environment a user would have:

* the documented commands (docs/sweeps.md: ``export RAY_AUTH_MODE=token``, ``ray
  get-auth-token --generate``, ``ray start --head``, ``ray start --address``; HOME is a
  temporary folder shared by both nodes and the driver, so the token file is the same
  one, as after copying it, and the real ``~/.ray`` is never read or written) give a
  cluster that refuses a driver without the token -- one line, exit 2, before any
  retrying -- and runs the sweep on both nodes for a driver with it, without a warning;
* the old commands (plain ``ray start --head``, no token anywhere) give an open cluster,
  and the sweep says so on stderr.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from _sweep_helpers import ledger, write_grid

from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply

pytest.importorskip("ray")
pytestmark = pytest.mark.slow

RAY = str(Path(sys.executable).with_name("ray"))
GRID = """\
[sweep]
name = "auth"

[[endpoints]]
base_url = "{url}"
limit = 4

[defaults]
task = "circle_packing"
model = "test-model"
params = 1e9
base_url = "{url}"
seeds = 4

[[grid]]
budget = 2
depth = 1
"""
WARNING = "has no authentication"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _head(port: int, temp: Path) -> list[str]:
    """``ray start --head --port PORT`` as documented, plus what lets two nodes share
    127.0.0.1 with any other Ray on this machine: their own ports and a short temp dir
    (a socket path must fit in 107 bytes)."""
    return ["--head", "--port", str(port), "--node-ip-address", "127.0.0.1", "--num-cpus",
            "1", "--include-dashboard", "false", "--temp-dir", str(temp),
            "--dashboard-agent-listen-port", str(_free_port())]


def _worker(port: int) -> list[str]:
    """``ray start --address 127.0.0.1:PORT`` as documented, on its own agent port."""
    return ["--address", f"127.0.0.1:{port}", "--node-ip-address", "127.0.0.1", "--num-cpus",
            "1", "--dashboard-agent-listen-port", str(_free_port())]


@pytest.fixture()
def temp():
    """A short folder for Ray's sockets, removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="bvray-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _env(home: Path, **extra: str) -> dict[str, str]:
    """The user's environment without any Ray authentication setting, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(HOME=str(home), **extra)
    return env


class Node:
    """``ray start ... --block`` in the background; ``stop`` takes its processes down."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        with open(log, "w") as out:
            self.proc = subprocess.Popen([RAY, "start", *args, "--block"], env=env,
                                         stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while "Ray runtime started" not in log.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"ray start failed:\n{log.read_text()[-2000:]}")
            time.sleep(0.2)

    def stop(self) -> None:
        for sig, wait_s in ((signal.SIGINT, 60), (signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            if self.proc.poll() is not None:
                return
            self.proc.send_signal(sig)
            try:
                self.proc.wait(wait_s)
            except subprocess.TimeoutExpired:
                continue


def _sweep(toml: Path, db: Path, port: int, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "basevolve", "sweep", str(toml), "--store", str(db),
         "--executor", "ray", "--address", f"127.0.0.1:{port}", "--json"],
        env=env, capture_output=True, text=True, timeout=600, cwd=toml.parent)


def test_documented_commands_give_an_authenticated_two_node_cluster(tmp_path, temp):
    home = tmp_path / "home"
    home.mkdir()
    auth = _env(home, RAY_AUTH_MODE="token")  # `export RAY_AUTH_MODE=token`
    made = subprocess.run([RAY, "get-auth-token", "--generate"], env=auth, capture_output=True,
                          text=True, timeout=120)
    assert made.returncode == 0 and (home / ".ray" / "auth_token").read_text() == made.stdout
    port = _free_port()
    nodes: list[Node] = []
    with LLMTestServer(seeded_packing_reply, latency_s=0.2) as srv:
        toml = write_grid(tmp_path / "auth.toml", srv.base_url, GRID)
        db = tmp_path / "auth.sqlite"
        try:
            nodes.append(Node(_head(port, temp), auth, tmp_path / "head.log"))
            nodes.append(Node(_worker(port), auth, tmp_path / "worker.log"))
            assert "Token authentication is disabled" not in (tmp_path / "head.log").read_text()

            stranger = _sweep(toml, db, port, _env(home))  # no RAY_AUTH_MODE, no token
            assert stranger.returncode == 2, stranger.stderr
            lines = stranger.stderr.strip().splitlines()
            assert len(lines) == 1 and "RAY_AUTH_MODE=token" in lines[0], stranger.stderr
            assert "Traceback" not in stranger.stderr and not db.exists()

            ok = _sweep(toml, db, port, auth)
            assert ok.returncode == 0, ok.stderr[-3000:]
            assert WARNING not in ok.stderr and "could not check" not in ok.stderr
        finally:
            for node in reversed(nodes):
                node.stop()
    assert json.loads(ok.stdout.strip().splitlines()[-1])["finished"] == 4
    book = ledger(db)
    assert len(book) == 4 and all(r["counted"] == 2 for r in book.values())
    con = sqlite3.connect(db)
    used = {json.loads(s)["node"] for (s,) in con.execute("SELECT summary_json FROM run_summary")}
    con.close()
    assert used == {0, 1}  # both nodes ran runs


def test_an_open_cluster_is_named_on_stderr(tmp_path, temp):
    home = tmp_path / "home"
    home.mkdir()
    plain = _env(home)  # the old README: no token anywhere
    port = _free_port()
    node = None
    grid = GRID.replace("seeds = 4", "seeds = 1")
    with LLMTestServer(seeded_packing_reply) as srv:
        toml = write_grid(tmp_path / "open.toml", srv.base_url, grid)
        db = tmp_path / "open.sqlite"
        try:
            node = Node(_head(port, temp), plain, tmp_path / "head.log")
            assert "Token authentication is disabled" in (tmp_path / "head.log").read_text()
            done = _sweep(toml, db, port, plain)
        finally:
            if node is not None:
                node.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    warned = [line for line in done.stderr.splitlines() if WARNING in line]
    assert len(warned) == 1 and f":{port}" in warned[0] and "RAY_AUTH_MODE=token" in warned[0]
    assert ledger(db)[next(iter(ledger(db)))]["counted"] == 2
