"""Offline (post-hoc) BaSE replay over logged single-trajectory greedy N = 1 runs.

The paper ran BaSE end to end: Algorithm 2 online, every pull a real LLM call
(Section 5); its BaSE numbers are not a post-hoc replay.  This module is an offline
*estimate* of what BaSE would reach, without any LLM call: K logged single-trajectory
greedy runs of the same task and model become the K arms, and pulling an arm reveals
that run's next logged step, i.e. its running best fitness after one more call.

Why this is a fair stand-in for greedy N = 1 (and only for it): with N = 1 every call is
one generation whose parent is the trajectory's best so far, so a trajectory's state
after n pulls does not depend on when the bandit made them, and a logged run is a sample
of exactly that trajectory.  Logs with N > 1 are **refused**, not replayed per
generation: a step of an N > 1 log is one child of a generation whose parent was frozen
N calls earlier, which no online N = 1 pull produces, and the per-generation analogue
(``--pull generation``, N calls per pull) spends the budget in blocks of N, a different
bandit.  :func:`load_scores` uses the N = 1 runs of a store and reports how many N > 1
runs it left out; it refuses when none is N = 1.

Per repeat r (R repeats, paired across allocators by common random numbers):

1. the arm pool: K of the available runs drawn without replacement with the repeat's
   pool rng (all of them, in a random order, when exactly K exist);
2. Algorithm 2: each arm is pulled once (the K initial calls, ``Allocator.assign``),
   then C - K calls are chosen by the allocator (``ask``/``tell``) with the repeat's
   allocator rng, sequentially (one pull in flight, the sequential algorithm);
3. the reward of a pull is the arm's running best after it (``reward_mode="best"``) or
   its gain over the arm's best before it (``"improvement"``), exactly as online
   (:func:`~basevolve.allocators.pull_reward`): the first pull of an arm gains its best
   after one call minus the *initial program's* score, so improvement replays need the
   runs' initial scores (``initial``; a store provides them).

Exhausted arms: a logged run of length L can be pulled at most L times; once pulled L
times the arm is no longer *eligible* (the allocator's eligible mask), i.e. per-arm
pulls are capped at the logged length.  The budget must fit in every possible pool:
:func:`check_replayable` refuses when the K shortest runs hold fewer than C steps.

Core functions are pure, on a ``(n_runs, n_steps)`` score matrix (NaN after a run's
last logged step) with an explicit ``np.random.Generator``; :func:`load_scores` is the
only reader of the store (``basevolve.store.export``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from basevolve.allocators import ALLOCATORS, Allocator
from basevolve.analysis.stats import describe
from basevolve.errors import ConfigError, StoreError


@dataclass(frozen=True)
class ReplayResult:
    """Outcome of R replayed BaSE runs of one allocator.

    ``finals``: ``(R,)`` final best fitness; ``curves``: ``(R, C)`` running max over all
    arms after each call (call 1..C, the K initial calls included); ``pulls``: ``(R, K)``
    pulls per arm; ``pools``: ``(R, K)`` row indices of the score matrix used as arms.
    """

    allocator: str
    finals: np.ndarray
    curves: np.ndarray
    pulls: np.ndarray
    pools: np.ndarray

    def summary(self, rng: np.random.Generator, reps: int = 1000) -> dict[str, Any]:
        """Mean, IQM, bootstrap 95% CI of the final best, and the mean running-max curve."""
        d = describe(self.finals, rng, reps=reps)
        return {
            "mean": d["mean"], "iqm": d["iqm"], "se": d["se"], "median": d["median"],
            "ci_low": d["ci_low"], "ci_high": d["ci_high"], "repeats": int(self.finals.size),
            "curve": self.curves.mean(axis=0).tolist(),
            "pulls_per_arm": np.sort(self.pulls, axis=1)[:, ::-1].mean(axis=0).tolist(),
        }


def logged_lengths(scores: np.ndarray) -> np.ndarray:
    """Number of logged steps per run: the length of the leading non-NaN prefix."""
    s = _matrix(scores)
    finite = np.isfinite(s)
    return np.where(finite.all(axis=1), s.shape[1], np.argmin(finite, axis=1))


def check_replayable(scores: np.ndarray, arms: int, budget: int) -> None:
    """Refuse (ConfigError) unless every K-run pool can absorb C pulls."""
    if isinstance(arms, bool) or int(arms) < 1:
        raise ConfigError(f"--arms (K) must be >= 1, got {arms}")
    if int(budget) < int(arms):
        raise ConfigError(f"--budget (C) must be >= --arms (K): Algorithm 2 spends K initial "
                          f"calls, got C={budget} < K={arms}")
    lengths = logged_lengths(scores)
    usable = int((lengths > 0).sum())
    if usable < arms:
        raise ConfigError(f"need at least K={arms} logged single-trajectory runs with >= 1 step, "
                          f"found {usable}; log more runs or lower --arms")
    shortest = int(np.sort(lengths[lengths > 0])[:arms].sum())
    if shortest < budget:
        raise ConfigError(f"the {arms} shortest logged runs hold only {shortest} steps < budget "
                          f"C={budget}: an arm pool could be exhausted; lower --budget or log "
                          "longer runs")


def initial_scores(initial: np.ndarray | Sequence[float] | None, n_runs: int,
                   reward_mode: str) -> np.ndarray:
    """The runs' initial-program scores as an ``(n_runs,)`` array (-inf = unknown).

    ``"improvement"`` rewards need them (the first pull gains best - initial, as
    online); ``"best"`` rewards do not, so None is allowed there.
    """
    if initial is None:
        if reward_mode == "improvement":
            raise ConfigError("improvement rewards need the logged runs' initial scores (the "
                              "first pull's reward is best - initial, as online); pass "
                              "initial=..., or replay from a store, which records them")
        return np.full(n_runs, -np.inf)
    init = np.asarray(initial, dtype=float)
    if init.shape != (n_runs,) or not np.isfinite(init).all():
        raise ConfigError(f"initial must hold one finite score per logged run ({n_runs}), "
                          f"got shape {init.shape}")
    return init


def replay_once(scores: np.ndarray, pool: Sequence[int], allocator: str, budget: int,
                rng: np.random.Generator, params: Mapping[str, Any] | None = None,
                reward_mode: str = "best",
                initial: np.ndarray | Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One replayed BaSE run on the arms ``pool`` (row indices); returns (curve (C,), pulls (K,)).

    ``initial``: ``(n_runs,)`` initial-program scores of the rows of ``scores`` (needed
    for ``reward_mode="improvement"``, see the module docstring).
    """
    k = int(np.asarray(pool).size)
    alloc = ALLOCATORS.get(allocator)(n_arms=k, rng=rng, horizon=budget - k,
                                      reward_mode=reward_mode, **dict(params or {}))
    return replay_with(alloc, scores, pool, budget, initial)


def replay_with(alloc: Allocator, scores: np.ndarray, pool: Sequence[int], budget: int,
                initial: np.ndarray | Sequence[float] | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`replay_once` with a ready allocator (its ``reward_mode`` decides the
    rewards); afterwards ``alloc.events`` holds every decision and reward."""
    s = _matrix(scores)
    pool = np.asarray(pool, dtype=int)
    k = pool.size
    if alloc.n_arms != k:
        raise ConfigError(f"the allocator has {alloc.n_arms} arms but the pool {k}")
    lengths = logged_lengths(s)[pool]
    init = initial_scores(initial, s.shape[0], alloc.reward_mode)[pool]
    taken = np.zeros(k, dtype=int)
    best = init.copy()  # a trajectory's best starts at the initial program, as online
    curve = np.empty(budget)

    def pull(arm: int) -> None:
        value = float(s[pool[arm], taken[arm]])
        before = best[arm]
        taken[arm] += 1
        best[arm] = max(best[arm], value)
        alloc.tell(arm, alloc.reward_of(before, best[arm]))

    for call in range(budget):
        if call < k:
            pull(alloc.assign(call))  # Algorithm 2: K initial calls, one per trajectory
        else:
            pull(alloc.ask(taken < lengths))
        curve[call] = best.max()
    return curve, taken


def replay(scores: np.ndarray, allocator: str, arms: int, budget: int, repeats: int,
           seed: int = 0, params: Mapping[str, Any] | None = None,
           reward_mode: str = "best",
           initial: np.ndarray | Sequence[float] | None = None) -> ReplayResult:
    """R replayed BaSE runs; repeat r uses pool rng ``default_rng([seed, r, 0])`` and
    allocator rng ``default_rng([seed, r, 1])`` so allocators see the same pools."""
    s = _matrix(scores)
    check_replayable(s, arms, budget)
    if repeats < 1:
        raise ConfigError(f"--repeats must be >= 1, got {repeats}")
    ALLOCATORS.get(allocator)  # unknown names fail before any work
    initial_scores(initial, s.shape[0], reward_mode)  # refuse before any work
    usable = np.flatnonzero(logged_lengths(s) > 0)
    finals, curves, pulls, pools = [], [], [], []
    for r in range(repeats):
        pool = np.random.default_rng([seed, r, 0]).choice(usable, size=arms, replace=False)
        curve, taken = replay_once(s, pool, allocator, budget, np.random.default_rng([seed, r, 1]),
                                   params, reward_mode, initial)
        finals.append(curve[-1])
        curves.append(curve)
        pulls.append(taken)
        pools.append(pool)
    return ReplayResult(allocator, np.array(finals), np.array(curves), np.array(pulls),
                        np.array(pools))


@dataclass(frozen=True)
class LoggedRuns:
    """The replayable runs of a store (see :func:`load_scores`).

    ``scores[i, j]`` = running best of run i after its (j+1)-th call, NaN past its end;
    ``initial[i]`` its initial program's score; ``left_out`` the number of
    single-trajectory runs with N > 1 that were not used (refused, module docstring).
    """

    run_ids: list[str]
    scores: np.ndarray
    initial: np.ndarray
    model: str
    left_out: int = 0


def load_scores(store_path: str | Path, task: str, model: str | None = None) -> LoggedRuns:
    """The score matrix of a store's single-trajectory greedy N = 1 runs of ``task``.

    Single-trajectory = ``arms`` is NULL or 1.  Runs with breadth N > 1 are left out
    (counted in ``left_out``); a store with only N > 1 runs is refused.
    """
    from basevolve.store import RunStore
    from basevolve.store.export import runs_table, trajectories_table

    if not Path(store_path).exists():
        raise StoreError(f"store {str(store_path)!r} does not exist; pass the file a run wrote")
    runs = runs_table(store_path)
    single = runs["arms"].isna() | (runs["arms"].fillna(1).astype(int) == 1)
    runs = runs[(runs["task"] == task) & single]
    if model is not None:
        runs = runs[runs["model"] == model]
    which = f"task {task!r}" + ("" if model is None else f" and model {model!r}")
    if not len(runs):
        raise StoreError(f"store {str(store_path)!r} has no single-trajectory runs for {which}; "
                         "log greedy N=1 runs first (basevolve run --breadth 1)")
    wide = runs["breadth"].fillna(1).astype(int) > 1
    if wide.all():
        raise ConfigError(f"store {str(store_path)!r} has only runs with breadth N > 1 for "
                          f"{which}; replay reveals one call per pull and is exact only for "
                          "greedy N = 1 logs (an N > 1 step is a child of a frozen parent); "
                          "log greedy N=1 runs (basevolve run --breadth 1)")
    runs = runs[~wide]
    models = sorted(set(runs["model"].dropna()))
    if len(models) > 1:
        raise ConfigError(f"store holds runs of several models for task {task!r} "
                          f"({', '.join(models)}); pick one with --model")
    traj = trajectories_table(store_path)
    traj = traj[traj["run_id"].isin(set(runs["run_id"]))]
    run_ids = [r for r in runs["run_id"] if (traj["run_id"] == r).any()]
    n_steps = int(traj["step"].max()) if len(traj) else 0
    scores = np.full((len(run_ids), max(n_steps, 1)), np.nan)
    for i, rid in enumerate(run_ids):
        g = traj[traj["run_id"] == rid].sort_values("step")
        scores[i, : len(g)] = g["best_fitness"].to_numpy(float)
    with RunStore(store_path, create=False) as store:
        init = {r["run_id"]: float(r["score"]) for r in store.query(
            "SELECT run_id, score FROM programs WHERE is_initial = 1")}
    initial = np.array([init.get(r, 0.0) for r in run_ids])
    return LoggedRuns(run_ids, scores[:, :n_steps] if n_steps else scores[:, :0], initial,
                      models[0] if models else "", int(wide.sum()))


def _matrix(scores: np.ndarray) -> np.ndarray:
    s = np.asarray(scores, dtype=float)
    if s.ndim != 2:
        raise ValueError(f"scores must have shape (n_runs, n_steps), got {s.shape}")
    return s
