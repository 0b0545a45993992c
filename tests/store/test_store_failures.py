"""A damaged store and a full disk: one line, exit 2, nothing lost (issue 22, items 7, 9).

Item 7: a store with flipped bytes in a table, truncated, or not SQLite at all.  Opening
it used to work (the header is fine) and the first query raised ``DatabaseError:
database disk image is malformed`` with a traceback, in every command that reads a
store.  Each command must now say which file is damaged and what to do, in one line,
exit 2, and leave the file byte for byte as it was.

Item 9: the disk fills up while a run writes its store.  This used to end in an
``OperationalError`` traceback (then "cannot rollback - no transaction is active").
The run must stop with one line naming the store and the resume command, keep every
row stored before, and ``--resume`` must finish it to exactly C calls once there is
space.  The full disk is real: a 1 MiB tmpfs mounted for the test (needs root, which
CI has; elsewhere the test is skipped and says why).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from basevolve.cli import main
from basevolve.store.failures import kind_of, store_failure
from basevolve.testing import LLMTestServer

RUN_ID = "r1"


@pytest.fixture(scope="module")
def good_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real store with one finished greedy N=1 run (as replay and advise read it)."""
    root = tmp_path_factory.mktemp("good")
    store = root / "good.sqlite"
    with LLMTestServer(latency_s=0.0) as srv:
        code = main(["run", "--task", "min_max_distance", "--budget", "4", "--depth", "4",
                     "--params", "1e9", "--base-url", srv.base_url, "--store", str(store),
                     "--run-id", RUN_ID, "--out", str(root / "out")])
    assert code == 0
    return store


def _root_page(store: Path, table: str) -> int:
    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return con.execute("SELECT rootpage FROM sqlite_master WHERE name=?",
                           (table,)).fetchone()[0]
    finally:
        con.close()


def _damaged(good: Path, folder: Path, how: str) -> Path:
    data = bytearray(good.read_bytes())
    page = 4096
    if how.startswith("flipped:"):  # every byte of one table's root page inverted
        start = (_root_page(good, how.split(":", 1)[1]) - 1) * page
        data[start:start + page] = bytes(b ^ 0xA5 for b in data[start:start + page])
    elif how == "truncated_half":
        data = data[:len(data) // 2]
    elif how == "truncated_header":
        data = data[:100]
    elif how == "not_sqlite":
        data = bytearray(b"just some text, not a database\n" * 200)
    path = folder / f"{how.replace(':', '_')}.sqlite"
    path.write_bytes(bytes(data))
    return path


COMMANDS = {
    "runs": ["runs"],
    "runs_json": ["runs", "--json"],
    "export": ["export", "--out", "{tmp}/export"],
    "export_analysis": ["export", "--for-analysis", "--out", "{tmp}/tidy"],
    "analyze": ["analyze", "--resamples", "20", "--shuffles", "20", "--gate-shuffles", "20"],
    "report": ["report", "--out", "{tmp}/report", "--resamples", "20", "--shuffles", "20",
               "--gate-shuffles", "20"],
    "replay": ["replay", "--task", "min_max_distance", "--arms", "2", "--budget", "6",
               "--repeats", "2"],
    "advise": ["advise", "--task", "min_max_distance", "--model", "test-model", "--budget",
               "8", "--repeats", "2"],
    "resume": ["run", "--resume", RUN_ID, "--out", "{tmp}/out"],
    "sweep_status": ["sweep", "{tmp}/sweep.toml", "--status"],
    "sweep": ["sweep", "{tmp}/sweep.toml"],
}
DAMAGE = ["flipped:runs", "flipped:calls", "flipped:programs", "truncated_half",
          "truncated_header", "not_sqlite"]
SWEEP = """[[grid]]
task = "min_max_distance"
model = "test-model"
params = 1e9
base_url = "http://127.0.0.1:9/v1"
budget = 4
"""


@pytest.mark.parametrize("how", DAMAGE)
def test_every_reading_command_refuses_a_damaged_store(good_store: Path, tmp_path: Path,
                                                       capsys, how: str) -> None:
    store = _damaged(good_store, tmp_path, how)
    before = store.read_bytes()
    (tmp_path / "sweep.toml").write_text(SWEEP, encoding="utf-8")
    for name, args in COMMANDS.items():
        argv = [a.replace("{tmp}", str(tmp_path)) for a in args] + ["--store", str(store)]
        code = main(argv)
        captured = capsys.readouterr()
        err = captured.err.strip()
        assert code == 2, f"{name}: exit {code}, {err[-500:]}"
        assert len(err.splitlines()) == 1 and "Traceback" not in err, f"{name}: {err}"
        assert str(store) in err, f"{name}: {err}"
        assert store.read_bytes() == before, f"{name} changed the damaged store"
        assert not (tmp_path / "out" / "best_program.py").exists()


@pytest.mark.parametrize("how", ["truncated_half", "truncated_header", "not_sqlite"])
def test_the_dashboard_refuses_a_store_it_cannot_open(good_store: Path, tmp_path: Path,
                                                      how: str) -> None:
    """A store damaged where the dashboard looks first (its header and schema) is refused
    before it serves; damage inside a table shows on the pages (the dashboard's own
    tests)."""
    store = _damaged(good_store, tmp_path, how)
    before = store.read_bytes()
    proc = subprocess.run([sys.executable, "-m", "basevolve", "dashboard", "--store",
                           str(store), "--port", "0"], capture_output=True, text=True,
                          timeout=300)  # a fail-safe only: a refusal takes seconds
    err = proc.stderr.strip()
    assert proc.returncode == 2 and len(err.splitlines()) == 1 and str(store) in err, err
    assert store.read_bytes() == before


def test_a_damaged_table_is_named_damaged_with_a_way_out(good_store: Path, tmp_path: Path,
                                                         capsys) -> None:
    store = _damaged(good_store, tmp_path, "flipped:calls")
    assert main(["export", "--store", str(store), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "is damaged" in err and ".recover" in err and "malformed" in err


@contextmanager
def _tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A real filesystem of ``size`` at ``path`` (root only), unmounted afterwards."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a full disk needs a small tmpfs, and mounting one needs root "
                    "(CI runs the suite as root)")
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); the disk-full "
                    "test needs one")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "basevolve", *args], capture_output=True,
                          text=True)


def _answered(store: Path) -> dict[int, tuple[str, int]]:
    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {r[0]: (r[1], r[2]) for r in con.execute(
            "SELECT call_index, raw_text, counted FROM calls WHERE run_id=? AND status='ok'",
            (RUN_ID,))}
    finally:
        con.close()


def test_a_full_disk_stops_the_run_with_one_line_and_resume_finishes_it(tmp_path: Path) -> None:
    budget = 40
    with _tmpfs(tmp_path / "disk", "1m") as disk, LLMTestServer(latency_s=0.0) as srv:
        store = disk / "s.sqlite"
        out = tmp_path / "out"  # the outputs live elsewhere: only the store's disk fills
        proc = _cli("run", "--task", "min_max_distance", "--budget", str(budget), "--depth",
                    "10", "--params", "1e9", "--base-url", srv.base_url, "--store",
                    str(store), "--run-id", RUN_ID, "--out", str(out))
        err = proc.stderr.strip().splitlines()
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr
        last = err[-1]  # before it: the run's start line and the final progress line
        assert last.startswith("basevolve: error: the disk holding store ")
        assert str(store) in last and "nothing already stored was lost" in last
        assert f"basevolve run --resume {RUN_ID} --store {store}" in last
        assert not any("error" in line for line in err[:-1])
        before = _answered(store)
        assert 0 < len(before) < budget, "the disk should fill in the middle of the run"

        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)  # free space
        proc = _cli("run", "--resume", RUN_ID, "--store", str(store), "--out", str(out),
                    "--json")
        assert proc.returncode == 0, proc.stderr[-3000:]
        summary = json.loads(proc.stdout.strip().splitlines()[-1])
        assert summary["status"] == "finished" and summary["calls_completed"] == budget
        after = _answered(store)
        assert sum(counted for _, counted in after.values()) == budget  # exactly C
        assert {i: after[i] for i in before} == before  # nothing stored was lost or rewritten


@pytest.mark.parametrize(("exc", "kind"), [
    (sqlite3.OperationalError("database or disk is full"), "full"),
    (sqlite3.DatabaseError("database disk image is malformed"), "damaged"),
    (sqlite3.DatabaseError("file is not a database"), "damaged"),
    (sqlite3.OperationalError("disk I/O error"), "io"),
    (sqlite3.OperationalError("attempt to write a readonly database"), "readonly"),
    (sqlite3.OperationalError("database is locked"), "busy"),
    (OSError(28, "No space left on device", "/x/y.csv"), "full"),
    (sqlite3.OperationalError("no such table: nope"), "other"),
])
def test_each_failure_kind_has_its_own_one_line_advice(exc: Exception, kind: str) -> None:
    assert kind_of(exc) == kind
    message = str(store_failure(exc, "s.sqlite", run_id="r"))
    assert "\n" not in message
    if kind == "full":
        assert "--resume r" in message or "/x/y.csv" in message
