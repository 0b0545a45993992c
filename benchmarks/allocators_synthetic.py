"""Allocators on synthetic bandits: fraction of the budget spent on the best arm.

    python benchmarks/allocators_synthetic.py [--repeats 50] [--budget 512] [--arms 10]
        [--in-flight 1,8] [--allocators all]

Three environments, K arms, C calls (Algorithm 2: K assigned initial pulls, then C - K
allocator decisions; reward = what ``tell`` receives online in ``reward_mode="best"``):

* ``stationary``: reward ~ clip(mu_i + N(0, 0.1), 0, 1); mu_best = 0.7, the other means
  uniform in [0.4, 0.65] (drawn per repeat).  Best arm = argmax mu.
* ``switching``: as stationary for the first half of the calls, then the best arm drops
  to 0.4 and another jumps to 0.8 (Garivier & Moulines' abrupt change).  "On best" counts
  pulls on the arm that is best *at that time*.
* ``rising``: the BaSE situation -- a pull of arm i is its n-th child, fitness
  c_i - (c_i - 0.3) exp(-n / r_i) + N(0, 0.03), and the reward is the arm's running best
  (non-stationary, rested).  One late bloomer (c = 0.9, r = 60) among fast arms
  (c ~ U[0.6, 0.8], r = 10).  Best arm = the late bloomer; "final" = best fitness reached.

``--in-flight M`` keeps M pulls pending (asked, not told; oldest told first), as the
engine does with ``--max-in-flight M``: it exercises each policy's pending-pull rule.
Every (environment, repeat) draws the same instance for every allocator (common random
numbers); the allocator's rng is seeded per repeat.  Prints a markdown table.
"""

from __future__ import annotations

import argparse
import time
from collections import deque

import numpy as np

from basevolve.allocators import ALLOCATORS

ENVS = ("stationary", "switching", "rising")


class Env:
    """One bandit instance; ``pull(arm, t)`` returns the reward, ``best(t)`` the best arm."""

    def __init__(self, kind: str, k: int, budget: int, rng: np.random.Generator) -> None:
        self.kind, self.k, self.budget, self.rng = kind, k, budget, rng
        self.best_arm = int(rng.integers(k))
        self.mu = rng.uniform(0.4, 0.65, k)
        self.mu[self.best_arm] = 0.7
        self.after = self.mu.copy()
        self.switch_to = int((self.best_arm + 1 + rng.integers(k - 1)) % k)
        self.after[self.best_arm], self.after[self.switch_to] = 0.4, 0.8
        self.ceiling = rng.uniform(0.6, 0.8, k)
        self.ceiling[self.best_arm] = 0.9
        self.rate = np.where(np.arange(k) == self.best_arm, 60.0, 10.0)
        self.n = np.zeros(k)
        self.running = np.full(k, 0.3)

    def best(self, t: int) -> int:
        if self.kind == "switching" and t >= self.budget // 2:
            return self.switch_to
        return self.best_arm

    def pull(self, arm: int, t: int) -> float:
        if self.kind == "rising":
            self.n[arm] += 1
            c = self.ceiling[arm]
            child = c - (c - 0.3) * np.exp(-self.n[arm] / self.rate[arm]) + self.rng.normal(0, 0.03)
            self.running[arm] = max(self.running[arm], child)
            return float(self.running[arm])
        mu = self.after if self.kind == "switching" and t >= self.budget // 2 else self.mu
        return float(np.clip(mu[arm] + self.rng.normal(0, 0.1), 0.0, 1.0))


def run_one(name: str, env: Env, k: int, budget: int, in_flight: int, seed: int) -> tuple[float, float]:
    """(fraction of calls on the then-best arm, final best fitness) of one run."""
    alloc = ALLOCATORS.get(name)(n_arms=k, rng=np.random.default_rng(seed), horizon=budget - k)
    pending: deque[tuple[int, int]] = deque()
    on_best = told = 0
    for t in range(budget):
        arm = alloc.assign(t) if t < k else alloc.ask()
        on_best += arm == env.best(t)
        pending.append((arm, t))
        while len(pending) >= in_flight or (t == budget - 1 and pending):
            a, when = pending.popleft()
            alloc.tell(a, env.pull(a, when))
            told += 1
    assert told == budget
    final = float(env.running.max()) if env.kind == "rising" else float("nan")
    return on_best / budget, final


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--budget", type=int, default=512)
    ap.add_argument("--arms", type=int, default=10)
    ap.add_argument("--in-flight", default="1,8")
    ap.add_argument("--allocators", default="all")
    args = ap.parse_args()
    names = ([n for n in ALLOCATORS.names() if n != "single"] if args.allocators == "all"
             else args.allocators.split(","))
    flights = [int(x) for x in args.in_flight.split(",")]
    start = time.perf_counter()
    cols = [f"{e} M={m}" for e in ENVS for m in flights] + [f"rising final M={m}" for m in flights]
    print(f"K={args.arms}, C={args.budget}, R={args.repeats}; fraction of calls on the best arm "
          "(mean over repeats; rising final = best fitness reached, ceiling 0.9)\n")
    print("| allocator | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for name in names:
        frac = {c: [] for c in cols}
        for kind in ENVS:
            for m in flights:
                for r in range(args.repeats):
                    env = Env(kind, args.arms, args.budget, np.random.default_rng([r, ENVS.index(kind)]))
                    f, final = run_one(name, env, args.arms, args.budget, m, seed=r)
                    frac[f"{kind} M={m}"].append(f)
                    if kind == "rising":
                        frac[f"rising final M={m}"].append(final)
        print(f"| {name} | " + " | ".join(f"{np.mean(frac[c]):.3f}" for c in cols) + " |")
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
