"""The two-objective example (issue 36, item 6) end to end on the offline simulator:
``basevolve simulate-server --task examples/pareto_bin_packing/task.py`` as a process of
its own (seeded EVOLVE-block edits), ``basevolve run`` under BaSE with two greedy arms,
the real sandbox and a real SQLite store.  The oracle is the store: exactly C counted
calls, the task's objectives stored with the run, every valid child's vector, every
mutation prompt naming the objectives and its parent's vector, and every parent a member
of its trajectory's Pareto front at the time it was asked (issue 36, item 3).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from basevolve.cli import main
from basevolve.fronts import nondominated_mask
from basevolve.objectives import parse_objectives
from basevolve.testing import LLMTestServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pareto_bin_packing" / "task.py"
BUDGET = 8
OBJS = parse_objectives({"quality": "max", "cpu_ms": "min"})


@contextmanager
def simulate_server(*args: str) -> Iterator[str]:
    """The real command in a process of its own; yields the URL it prints first."""
    proc = subprocess.Popen([sys.executable, "-m", "basevolve.cli.simulate_cmd", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), (url, proc.stderr and proc.stderr.read())
        yield url
    finally:
        proc.kill()
        proc.wait()
        for f in (proc.stdout, proc.stderr):
            if f is not None:
                f.close()


def test_pareto_example_runs_on_the_simulator(tmp_path, capsys):
    store = tmp_path / "s.sqlite"
    with simulate_server("--task", str(EXAMPLE), "--broken-rate", "0.1") as url:
        code = main(["run", "--task", str(EXAMPLE), "--budget", str(BUDGET), "--params", "1e9",
                     "--allocator", "ucb", "--arms", "2", "--max-in-flight", "1",
                     "--seed", "3", "--store", str(store), "--base-url", url,
                     "--out", str(tmp_path / "out"), "--json"])
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    assert json.loads(out.strip().splitlines()[-1])["calls_completed"] == BUDGET
    con = sqlite3.connect(store)
    con.row_factory = sqlite3.Row
    cfg = json.loads(con.execute("SELECT config_json FROM runs").fetchone()[0])
    assert cfg["objectives"] == {"quality": "max", "cpu_ms": "min"}
    assert len(cfg["reference_point"]) == 2
    assert con.execute("SELECT sum(counted) FROM calls").fetchone()[0] == BUDGET
    progs = {r["program_id"]: dict(r) for r in con.execute(
        "SELECT p.program_id, p.valid, p.metrics_json, p.is_initial, c.trajectory, c.seq "
        "FROM programs p LEFT JOIN calls c ON c.call_id = p.call_id")}
    vec = {pid: OBJS.vector(json.loads(p["metrics_json"] or "{}")) if p["valid"] else None
           for pid, p in progs.items()}
    assert all(v is not None for pid, v in vec.items() if progs[pid]["valid"])
    (initial,) = [pid for pid, p in progs.items() if p["is_initial"]]
    calls = con.execute("SELECT seq, trajectory, parent_id, messages_json FROM calls "
                        "WHERE purpose = 'mutation' ORDER BY seq").fetchall()
    assert len(calls) == BUDGET
    for call in calls:
        # what this trajectory had been told when the call was asked (one call in flight)
        seen = [initial] + [pid for pid, p in progs.items() if not p["is_initial"]
                            and p["trajectory"] == call["trajectory"] and p["seq"] < call["seq"]
                            and vec[pid] is not None]
        mask = nondominated_mask([vec[pid] for pid in seen], OBJS)
        front = {pid for pid, on in zip(seen, mask, strict=True) if on}
        assert call["parent_id"] in front, (call["seq"], call["parent_id"], front)
        q, t = vec[call["parent_id"]]
        shown = {"quality": f"quality={q:.6g}", "cpu_ms": f"cpu_ms={t:.6g}"}
        words = {"quality": "quality (higher is better)", "cpu_ms": "cpu_ms (lower is better)"}
        prompt = json.loads(call["messages_json"])[-1]["content"]
        assert prompt.endswith("is progress.")
        # in the run's own order of the objectives (as stored)
        assert f"2 objectives: {', '.join(words[n] for n in cfg['objectives'])}." in prompt
        assert f"objective vector: {', '.join(shown[n] for n in cfg['objectives'])}." in prompt


def test_front_parent_selection_without_objectives_is_one_line_and_nothing_stored(
        tmp_path, capsys):
    store = tmp_path / "s.sqlite"
    with LLMTestServer(["no reply is asked for"]) as srv:
        code = main(["run", "--task", str(ROOT / "examples" / "bin_packing.py"), "--budget",
                     "4", "--protocol", "openevolve", "--protocol-param",
                     "parent_selection=front", "--params", "1e9", "--base-url", srv.base_url,
                     "--store", str(store)])
        assert srv.requests == []
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1] == ("basevolve: error: --protocol-param parent_selection=front for protocol "
                       "'openevolve' needs two or more objectives; add --objectives "
                       "NAME:max,NAME:min or leave parent_selection out")
    assert "Traceback" not in "\n".join(err)
    assert not store.exists()
