"""A pilot sweep for the budget advisor (``basevolve advise --pilot``).

When a store cannot carry advice (:mod:`.advise`), the cheapest way to estimate the
depth-breadth surface is a small sweep: a few small budgets, every power-of-2 depth
T in {1, 2, ..., C_b} at each, and a few seeds.  Eq. 2 has four coefficients, so three
budgets give 4 + 5 + 6 = 15 cells at C_b = 8, 16, 32 (the cells of one budget alone
cannot separate log T from log N), and three seeds give the capability gate a
permutation test with some power, for 8*4*3 + 16*5*3 + 32*6*3 = 912 calls.

The file is written in the format ``basevolve sweep`` reads (``[sweep]``, optional
``[defaults]`` with the endpoint, and one ``[[grid]]`` block with ``task``, ``model``,
``budget``, ``depth = "powers-of-2"`` and ``seeds``; the tests read it back with
:func:`basevolve.sweep.config.parse_sweep`); the advisor itself only needs the
finished runs in a store.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

DEFAULT_PILOT_BUDGETS: tuple[int, ...] = (8, 16, 32)


def pilot_budgets(budget: int) -> tuple[int, ...]:
    """8, 16, 32 -- capped at C (a pilot should not cost more than the run it plans);
    for C < 8: C's own powers of 2 down to 2."""
    out = tuple(b for b in DEFAULT_PILOT_BUDGETS if b <= budget)
    if len(out) >= 2:
        return out
    return tuple(2**k for k in range(1, int(math.log2(max(budget, 2))) + 1)) or (budget,)


def pilot_calls(budgets: Sequence[int], seeds: int) -> int:
    """LLM calls of the pilot: sum over budgets of C_b x (number of power-of-2 depths) x seeds."""
    return sum(b * (int(math.log2(b)) + 1) * seeds for b in budgets)


def pilot_toml(task: str, model: str, budgets: Sequence[int], seeds: int,
               base_url: str | None = None) -> str:
    """The pilot sweep as TOML text (``basevolve sweep`` format, see the module docstring)."""
    q = json.dumps  # a JSON string is a valid TOML basic string
    lines = [
        f"# Pilot sweep for `basevolve advise` ({task} / {model}): estimates the depth-breadth",
        f"# surface cheaply -- {pilot_calls(budgets, seeds)} LLM calls in all.",
        "# Run: basevolve sweep THIS_FILE --store FILE; then basevolve advise --store FILE ...",
        "[sweep]",
        f"name = {q(f'pilot-{task}-{model}')}",
        "",
    ]
    if base_url:
        lines += ["[defaults]", f"base_url = {q(base_url)}", ""]
    else:
        lines += ["# [defaults]", '# base_url = "http://127.0.0.1:8000/v1"   # your endpoint', ""]
    lines += [
        "[[grid]]",
        f"task = {q(task)}",
        f"model = {q(model)}",
        f"budget = [{', '.join(str(int(b)) for b in budgets)}]",
        'depth = "powers-of-2"',
        f"seeds = {int(seeds)}",
        "",
    ]
    return "\n".join(lines)


__all__ = ["DEFAULT_PILOT_BUDGETS", "pilot_budgets", "pilot_calls", "pilot_toml"]
