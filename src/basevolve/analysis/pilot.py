"""A pilot sweep for the budget advisor (``basevolve advise --pilot``).

When a store cannot carry advice (:mod:`.advise`), the cheapest way to estimate the
depth-breadth surface is a small sweep: a few small budgets, every power-of-2 depth
T in {1, 2, ..., C_b} at each, and a few seeds.  Eq. 2 has four coefficients, so three
budgets give 4 + 5 + 6 = 15 cells at C_b = 8, 16, 32 (the cells of one budget alone
cannot separate log T from log N), and three seeds give the capability gate a
permutation test with some power, for 8*4*3 + 16*5*3 + 32*6*3 = 912 calls.

The budgets are 8, 16 and 32 *up to C* (a pilot sweeps no budget larger than the run it
plans: ``--budget 16`` gives 8 and 16); for C < 8 the powers of 2 from 2 to C.
``--pilot-budgets`` chooses others.

The file is written in the format ``basevolve sweep`` reads (``[sweep]``, ``[defaults]``
with the endpoint, and one ``[[grid]]`` block with ``task``, ``model``, ``params`` for a
model outside the catalog, ``budget``, ``depth = "powers-of-2"`` and ``seeds``) and must
run as written (issue 24, item 6): ``basevolve advise --pilot`` refuses, before writing
anything, a model the sweep could not run -- one outside the catalog without
``--params``, or one served over HTTP without ``--base-url``.  The tests write it and run
``basevolve sweep`` on it; the advisor itself only needs the finished runs in a store.
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
               base_url: str | None = None, params: float | None = None) -> str:
    """The pilot sweep as TOML text (``basevolve sweep`` format, see the module docstring).

    ``params``: the model's active parameter count, written for a model outside the
    catalog (the sweep needs it to count FLOPs)."""
    q = json.dumps  # a JSON string is a valid TOML basic string
    lines = [
        f"# Pilot sweep for `basevolve advise` ({task} / {model}): estimates the depth-breadth",
        f"# surface cheaply: budgets {', '.join(str(int(b)) for b in budgets)} x every "
        f"power-of-2 depth x {int(seeds)} seeds = {pilot_calls(budgets, seeds)} LLM calls.",
        "# Run: basevolve sweep THIS_FILE --store FILE; then basevolve advise --store FILE ...",
        "[sweep]",
        f"name = {q(f'pilot-{task}-{model}')}",
        "",
    ]
    if base_url:
        lines += ["[defaults]", f"base_url = {q(base_url)}", ""]
    lines += [
        "[[grid]]",
        f"task = {q(task)}",
        f"model = {q(model)}",
        *([f"params = {float(params)!r}"] if params is not None else []),
        f"budget = [{', '.join(str(int(b)) for b in budgets)}]",
        'depth = "powers-of-2"',
        f"seeds = {int(seeds)}",
        "",
    ]
    return "\n".join(lines)


__all__ = ["DEFAULT_PILOT_BUDGETS", "pilot_budgets", "pilot_calls", "pilot_toml"]
