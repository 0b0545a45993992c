"""A Ray sweep whose actors are killed mid-sweep degrades, it does not crash (issue 22, 14).

A real local cluster (``ray.init(num_cpus=2)``), the real executor and a real
``ray.kill`` of the endpoint's limiter actor or of the node runner while runs are in
flight.  Before, the driver crashed (``ActorDiedError``, then ``ValueError: force=True
is not supported for actor tasks``).  Now the runs the dead actor was serving end
"lost ... rerun to retry", the others finish on its replacement, and a rerun finishes
every run with exactly C calls.

The endpoint allows one call at a time, so runs are admitted a few at a time and some
start only after the kill.
"""

from __future__ import annotations

import threading
import time

import pytest
from _sweep_helpers import ledger, write_grid

from basevolve.sweep import run_sweep
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

GRID = """\
[sweep]
name = "faults"

[[endpoints]]
base_url = "{url}"
limit = 1

[defaults]
task = "circle_packing"
model = "test-model"
params = 1e9
base_url = "{url}"
seeds = 6

[[grid]]
budget = 3
depth = 3
"""
RUNS, C = 6, 3


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def _actor(kind: str) -> str:
    """The name of the sweep's live ``runner`` or ``limiter`` actor (ray_fleet names)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        names = [n for n in ray.util.list_named_actors() if n.startswith("basevolve-faults-")
                 and f"-{kind}-" in n]
        if names:
            return sorted(names)[-1]
        time.sleep(0.1)
    raise AssertionError(f"no {kind} actor appeared")


def _sweep_killing(tmp_path, kind: str) -> tuple[dict, dict, str]:
    """Run the sweep in a thread; kill the ``kind`` actor once 2 calls were answered."""
    db, scratch = tmp_path / "sweep.sqlite", tmp_path / "scratch"
    result: dict = {}
    with LLMTestServer(seeded_packing_reply, latency_s=0.3) as srv:
        toml = write_grid(tmp_path / "sweep.toml", srv.base_url, GRID)

        def drive() -> None:
            try:
                result["res"] = run_sweep(toml, db, executor="ray", live=False,
                                          scratch_dir=scratch)
            except BaseException as exc:  # the assertion below shows it
                result["error"] = exc

        worker = threading.Thread(target=drive, daemon=True)
        worker.start()
        name = _actor(kind)
        deadline = time.monotonic() + 300
        while len(srv.requests) < 2 and worker.is_alive():
            assert time.monotonic() < deadline, "the sweep never got going"
            time.sleep(0.05)
        ray.kill(ray.get_actor(name), no_restart=True)
        worker.join(600)
        assert not worker.is_alive(), "the driver hung after the kill"
        assert "error" not in result, f"the driver crashed: {result.get('error')!r}"
        first = result["res"].outcomes
        again = run_sweep(toml, db, executor="ray", live=False, scratch_dir=scratch)
    return first, again.outcomes, name


def _check(first: dict, again: dict, db) -> None:
    lost = {rid: o for rid, o in first.items() if o["status"] != "finished"}
    finished = [rid for rid, o in first.items() if o["status"] == "finished"]
    assert len(first) == RUNS and lost and finished, first
    for o in lost.values():
        assert o["status"] == "lost" and o["error"].endswith("rerun to retry"), o
    assert {o["status"] for o in again.values()} == {"finished"}, again
    book = ledger(db)
    assert len(book) == RUNS
    for rid, row in book.items():
        assert row["status"] == "finished" and row["counted"] == C, (rid, row)


def test_killing_the_limiter_loses_its_runs_only(tmp_path, cluster):
    first, again, name = _sweep_killing(tmp_path, "limiter")
    assert name.endswith("-limiter-0.0")
    _check(first, again, tmp_path / "sweep.sqlite")
    assert any("an actor it used died" in o.get("error", "") for o in first.values())


def test_killing_the_node_runner_loses_its_runs_only(tmp_path, cluster):
    first, again, name = _sweep_killing(tmp_path, "runner")
    assert name.endswith("-runner-0.0")
    _check(first, again, tmp_path / "sweep.sqlite")
    assert any("the node runner died" in o.get("error", "") for o in first.values())
