"""basevolve.run / resume / RunResult against the real test server, sandbox and store,
outside and inside a running event loop (Jupyter runs every cell inside one)."""

from __future__ import annotations

import asyncio
import os
import sqlite3

import pytest

import basevolve
from basevolve.store.export import TRAJECTORY_COLUMNS
from basevolve.testing import LLMTestServer

TASK = "min_max_distance"
#: Fields `basevolve run --json` prints (tests/cli/test_run_cli.py REQUIRED).
JSON_FIELDS = {"run_id", "task", "budget", "depth", "breadth", "calls_completed", "calls_lost",
               "best_score", "flops", "prompt_tokens", "cached_tokens", "completion_tokens",
               "store", "allocator", "arms", "pulls_per_arm", "best_arm"}


class Distinct(basevolve.Task):
    """A task defined in code (the Task docstring's example): distinct small integers.

    ``score_value`` records the pid it runs in and the pid the program reported, so the
    test can check the trusted/untrusted split: the program runs in another process (the
    sandbox), the scorer in this one.
    """

    name = "distinct_ints"
    entry = "solve"
    timeout_s = 10.0
    initial_program = ("import os\n# EVOLVE-BLOCK-START\ndef solve():\n"
                       "    return {'xs': [1, 2, 3], 'pid': os.getpid()}\n# EVOLVE-BLOCK-END\n")
    system_message = "Return a dict with a list 'xs' of at most 10 distinct small integers."

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []  # (scorer pid, program pid)

    def score_value(self, value, *, tol=1e-6):
        self.seen.append((os.getpid(), int(value["pid"])))
        xs = value["xs"]
        ok = isinstance(xs, list) and len(xs) <= 10
        return basevolve.ScoreResult(score=len(set(xs)) / 10 if ok else 0.0, valid=ok)


@pytest.fixture()
def server():
    # a catalog model: basevolve.run(base_url=...) uses the model the server lists, as
    # `basevolve run --base-url` does (issue 24, item 1)
    with LLMTestServer(latency_s=0.01, model_ids=["Qwen/Qwen3-1.7B"]) as srv:
        yield srv


def _ledger(store, run_id) -> tuple[int, str]:
    con = sqlite3.connect(store)
    try:
        counted = con.execute("SELECT sum(counted) FROM calls WHERE run_id=?", (run_id,)).fetchone()[0]
        status = con.execute("SELECT status FROM runs WHERE run_id=?", (run_id,)).fetchone()[0]
        return counted, status
    finally:
        con.close()


def _check_result(r: basevolve.RunResult, budget: int) -> None:
    assert r.status == "finished" and r.calls_completed == budget
    assert JSON_FIELDS <= r.to_dict().keys() and "best_code" not in r.to_dict()
    traj = r.trajectories()
    assert list(traj.columns) == TRAJECTORY_COLUMNS
    assert len(traj) == budget and traj["best_fitness"].is_monotonic_increasing
    assert traj["best_fitness"].iloc[-1] == pytest.approx(r.best_score)
    assert traj["cumulative_flops"].iloc[-1] == pytest.approx(r.flops)
    calls = r.calls()
    assert int(calls["counted"].sum()) == budget
    assert int(calls["prompt_tokens"].sum()) == r.prompt_tokens
    assert r.best_code is not None and r.best_code in set(r.programs()["code"])


def test_run_greedy_outside_a_loop(server, tmp_path):
    store = tmp_path / "s.sqlite"
    r = basevolve.run(task=TASK, budget=4, depth=2, base_url=server.base_url, store=store,
                      run_id="g", out=tmp_path / "out", progress=False)
    _check_result(r, 4)
    assert len(server.requests) == 4 and (r.summary["depth"], r.summary["breadth"]) == (2, 2)
    assert r.best_program == str(tmp_path / "out" / "best_program.py")
    assert _ledger(store, "g") == (4, "finished")
    assert "best score" in str(r)  # the CLI's summary table


def test_sync_run_and_async_twin_inside_a_running_loop(server, tmp_path):
    """The Jupyter case: asyncio.run would refuse here; the API runs the engine in a
    worker thread (sync form) or awaits it in one (async form)."""
    store = tmp_path / "s.sqlite"

    async def cell():
        assert asyncio.get_running_loop().is_running()
        a = basevolve.run(TASK, 4, breadth=2, allocator="ucb", arms=2,
                          base_url=server.base_url, store=store, run_id="sync", progress=False)
        ticks = []
        b = await basevolve.run_async(TASK, 3, base_url=server.base_url, store=store,
                                      run_id="async", progress=ticks.append)
        return a, b, ticks

    a, b, ticks = asyncio.run(cell())
    _check_result(a, 4)
    _check_result(b, 3)
    assert a.summary["arms"] == 2 and sum(a.summary["calls_per_arm"]) == 4
    assert [t["calls_completed"] for t in ticks][-1] == 3
    assert len(server.requests) == 7


@pytest.mark.parametrize("in_loop", [False, True])
def test_task_defined_in_code(server, tmp_path, in_loop):
    task = Distinct()

    def go():
        return basevolve.run(task=task, budget=3, base_url=server.base_url,
                             store=tmp_path / "s.sqlite", run_id="t", progress=False)

    async def cell():
        return go()

    r = asyncio.run(cell()) if in_loop else go()
    _check_result(r, 3)
    assert r.task == "distinct_ints" and r.best_score == pytest.approx(0.3)
    # scorer ran here; every program (initial + 3 children) ran in another process
    assert len(task.seen) >= 4
    assert all(scorer == os.getpid() and program != os.getpid() for scorer, program in task.seen)


def test_resume_after_an_interruption(server, tmp_path):
    """A KeyboardInterrupt mid-run (the notebook's stop button) leaves the run
    `interrupted`; resume() finishes it with exactly C charged calls."""
    store = tmp_path / "s.sqlite"

    def stop_after_two(snapshot):
        if snapshot["calls_completed"] >= 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as info:
        basevolve.run(TASK, 6, depth=3, base_url=server.base_url, store=store,
                      run_id="cut", max_in_flight=2, progress=stop_after_two)
    assert "basevolve.resume('cut'" in "".join(getattr(info.value, "__notes__", []))
    counted, status = _ledger(store, "cut")
    assert status == "interrupted" and 2 <= counted < 6
    r = basevolve.resume("cut", store=store, progress=False)
    assert r.resumed
    _check_result(r, 6)
    assert _ledger(store, "cut") == (6, "finished")
    again = basevolve.resume("cut", store=store, progress=False)  # finished: spends nothing
    assert not again.resumed and again.best_score == r.best_score
    assert len(server.requests) == 6 + r.calls_lost  # every lost call re-issued once


def test_cancelling_run_async_interrupts_and_resume_async_finishes(server, tmp_path):
    store = tmp_path / "s.sqlite"
    task = Distinct()

    async def cell():
        reached = asyncio.Event()
        loop = asyncio.get_running_loop()

        def tick(snapshot):
            if snapshot["calls_completed"] >= 2:
                loop.call_soon_threadsafe(reached.set)

        job = asyncio.create_task(basevolve.run_async(
            task, 8, base_url=server.base_url, store=store, run_id="c", max_in_flight=1,
            progress=tick))
        await reached.wait()
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job
        interrupted = _ledger(store, "c")
        with pytest.raises(basevolve.TaskError, match="pass the same task again"):
            await basevolve.resume_async("c", store=store)
        return interrupted, await basevolve.resume_async("c", store=store, task=task)

    (counted, status), r = asyncio.run(cell())
    assert status == "interrupted" and 2 <= counted < 8
    _check_result(r, 8)
    assert r.resumed and _ledger(store, "c") == (8, "finished")


def test_interrupting_a_blocking_run_inside_a_loop_stops_it(tmp_path, sigint_handled):
    """The kernel's interrupt (SIGINT -> KeyboardInterrupt in the main thread) while a
    notebook cell waits on basevolve.run: the worker-thread run stops at its next call,
    is stored as interrupted, and the cell gets the KeyboardInterrupt.

    The server answers after 0.2 s: the waiting cell sees the interrupt within one 0.25 s
    wait, so the 6 calls left (>= 1.2 s) cannot all finish first, however fast the box."""
    import _thread

    store = tmp_path / "s.sqlite"
    fired: list[int] = []

    def tick(snapshot):
        if snapshot["calls_completed"] >= 2 and not fired:
            fired.append(1)
            _thread.interrupt_main()  # what ipykernel's SIGINT does to the waiting cell

    async def cell(url):
        basevolve.run(TASK, 8, base_url=url, store=store, run_id="k", max_in_flight=1,
                      progress=tick)

    with LLMTestServer(latency_s=0.2, model_ids=["Qwen/Qwen3-1.7B"]) as server:
        loop = asyncio.new_event_loop()  # no asyncio.Runner: its SIGINT handler is not Jupyter's
        try:
            with pytest.raises(KeyboardInterrupt):
                loop.run_until_complete(cell(server.base_url))
        finally:
            loop.close()
        counted, status = _ledger(store, "k")
        assert status == "interrupted" and 2 <= counted < 8
        assert basevolve.resume("k", store=store, progress=False).calls_completed == 8
