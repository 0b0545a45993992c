"""The sweep's parts on their own: the priority limiter, run locks, the progress display."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
import tomllib

from basevolve.store.run_lock import run_lock
from basevolve.sweep.config import parse_sweep
from basevolve.sweep.limits import PriorityLimiter
from basevolve.sweep.locks import RunLocks, holder
from basevolve.sweep.plan import plan, rounds, width
from basevolve.sweep.progress import SweepProgress


def test_limiter_caps_and_serves_the_best_rank_first():
    async def go() -> tuple[list[int], int]:
        lim = PriorityLimiter(2)
        gate = asyncio.Event()
        order: list[int] = []

        async def call(rank: int, hold: bool) -> None:
            await lim.acquire(rank)
            order.append(rank)
            try:
                if hold:
                    await gate.wait()
            finally:
                await lim.release()

        first = [asyncio.ensure_future(call(9, True)) for _ in range(2)]  # take both slots
        while lim.in_use < 2:
            await asyncio.sleep(0)
        waiting = [asyncio.ensure_future(call(r, False)) for r in (5, 1, 3, 0)]
        while lim.waiting < 4:
            await asyncio.sleep(0)
        waiting[3].cancel()  # a cancelled waiter must not keep a slot
        gate.set()
        await asyncio.gather(*first, *waiting[:3])
        return order, lim.peak

    order, peak = asyncio.run(go())
    assert order == [9, 9, 1, 3, 5]
    assert peak == 2


def test_plan_orders_longest_critical_path_first():
    s = parse_sweep(tomllib.loads(
        '[[grid]]\ntask = "circle_packing"\nbudget = 32\ndepth = "powers-of-2"\n'
        '[[grid]]\ntask = "circle_packing"\nbudget = 32\nallocator = "ucb"\narms = 4\n'),
        source="t")
    p = plan(s, {})
    depths = [(x.run.config.depth, x.run.config.allocator) for x in p]
    assert depths[0] == (32, "single")  # the sequential run starts (and is served) first
    assert [rounds(x.run.config) for x in p] == sorted(
        (rounds(x.run.config) for x in p), reverse=True)
    by = {(x.run.config.depth, x.run.config.allocator): x.run.config for x in p}
    assert width(by[(1, "single")]) == 16  # N = 32, capped by max_in_flight
    assert width(by[(32, "ucb")]) == 16  # K = 4 asynchronous N = 1 arms: max_in_flight
    assert width(by[(32, "ucb")].with_(arm_in_flight=1)) == 4  # one call per arm
    assert all(x.action == "start" for x in p)


def test_run_locks_share_run_lock_convention(tmp_path):
    store = tmp_path / "s.sqlite"
    with RunLocks(store) as locks:
        assert locks.try_lock("a") and locks.try_lock("b")
        # another process sees both runs as driven, and `basevolve run --resume` is refused
        probe = subprocess.run(
            [sys.executable, "-c", "import sys; from basevolve.sweep.locks import holder;"
             f"print(holder({str(store)!r}, 'a'), holder({str(store)!r}, 'c'))"],
            capture_output=True, text=True, check=True)
        pid_a, free_c = probe.stdout.split()
        assert int(pid_a) > 0 and free_c == "None"
        locks.unlock("a")
        with run_lock(store, "a"):  # freed for others; same process may take it again
            pass
    assert holder(store, "b") is None


def test_a_second_process_cannot_take_a_locked_run(tmp_path):
    store = tmp_path / "s.sqlite"
    with RunLocks(store) as locks:
        assert locks.try_lock("r")
        code = ("from basevolve.store.run_lock import run_lock\n"
                f"with run_lock({str(store)!r}, 'r'):\n    pass\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.returncode != 0 and "being driven by another process" in out.stderr


def _sweep():
    return parse_sweep(tomllib.loads(
        '[[grid]]\ntask = "circle_packing"\nbudget = 4\ndepth = [1, 4]\nseeds = 2\n'),
        source="t")


def test_progress_plain_and_live():
    s = _sweep()
    ids = [r.run_id for r in s.runs]
    out = io.StringIO()
    pr = SweepProgress(s, stream=out, every_s=0.0, live=False)
    pr.started_run(ids[0])
    pr.update({"run_id": ids[0], "calls_completed": 2, "flops": 1e12, "best_score": 0.5})
    pr.finished(ids[0], {"calls_completed": 4, "flops": 2e12, "best_score": 0.6})
    pr.failed(ids[1], "boom")
    pr.close()
    text = out.getvalue()
    assert "runs 1/4 done" in text and "calls 4/16" in text and "1 failed" in text
    assert "run " + ids[1] + " failed: boom" in text
    cells = {c["cell"]: c for c in pr.cells()}
    assert set(cells) == {"T=1", "T=4"}  # only the coordinate that varies
    assert max(c["best"] or 0 for c in cells.values()) == 0.6

    live = io.StringIO()
    pl = SweepProgress(s, stream=live, live=True)
    pl.started_run(ids[2])
    pl.update({"run_id": ids[2], "calls_completed": 1, "flops": 0.0, "best_score": 0.25})
    pl.close()
    rendered = live.getvalue()
    assert "best so far" in rendered and "0.2500" in rendered and "T=1" in rendered
