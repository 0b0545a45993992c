"""A sweep's grid is bounded and planned lazily (issue 22, item 6; ids: item 10).

``seeds = 100000000`` made ``basevolve sweep --status`` expand 10^8 runs and grow to
20 GB before the kernel killed it.  The grid is now counted from its lists before
anything is expanded and refused above ``max_runs`` (one line, exit 2, store
untouched); the bound is raised with ``max_runs = N`` in ``[sweep]``.  Below it, a run
costs a few hundred bytes once planned instead of a validated config per run.
"""

from __future__ import annotations

import io
import resource
import shutil
import subprocess
import sys
import tomllib
import tracemalloc
from pathlib import Path

import pytest

from basevolve.config import RunConfig, check_run_id
from basevolve.errors import ConfigError
from basevolve.store import RunStore
from basevolve.sweep.config import MAX_RUNS, load_sweep, parse_sweep
from basevolve.sweep.plan import plan
from basevolve.sweep.progress import SweepProgress

EXAMPLE_TASK = Path(__file__).resolve().parents[2] / "examples" / "spread_points.py"


def _sweep(text: str):
    return parse_sweep(tomllib.loads(text), source="t.toml")


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


HUGE = """[defaults]
task = "circle_packing"
model = "test-model"
params = 1e9
base_url = "http://127.0.0.1:9/v1"
seeds = 100000000

[[grid]]
budget = 4
depth = "powers-of-2"
"""


@pytest.mark.parametrize("status", [True, False])
def test_a_huge_grid_is_refused_before_it_is_expanded(tmp_path: Path, status: bool) -> None:
    (tmp_path / "huge.toml").write_text(HUGE, encoding="utf-8")
    store = tmp_path / "s.sqlite"
    RunStore(store).close()  # a real store that must stay as it is
    before = store.read_bytes()
    args = [sys.executable, "-m", "basevolve", "sweep", "huge.toml", "--store", str(store)]
    proc = subprocess.run([*args, *(["--status"] if status else [])], capture_output=True,
                          text=True, cwd=tmp_path, preexec_fn=_limit_memory)
    err = proc.stderr.strip()
    assert proc.returncode == 2, err[-2000:]
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err[-2000:]
    # 10^8 seeds x 3 depths (T = 1, 2, 4 for C = 4), and how to raise the bound
    assert "300,000,000 runs" in err and f"max_runs = {MAX_RUNS:,}" in err
    assert "max_runs = N in [sweep]" in err
    assert store.read_bytes() == before


def test_max_runs_in_the_file_raises_the_bound() -> None:
    grid = '[[grid]]\ntask = "circle_packing"\nbudget = 2\nseeds = 30\n'
    with pytest.raises(ConfigError, match=r"names 30 runs, more than sweep.max_runs = 20"):
        _sweep("[sweep]\nmax_runs = 20\n" + grid)
    assert len(_sweep("[sweep]\nmax_runs = 30\n" + grid).runs) == 30
    for bad in ("0", '"many"', "true"):
        with pytest.raises(ConfigError, match=r"sweep\.max_runs must be an integer >= 1"):
            _sweep(f"[sweep]\nmax_runs = {bad}\n" + grid)


def test_blocks_count_together() -> None:
    block = '[[grid]]\ntask = "circle_packing"\nbudget = 2\nseeds = 15\nmodel = "{m}"\n'
    text = "[sweep]\nmax_runs = 20\n" + block.format(m="a") + block.format(m="b")
    with pytest.raises(ConfigError, match=r"names 30 runs \(grid\[1\] alone: 15\)"):
        _sweep(text)


GRIDS = [
    '[[grid]]\ntask = ["circle_packing", "min_max_distance"]\nbudget = [4, 8, 12]\n'
    'depth = "powers-of-2"\nseeds = 3\n',
    '[[grid]]\ntask = "circle_packing"\nbudget = [8, 16]\nbreadth = [1, 2, 8]\nseed = [4, 9]\n',
    '[[grid]]\ntask = "circle_packing"\nmodel = ["a", "b", "c"]\nbase_url = ["http://x/v1", '
    '"http://y/v1", "http://z/v1"]\nzip = [["model", "base_url"]]\nbudget = [6, 12]\n'
    'depth = ["powers-of-2", 3]\nseeds = 2\n[[grid]]\ntask = "circle_packing"\nbudget = 8\n'
    'allocator = ["ucb", "thompson"]\narms = [2, 4]\n',
]


@pytest.mark.parametrize("grid", GRIDS)
def test_the_count_is_exactly_what_the_grid_expands_to(grid: str) -> None:
    n = len(_sweep(grid).runs)
    assert len(_sweep(f"[sweep]\nmax_runs = {n}\n" + grid).runs) == n
    with pytest.raises(ConfigError, match=f"names {n:,} runs"):
        _sweep(f"[sweep]\nmax_runs = {n - 1}\n" + grid)


def test_a_long_budget_by_depth_product_stops_counting_early() -> None:
    """Budgets x depths are walked (powers-of-2 varies per budget); the walk stops once
    the bound is passed, so the message says "or more" instead of walking 9 million."""
    values = ", ".join(str(c) for c in range(1, 3001))
    text = (f"[sweep]\nmax_runs = 10\n[[grid]]\ntask = \"circle_packing\"\n"
            f"budget = [{values}]\ndepth = [{values}]\n")
    with pytest.raises(ConfigError, match=r"names 11 or more runs, more than"):
        _sweep(text)


# ids an eager expansion (before this change) gave this grid: a rerun must find its runs
IDS_GRID = """[defaults]
task = ["circle_packing", "min_max_distance"]
params = 1e9
seeds = 2
[[grid]]
model = ["qwen3-8b", "Qwen/Qwen3-14B"]
base_url = ["http://a:1/v1", "http://b:2/v1"]
zip = [["model", "base_url"]]
budget = [4, 8]
depth = "powers-of-2"
[[grid]]
model = "qwen3-8b"
budget = 8
allocator = "ucb"
arms = 2
protocol_params = {}
seed = [3, 7]
[[grid]]
model = "qwen3-8b"
budget = 8
breadth = [2, 4]
temperature = 0.7
"""
EAGER_IDS = {
    0: "circle_packing-qwen3-8b-greedy-C4-T1-s0-99815427",
    1: "circle_packing-qwen3-8b-greedy-C4-T2-s0-fc339a79",
    5: "circle_packing-qwen3-8b-greedy-C4-T4-s1-081a6445",
    30: "min_max_distance-qwen3-8b-greedy-C4-T4-s0-47654dfd",
    47: "min_max_distance-Qwen_Qwen3-14B-greedy-C4-T4-s1-2e5fa25e",
    56: "circle_packing-qwen3-8b-greedy+ucb-K2-C8-T8-s3-42073ec7",
    60: "circle_packing-qwen3-8b-greedy-C8-T4-s0-5015c72c",
    67: "min_max_distance-qwen3-8b-greedy-C8-T2-s1-97c857a4",
}


def test_lazy_runs_are_the_eager_runs() -> None:
    s = _sweep(IDS_GRID)
    assert len(s.runs) == 68
    assert {i: s.runs[i].run_id for i in EAGER_IDS} == EAGER_IDS
    ids = [r.run_id for r in s.runs]
    assert len(set(ids)) == len(ids) and ids == [r.run_id for r in s.runs]  # stable order
    for run in s.runs:
        cfg = run.config
        assert (cfg.run_id, cfg.seed) == (run.run_id, cfg.seed)
        assert RunConfig.from_dict(cfg.to_dict()) == cfg  # what a full validation gives
        assert run.cell == next(r.cell for r in s.runs if r.config == cfg)
    assert s.runs[-1].run_id == ids[-1] and [r.run_id for r in s.runs[2:4]] == ids[2:4]
    assert len({r.cell for r in s.runs}) == len(s.runs.templates)


def test_bad_seed_in_a_list_is_refused() -> None:
    with pytest.raises(ConfigError, match="--seed must be between 0 and"):
        _sweep('[[grid]]\ntask = "circle_packing"\nbudget = 2\nseed = [1, -5]\n')


def _held_bytes(seeds: int) -> tuple[int, int]:
    text = ('[defaults]\ntask = "circle_packing"\nmodel = "m"\nparams = 1e9\nbase_url = '
            f'"http://127.0.0.1:9/v1"\nseeds = {seeds}\n[[grid]]\nbudget = 8\n'
            'depth = "powers-of-2"\n')
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        s = _sweep(text)
        planned = plan(s, {})
        progress = SweepProgress(s, stream=io.StringIO(), live=False)
        queue = [p for p in planned if p.action != "done"]
        endpoints = {p.run.endpoint for p in queue}  # what an executor's admission reads
        held = tracemalloc.get_traced_memory()[0] - base
        assert endpoints == {"http://127.0.0.1:9/v1"} and progress.total_calls == 8 * len(s.runs)
        return held, len(s.runs)
    finally:
        tracemalloc.stop()


def test_a_planned_run_costs_hundreds_of_bytes_not_kilobytes() -> None:
    _sweep('[[grid]]\ntask = "circle_packing"\nbudget = 2\n')  # imports, caches
    (small, n_small), (large, n_large) = _held_bytes(500), _held_bytes(3000)
    per_run = (large - small) / (n_large - n_small)
    # an eager expansion kept a validated RunConfig per run: ~1,230 B here, ~10 KB with
    # richer configs; the lazy grid keeps an id, a template index and a seed
    assert per_run < 700, f"{per_run:.0f} bytes per planned run"


def test_sweep_ids_are_safe_file_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(EXAMPLE_TASK, tmp_path / "mytask.py")
    monkeypatch.chdir(tmp_path)
    long_model = "org/" + "m" * 300
    (tmp_path / "s.toml").write_text(
        f'[[grid]]\ntask = "./mytask.py"\nmodel = ["{long_model}", "-x"]\nparams = 1e9\n'
        'budget = 2\nseeds = 2\n', encoding="utf-8")
    s = load_sweep("s.toml")
    ids = [r.run_id for r in s.runs]
    assert len(set(ids)) == len(ids) == 4
    for rid in ids:
        assert check_run_id(rid) == rid
    assert all(rid.startswith("mytask.py-") for rid in ids)
